package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
)

// TestEvalCountsTheCorpus: eval holds its corpus whole as token ids (two
// bytes a token), which its memory check counts with the model, from the
// file's size: a corpus too large is refused in one line before anything
// is read (exit 2), not read once to be refused (exit 1) or to crash the
// runtime; with room for it the same eval runs.
func TestEvalCountsTheCorpus(t *testing.T) {
	dir := t.TempDir()
	line := "the quick brown fox jumps over the lazy dog\n"
	writeFiles(t, dir, map[string]string{
		"c.txt":   strings.Repeat(line, 200),
		"big.txt": strings.Repeat(line, 2_800_000), // 123 MB: 235 MiB of ids
		"c.toml":  "[data]\npath = \"c.txt\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 4\nmax_steps = 1\neval_batches = 1\nout = \"r\"\n",
	})
	if r := gptg(t, dir, "train", "c.toml", "--quiet"); r.code != 0 {
		t.Fatalf("gptg train c.toml: exit %d: %s", r.code, r.stderr)
	}
	used := addressUsed(t, dir)
	// 200 MiB: the model's 64 MiB and less than the ids.
	limit := used + 200<<10
	r := underVM(t, dir, limit, "eval", "r", "--data", "big.txt", "--split", "0.99999")
	want := "gptg eval: r/model.safetensors: evaluating this model on big.txt (its token ids take 294 MiB) needs about "
	if r.code != 2 || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, fmt.Sprintf("under ulimit -v %d KiB): evaluate on a part of the corpus", limit)) ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("gptg eval --data big.txt under ulimit -v %d (200 MiB of headroom): exit %d, stderr %.600q; want exit 2 and one line %q…",
			limit, r.code, r.stderr, want)
	}
	if r := underVM(t, dir, used+600<<10, "eval", "r", "--data", "big.txt", "--split", "0.99999"); r.code != 0 || !strings.HasPrefix(r.stdout, "test loss ") {
		t.Errorf("gptg eval --data big.txt with 600 MiB of headroom: exit %d, stderr %.600q", r.code, r.stderr)
	}
}

// TestTranslationEvalCountsThePairs: a translation eval reads its run's
// pairs file after the model; it is counted with the model, from the
// size the run recorded, and refused up front when it does not fit,
// instead of halfway through reading it.
func TestTranslationEvalCountsThePairs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"p.tsv":  pairsFile(400_000), // 4.2 MB: 128 MiB counted
		"p.toml": "[data]\nformat = \"pairs\"\npath = \"p.tsv\"\nsplit = 0.99\n[model]\narch = \"encoder-decoder\"\nembedding = 8\nheads = 2\nencoder_blocks = 1\ndecoder_blocks = 1\nff_hidden = 16\n[train]\nbatch = 8\nmax_steps = 1\neval_batches = 1\nout = \"r\"\n",
	})
	if r := gptg(t, dir, "train", "p.toml", "--quiet"); r.code != 0 {
		t.Fatalf("gptg train p.toml: exit %d: %s", r.code, r.stderr)
	}
	used := addressUsed(t, dir)
	limit := used + 100<<10 // eval's check finds about 60 MiB more than graph's
	r := underVM(t, dir, limit, "eval", "r")
	want := "gptg eval: r/model.safetensors: evaluating this model on p.tsv (its pairs take up to "
	if r.code != 2 || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, fmt.Sprintf("under ulimit -v %d KiB): evaluate on fewer pairs", limit)) ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("gptg eval of a translation run under ulimit -v %d (100 MiB of headroom): exit %d, stderr %.600q; want exit 2 and one line %q…",
			limit, r.code, r.stderr, want)
	}
	if r := underVM(t, dir, used+400<<10, "eval", "r"); r.code != 0 || !strings.HasPrefix(r.stdout, "test loss ") {
		t.Errorf("gptg eval of a translation run with 400 MiB of headroom: exit %d, stderr %.600q", r.code, r.stderr)
	}
}

// TestInspectReadsATensorAtATime: inspect prints a model's parameter
// table and checks every value a tensor at a time (the whole model twice,
// the file's tensors and a graph's copy, would take 406 MiB for a 200 MB
// model): a 100 MB model inspects with 150 MiB of headroom, and a damaged
// value is still found.
func TestInspectReadsATensorAtATime(t *testing.T) {
	dir := t.TempDir()
	spec := config.DefaultModel()
	spec.Embedding, spec.Blocks, spec.Heads, spec.Context = 512, 8, 8, 64 // 25M parameters, 101 MB
	spec.Residual, spec.Norm = true, "pre"
	writeGPTModel(t, filepath.Join(dir, "m.safetensors"), spec)
	limit := addressUsed(t, dir) + 150<<10
	r := underVM(t, dir, limit, "inspect", "m.safetensors")
	if r.code != 0 || !strings.Contains(r.stdout, "\ntotal ") {
		t.Fatalf("gptg inspect of a 101 MB model with 150 MiB of headroom: exit %d, stderr %.600q", r.code, r.stderr)
	}
	// A NaN in the last tensor of the file: found as it streams by.
	path := filepath.Join(dir, "m.safetensors")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copy(b[len(b)-4:], []byte{0, 0, 0xc0, 0x7f}) // float32 NaN
	if err := os.WriteFile(filepath.Join(dir, "nan.safetensors"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = underVM(t, dir, limit, "inspect", "nan.safetensors")
	if r.code == 0 || !strings.Contains(r.stderr, "holds NaN at entry") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("gptg inspect of a model with a NaN: exit %d, stderr %.600q; want one line naming the NaN", r.code, r.stderr)
	}
}
