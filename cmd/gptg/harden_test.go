package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gptg/gptg/internal/runlock"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/modelfile"
)

// hardenedInputs are the rows of TestBadInputs for inputs that would
// overwrite runs, write outside the run folder, hang or take all memory.
// Each must be refused at once (the 10 s command timeout fails a hang).
func hardenedInputs(t *testing.T) []badInput {
	tiny := testmodel.TinyText()
	const brokenModel = "broken.safetensors"
	cfg := "[data]\npath = \"" + tiny + "\"\n"
	withConfig := func(extra string) map[string]string { return map[string]string{"c.toml": cfg + extra} }
	mkfifo := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// runFolder copies the causal model's finished run into dir/run.
	runFolder := func(edit func(config string) string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			run := filepath.Join(dir, "short")
			if err := os.Mkdir(run, 0o755); err != nil {
				t.Fatal(err)
			}
			src := filepath.Dir(causalModel)
			entries, err := os.ReadDir(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				copyFile(t, filepath.Join(src, e.Name()), filepath.Join(run, e.Name()))
			}
			if edit != nil {
				path := filepath.Join(run, "config.toml")
				b, _ := os.ReadFile(path)
				if err := os.WriteFile(path, []byte(edit(string(b))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return []badInput{
		// Run folders: nothing overwritten, nothing written outside.
		{name: "train: a run folder without its checkpoint", files: withConfig(""), setup: func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, "runs", "c"), 0o755)
			os.WriteFile(filepath.Join(dir, "runs", "c", "metrics.jsonl"), []byte("{}\n"), 0o644)
		}, args: []string{"train", "c.toml"}, code: 2, msg: "already holds a run (metrics.jsonl) without a checkpoint to resume: start over with --force, or choose another train.out"},
		{name: "train: a finished run folder", setup: runFolder(nil),
			args: []string{"train", "short/config.toml", "--set", "train.out=short"}, code: 2, msg: "already holds a finished run (30 steps): train it longer with `gptg train --resume short --set train.max_steps=60`"},
		{name: "train: a run folder another gptg is using", files: withConfig(""), setup: func(t *testing.T, dir string) {
			run := filepath.Join(dir, "runs", "c")
			os.MkdirAll(run, 0o755)
			lock, err := runlock.Acquire(run) // this test's process stands for the other gptg
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lock.Release() })
		}, args: []string{"train", "c.toml", "--force"}, code: 1, msg: "runs/c: run folder is in use by process"},
		{name: "train: train.out is the filesystem root", files: withConfig(""),
			args: []string{"train", "c.toml", "--set", "train.out=/"}, code: 2, msg: "c.toml: train.out: / is the filesystem root"},
		{name: "train: train.out is a folder of other files", files: map[string]string{"c.toml": cfg + "[train]\nout = \".\"\n", "notes.txt": "x"},
			args: []string{"train", "c.toml", "--force"}, code: 2, msg: "train.out: . is a folder that is not a gptg run folder and not empty (it holds c.toml, notes.txt)"},
		{name: "train: a config named ...toml", files: map[string]string{"...toml": cfg},
			args: []string{"train", "...toml"}, code: 2, msg: `the file name gives the run name "..", which is not a plain folder name`},

		// Resume.
		{name: "train --resume of a missing folder", args: []string{"train", "--resume", "runs/nope"}, code: 2, msg: "--resume runs/nope: no such run folder"},
		{name: "train --resume of a finished run", setup: runFolder(nil),
			args: []string{"train", "--resume", "short"}, code: 1, msg: "run short already finished its 30 steps: train it longer with `gptg train --resume short --set train.max_steps=60`"},
		{name: "train --resume --set of a model setting", setup: runFolder(nil),
			args: []string{"train", "--resume", "short", "--set", "model.heads=4"}, code: 2, msg: "--set model.heads: --resume changes only the run's length"},
		{name: "train --resume after editing config.toml", setup: runFolder(func(c string) string { return strings.Replace(c, "lr = 0.001", "lr = 0.003", 1) }),
			args: []string{"train", "--resume", "short", "--set", "train.max_steps=40"}, code: 2, msg: "short/config.toml: edited since the run started (train.lr=0.003 (was 0.001))"},
		{name: "train --resume --set train.max_steps shorter than the run", setup: runFolder(nil),
			args: []string{"train", "--resume", "short", "--set", "train.max_steps=20"}, code: 1, msg: "is at step 30, past the 20 steps its length now gives: a run can be extended, not shortened"},

		// Configs the TOML parser must not see.
		{name: "config: a key of 100,000 dotted parts", files: map[string]string{"c.toml": "[" + strings.Repeat("a.", 100_000) + "a]\n"},
			args: []string{"graph", "c.toml"}, code: 2, msg: "config c.toml: line 1: a key of more than 8 dotted parts"},
		{name: "config: inline tables nested 100,000 deep", files: map[string]string{"c.toml": "x = " + strings.Repeat("{a=", 100_000) + "1" + strings.Repeat("}", 100_000) + "\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: "config c.toml: line 1: more than 8 nested tables or arrays"},
		{name: "config: a named pipe", setup: mkfifo("c.toml"), args: []string{"train", "c.toml"}, code: 2, msg: "config c.toml: is a named pipe (FIFO), not a regular file"},

		// Files that are not regular files.
		{name: "train: data.path is a named pipe", files: map[string]string{"c.toml": "[data]\npath = \"fifo\"\n"}, setup: mkfifo("fifo"),
			args: []string{"train", "c.toml"}, code: 2, msg: "data file fifo is a named pipe (FIFO), not a regular file"},
		{name: "train: data.path is a named pipe, data.sha256 set", files: map[string]string{"c.toml": "[data]\npath = \"fifo\"\nsha256 = \"" + strings.Repeat("ab", 32) + "\"\n"}, setup: mkfifo("fifo"),
			args: []string{"train", "c.toml"}, code: 2, msg: "data file fifo is a named pipe (FIFO), not a regular file"},
		{name: "train: data.path is /dev/zero", files: map[string]string{"c.toml": "[data]\npath = \"/dev/zero\"\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: "data file /dev/zero is a character device, not a regular file"},
		{name: "eval --data /dev/zero", args: []string{"eval", causalModel, "--data", "/dev/zero"}, code: 2, msg: "data file /dev/zero is a character device, not a regular file"},
		{name: "sample --prompt-file a named pipe", setup: mkfifo("p"),
			args: []string{"sample", causalModel, "--prompt-file", "p"}, code: 2, msg: "prompt file: p is a named pipe (FIFO), not a regular file"},
		{name: "sample: the model file is a named pipe", setup: mkfifo("m.safetensors"),
			args: []string{"sample", "m.safetensors"}, code: 2, msg: "m.safetensors is a named pipe (FIFO), not a model file"},
		{name: "inspect /dev/zero", args: []string{"inspect", "/dev/zero"}, code: 2, msg: "/dev/zero is a character device, not a model file"},

		// Memory: refused from the config or the file's metadata, before
		// anything sized by them is allocated.
		{name: "graph: embedding 8192 and 64 blocks", files: map[string]string{"c.toml": "[model]\nvocab = 65\nembedding = 8192\nblocks = 64\n"},
			args: []string{"graph", "c.toml"}, code: 2, maxMB: 100, msg: "c.toml: train.max_memory: training this model (batch 4 × context 32) needs about 1152.1 GiB"},
		{name: "train: every size at its maximum", files: map[string]string{"c.toml": cfg + "[model]\ncontext = 4096\nembedding = 8192\nblocks = 64\nff_mult = 64\nvocab = 1048576\n[train]\nbatch = 4096\n"},
			args: []string{"train", "c.toml"}, code: 2, maxMB: 100, msg: "raise the limit with --set train.max_memory="},
		{name: "train: a model too big for a lowered limit", files: withConfig(""),
			args: []string{"train", "c.toml", "--set", "train.max_memory=0.005"}, code: 2, maxMB: 100, msg: "--set train.max_memory: training this model (batch 4 × context 32) needs about"},
		{name: "sample: metadata of a model far larger than the file", setup: alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
			f.Meta["model"] = strings.NewReplacer(`"embedding":8`, `"embedding":8192`, `"blocks":1`, `"blocks":64`).Replace(f.Meta["model"])
		}), args: []string{"sample", brokenModel}, code: 1, maxMB: 100, msg: "the metadata describes a model of 34366472247 parameters, but the file's tensors hold 1599 values"},
		{name: "sample: an unmasked model of context 4096", setup: alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
			f.Meta["model"] = strings.NewReplacer(`"context":8`, `"context":4096`, `"mask":true`, `"mask":false`).Replace(f.Meta["model"])
			f.Tensors["pos.weight"] = modelfile.Tensor{Name: "pos.weight", Shape: []int{4096, 8}, F64: make([]float64, 4096*8)}
		}), args: []string{"sample", brokenModel}, code: 2, maxMB: 100, msg: "broken.safetensors: sampling this model needs about"},
		{name: "inspect: a key twice in the model metadata", setup: alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
			f.Meta["model"] = strings.Replace(f.Meta["model"], `"heads":2`, `"heads":2,"heads":1`, 1)
		}), args: []string{"inspect", brokenModel}, code: 1, msg: `metadata "model": key "heads" appears twice`},

		// Not a model file at all.
		{name: "sample: a config instead of a model", files: map[string]string{"c.toml": cfg},
			args: []string{"sample", "c.toml"}, code: 2, msg: "c.toml is a config, not a model: train it first (gptg train c.toml), then give runs/c"},
		{name: "eval: a config instead of a model, before asking for --data", files: map[string]string{"c.toml": cfg},
			args: []string{"eval", "c.toml"}, code: 2, msg: "c.toml is a config, not a model: train it first (gptg train c.toml), then give runs/c"},
		{name: "inspect: the run's metrics instead of its model", files: map[string]string{"metrics.jsonl": `{"step":100,"loss":2.5}` + "\n"},
			args: []string{"inspect", "metrics.jsonl"}, code: 2, msg: "metrics.jsonl is a text file, not a model file"},
	}
}

