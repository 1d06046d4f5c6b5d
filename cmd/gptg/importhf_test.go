package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/hf"
	"github.com/gptg/gptg/internal/fidelity"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/nanogpt"
)

// copyFolder copies the files of testdata/gpt2's folder name into dir/name.
func copyFolder(t *testing.T, name, dir string) string {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "gpt2", name)
	dst := filepath.Join(dir, name)
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors"} {
		copyFile(t, filepath.Join(src, f), filepath.Join(dst, f))
	}
	return dst
}

// TestImportHF: gptg import hf writes a model file that sample reads,
// named after the folder by default, and does not replace it without
// --force.
func TestImportHF(t *testing.T) {
	dir := t.TempDir()
	copyFolder(t, "small-f16", dir)
	r := gptg(t, dir, "import", "hf", "small-f16")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote small-f16.safetensors: 2 blocks, 2 heads, embedding 32, context 64, vocab 300, 37,120 parameters, float32") ||
		!strings.Contains(r.stdout, "F16 weights converted to float32") || !strings.Contains(r.stdout, "token ids (prompts are ids separated by spaces): the model has 300 tokens, not GPT-2's 50257") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	// The F16 weights were widened on import: the model file stores F32.
	imported, err := modelfile.Read(filepath.Join(dir, "small-f16.safetensors"), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	values := 0
	for _, tn := range imported.Tensors {
		values += len(tn.F32)
	}
	inspectSays(t, dir, "small-f16.safetensors", fmt.Sprintf("F32: all %d tensors, %d values", len(imported.Tensors), values))
	r = gptg(t, dir, "sample", "small-f16.safetensors", "--prompt", "1 2 3", "--tokens", "5", "--temperature", "0")
	if fields := strings.Fields(r.stdout); r.code != 0 || len(fields) != 8 || fields[0] != "1" {
		t.Fatalf("sample: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = gptg(t, dir, "import", "hf", "small-f16")
	if r.code != 2 || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("second import: exit %d, stderr %s", r.code, r.stderr)
	}
}

// TestImportHFBadFolders: a folder gptg cannot import gets one line on
// stderr naming the key or tensor, exit 2, and no model file.
func TestImportHFBadFolders(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		msg    string
	}{
		{"another architecture", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, "config.json"), `"model_type": "gpt2"`, `"model_type": "gpt_neo"`)
		}, `model_type is "\"gpt_neo\""`},
		{"truncated weights", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			info, _ := os.Stat(p)
			os.Truncate(p, info.Size()-100)
		}, "truncated"},
		{"header that lies", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, "model.safetensors"), `"transformer.ln_f.bias":{"dtype":"F16","shape":[32],"data_offsets":[`, `"transformer.ln_f.bias":{"dtype":"F16","shape":[32],"data_offsets":[9`)
		}, `"transformer.ln_f.bias"`},
		{"no weights", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "model.safetensors")) }, "has no model.safetensors"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.break_(t, copyFolder(t, "small-f16", dir))
			r := gptg(t, dir, "import", "hf", "small-f16", "--out", "m.safetensors")
			if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, c.msg) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line containing %q", r.code, r.stderr, c.msg)
			}
			if _, err := os.Stat(filepath.Join(dir, "m.safetensors")); err == nil {
				t.Error("a model file was written")
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 {
				t.Errorf("files left behind: %v", left)
			}
		})
	}
}

