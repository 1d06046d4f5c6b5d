package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/savedmodel"
)

// modelChars are writeGPTModel's vocabulary, in order.
const modelChars = "\n !',.:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// writeGPTModel saves a model of spec with random weights (and the
// characters of testmodel's text as its vocabulary) as path.
func writeGPTModel(t *testing.T, path string, spec config.Model) {
	t.Helper()
	vocab, err := corpus.NewVocab(corpus.Char, strings.Split(modelChars, ""))
	if err != nil {
		t.Fatal(err)
	}
	spec.Vocab = vocab.Size()
	g, err := graph.Build(spec, graph.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := savedmodel.Save(path, spec, vocab, g.Params); err != nil {
		t.Fatal(err)
	}
}

// underAddressLimit runs gptg args in dir under ulimit -v kib and sorts what
// happened: "ok" (exit 0), "refused" (exit 2, one line), "nostart" (the Go
// runtime itself cannot start under so little: gptg version fails too),
// or "crash" with what it printed.
func underAddressLimit(t *testing.T, dir string, kib int64, args ...string) (string, string) {
	t.Helper()
	r := underVM(t, dir, kib, args...)
	switch {
	case r.code == 0:
		return "ok", r.stderr
	case r.code == 2 && strings.Count(strings.TrimSpace(r.stderr), "\n") == 0 && strings.Contains(r.stderr, "may still use"):
		return "refused", r.stderr
	}
	for range 3 { // the runtime's start under ulimit -v ~1.5 GB varies from run to run
		if underVM(t, dir, kib, "version").code != 0 {
			return "nostart", r.stderr
		}
	}
	return "crash", r.stderr
}

// TestModelCommandsUnderAddressLimit: sample, attention, eval and inspect
// of a 51 MB model under every ulimit -v around what they need either run
// or are refused in one line (exit 2), never the runtime's "fatal error:
// out of memory" trace. The limits are found from the binary itself:
// where its answer turns from a refusal into a run, then a sweep across
// that edge. Without the sampler's second graph and the float64 copies of
// loading in the estimate, and without a soft memory limit, sample would
// pass the check from about 40 MiB below what it needs up to 200 MiB
// above, and crash.
func TestModelCommandsUnderAddressLimit(t *testing.T) {
	dir := t.TempDir()
	spec := config.DefaultModel()
	spec.Embedding, spec.Blocks, spec.Heads, spec.Context = 512, 4, 8, 64
	spec.Residual, spec.Norm = true, "pre"
	writeGPTModel(t, filepath.Join(dir, "m.safetensors"), spec)
	if err := os.WriteFile(filepath.Join(dir, "text.txt"), []byte(strings.Repeat(modelChars, 60)), 0o644); err != nil {
		t.Fatal(err)
	}
	const MiB = 1024
	// The edge: the smallest limit (to 32 MiB) at which sample runs,
	// between one at which it cannot and one at which it must.
	sample := []string{"sample", "m.safetensors", "--tokens", "3", "--prompt", "R", "--threads", "1"}
	lo, hi := int64(1024*MiB), int64(4096*MiB)
	if got, msg := underAddressLimit(t, dir, hi, sample...); got != "ok" {
		t.Fatalf("sample under ulimit -v %d KiB: %s: %s", hi, got, firstLines(msg, 3))
	}
	seen := map[string]int{}
	for hi-lo > 32*MiB {
		mid := (lo + hi) / 2
		got, msg := underAddressLimit(t, dir, mid, sample...)
		seen[got]++
		switch got {
		case "ok":
			hi = mid
		case "refused", "nostart":
			lo = mid
		default:
			t.Fatalf("sample under ulimit -v %d KiB: neither a run nor a one-line refusal: %s", mid, firstLines(msg, 3))
		}
	}
	// Across the edge: sample where the old estimate let it through (from
	// about 40 MiB below the edge) and it crashed (up to 200 MiB above);
	// the other commands just below and above.
	commands := [][]string{
		{"attention", "m.safetensors", "--text", "ROMEO", "--threads", "1"},
		{"eval", "m.safetensors", "--data", "text.txt", "--threads", "1"},
		{"inspect", "m.safetensors"},
	}
	check := func(kib int64, args []string) {
		got, msg := underAddressLimit(t, dir, kib, args...)
		seen[got]++
		if got == "crash" {
			t.Errorf("gptg %s under ulimit -v %d KiB (sample's edge %d): neither a run nor a one-line refusal: %s",
				strings.Join(args, " "), kib, hi, firstLines(msg, 3))
		}
	}
	for _, d := range []int64{-32, 32, 96, 160} {
		check(hi+d*MiB, sample)
	}
	for _, d := range []int64{-32, 64} {
		for _, args := range commands {
			check(hi+d*MiB, args)
		}
	}
	t.Logf("sample's edge: ulimit -v %d KiB; outcomes %v", hi, seen)
	if seen["ok"] == 0 || seen["refused"] == 0 {
		t.Errorf("outcomes across the edge %v: want both runs and refusals", seen)
	}
}

// firstLines is the first n lines of s (a trace's head says what failed).
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}