// TestEvalUsesTheRunsStride: a run trained with a stride other than
// context/2 is evaluated on its own windows, so gptg eval reproduces the
// test loss its training wrote; --stride gives the same windows with
// --data, and the default stride other ones.
func TestEvalUsesTheRunsStride(t *testing.T) {
	c := testmodel.Config(filepath.Join(t.TempDir(), "run"), true, 10)
	c.Data.Stride = 3 // context 8: the default would be 4
	model, err := testmodel.Train(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(c.Train.Out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var row struct {
		TestLoss float64 `json:"test_loss"`
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &row); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("test loss %.6f\n", row.TestLoss)
	loss := func(args ...string) string {
		r := gptg(t, t.TempDir(), append([]string{"eval", model, "--batch", "2"}, args...)...)
		if r.code != 0 {
			t.Fatalf("eval %v: %s", args, r.stderr)
		}
		line, _, _ := strings.Cut(r.stdout, "\n")
		return line + "\n"
	}
	if got := loss(); got != want {
		t.Errorf("gptg eval RUN: %q, training wrote %q", got, want)
	}
	if got := loss("--data", testmodel.TinyText(), "--stride", "3"); got != want {
		t.Errorf("--data with --stride 3: %q, want %q", got, want)
	}
	if got := loss("--data", testmodel.TinyText()); got == want {
		t.Errorf("--data with the default stride gave the run's loss %q: the test cannot tell strides apart", got)
	}
}

// TestLargeVocabularyStaysBounded: a valid model file whose metadata holds
// a vocabulary of 300,000 words (3.4 MB of JSON) is inspected with a peak
// memory bounded by a small multiple of the file (a 13 MB vocabulary once
// took 492 MB).
func TestLargeVocabularyStaysBounded(t *testing.T) {
	const V = 300_000
	words := make([]string, V)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	vocab, _ := json.Marshal(words)
	spec := `{"vocab":300000,"context":1,"embedding":1,"blocks":0,"heads":1,"qkv":true,"mask":true,"out_proj":true,` +
		`"residual":false,"norm":"none","activation":"gelu","ff_mult":1,"dtype":"float32","bias":true,"init":"torch"}`
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	err := modelfile.Write(path, []modelfile.Tensor{
		{Name: "tok.weight", Shape: []int{V, 1}, F32: make([]float32, V)},
		{Name: "pos.weight", Shape: []int{1, 1}, F32: make([]float32, 1)},
		{Name: "out.weight", Shape: []int{V, 1}, F32: make([]float32, V)},
		{Name: "out.bias", Shape: []int{V}, F32: make([]float32, V)},
	}, map[string]string{"format": "gptg/1", "model": spec, "tokenizer": "word", "vocab": string(vocab)})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	r := gptg(t, dir, "inspect", "m.safetensors")
	if r.code != 0 {
		t.Fatalf("inspect: %s", r.stderr)
	}
	if limit := 10*info.Size()>>10 + 48<<10; r.maxRSSKB > limit {
		t.Errorf("inspecting a %d KB file took %d KB, more than %d", info.Size()>>10, r.maxRSSKB, limit)
	}
	t.Logf("file %d KB, peak %d KB", info.Size()>>10, r.maxRSSKB)
}