// editFile replaces the first old in the file with new, failing when
// old is not there.
func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportNanoGPTPaddedGPT2: a nanoGPT GPT-2 checkpoint without a
// meta.pkl (vocabulary padded to 50,304) imports as a model of GPT-2's
// 50,257 tokens with GPT-2's tokenizer, which sample reads.
func TestImportNanoGPTPaddedGPT2(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join("..", "..", "testdata", "nanogpt", "gpt2", "ckpt.pt"), filepath.Join(dir, "ckpt.pt"))
	r := gptg(t, dir, "import", "nanogpt", "ckpt.pt", "--out", "m.safetensors")
	if r.code != 0 || !strings.Contains(r.stdout, "vocab 50257") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = gptg(t, dir, "inspect", "m.safetensors")
	if r.code != 0 || !strings.Contains(r.stdout, "tokenizer: gpt2") {
		t.Fatalf("inspect: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = gptg(t, dir, "sample", "m.safetensors", "--prompt", "Hello", "--tokens", "3", "--temperature", "0")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Hello") {
		t.Fatalf("sample: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestHFVocabulary: GPT-2's tokenizer for a model of its 50,257 tokens
// whose folder has no tokenizer files or GPT-2's, token ids otherwise or
// when asked, and --tokenizer gpt2 refused when it cannot be.
func TestHFVocabulary(t *testing.T) {
	dir := t.TempDir()
	notGPT2 := filepath.Join(dir, "vocab.json")
	if err := os.WriteFile(notGPT2, []byte(`{"a": 0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	model := func(vocab int, files map[string]string) *hf.Model {
		m := &hf.Model{Tokenizer: files}
		m.Spec.Vocab = vocab
		return m
	}
	for _, c := range []struct {
		name, want string
		m          *hf.Model
		kind, note string
	}{
		{"GPT-2's size, no files", "auto", model(50257, map[string]string{}), "gpt2", "no tokenizer files"},
		{"GPT-2's size, ids asked", "ids", model(50257, map[string]string{}), "word", "token ids"},
		{"another size", "auto", model(300, map[string]string{}), "word", "the model has 300 tokens"},
		{"another tokenizer", "auto", model(50257, map[string]string{"vocab.json": notGPT2, "merges.txt": notGPT2}), "word", "has 1 tokens, GPT-2's tokenizer 50257"},
	} {
		meta, note, err := hfVocabulary(c.m, c.want)
		if err != nil || meta["tokenizer"] != c.kind || !strings.Contains(note, c.note) {
			t.Errorf("%s: tokenizer %q, note %q, err %v; want %q and a note containing %q", c.name, meta["tokenizer"], note, err, c.kind, c.note)
		}
		if _, listed := meta["vocab"]; listed == (c.kind == "gpt2") {
			t.Errorf("%s: vocab listed %v for tokenizer %s", c.name, listed, c.kind)
		}
	}
	for _, m := range []*hf.Model{model(300, map[string]string{}), model(50257, map[string]string{"vocab.json": notGPT2, "merges.txt": notGPT2})} {
		if _, _, err := hfVocabulary(m, "gpt2"); err == nil {
			t.Errorf("--tokenizer gpt2 accepted for a model of %d tokens and files %v", m.Spec.Vocab, m.Tokenizer)
		}
	}
}

// TestEvalTokensOnImportedGPT2: eval --tokens reads a token file (nanoGPT's
// uint16 ids) in an imported GPT-2's vocabulary; on one window its loss is
// the mean cross-entropy of the model's own forward pass.
func TestEvalTokensOnImportedGPT2(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join("..", "..", "testdata", "nanogpt", "gpt2", "ckpt.pt")
	copyFile(t, ckpt, filepath.Join(dir, "ckpt.pt"))
	if r := gptg(t, dir, "import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"); r.code != 0 {
		t.Fatalf("import: %s", r.stderr)
	}
	ids := []int{464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13} // one window of context 8, as the file reader counts
	bin := make([]byte, 2*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint16(bin[2*i:], uint16(id))
	}
	if err := os.WriteFile(filepath.Join(dir, "val.bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	r := gptg(t, dir, "eval", "m.safetensors", "--tokens", "--data", "val.bin", "--batch", "1")
	var got float64
	if _, err := fmt.Sscanf(r.stdout, "test loss %f", &got); r.code != 0 || err != nil || !strings.Contains(r.stdout, "1 test windows") {
		t.Fatalf("eval: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	vocab, err := corpus.NewGPT2Vocab()
	if err != nil {
		t.Fatal(err)
	}
	m, err := nanogpt.ImportGPT2(ckpt, vocab, 1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fidelity.Forward(m.Spec, m.Tensors, ids[:8], graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	V, want := m.Spec.Vocab, 0.0
	for p := range 8 {
		row := out.Logits[p*V : (p+1)*V]
		top := slices.Max(row)
		sum := 0.0
		for _, l := range row {
			sum += math.Exp(l - top)
		}
		want += (top + math.Log(sum) - row[ids[p+1]]) / 8
	}
	if math.Abs(got-want) > 1e-5*want {
		t.Errorf("eval --tokens: test loss %v, the forward pass's cross-entropy %v", got, want)
	}
}
