package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		!strings.Contains(r.stdout, "F16 weights converted to float32") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
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
// 50,257 tokens, which sample reads.
func TestImportNanoGPTPaddedGPT2(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join("..", "..", "testdata", "nanogpt", "gpt2", "ckpt.pt"), filepath.Join(dir, "ckpt.pt"))
	r := gptg(t, dir, "import", "nanogpt", "ckpt.pt", "--out", "m.safetensors")
	if r.code != 0 || !strings.Contains(r.stdout, "vocab 50257") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = gptg(t, dir, "sample", "m.safetensors", "--prompt", "0 1 2", "--tokens", "3", "--temperature", "0")
	if r.code != 0 || len(strings.Fields(r.stdout)) != 6 {
		t.Fatalf("sample: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
