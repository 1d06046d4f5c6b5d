package main

import (
	"archive/zip"
	"bytes"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/modelfile"
)

// The rows and tests of this file are the fourth round of hostile input
// (issue #24's "fresh round of variants"): outputs that still overwrote
// (data export, data pairs --out, plot --out, --cpuprofile), eval
// flags a translation model silently ignored, and translation models
// whose NaN or overflowing weights printed garbage with exit 0.

// translationFiles are a tiny pairs corpus and an encoder–decoder config
// that trains on it in a fraction of a second (toy.toml → runs/toy).
func translationFiles() map[string]string {
	return map[string]string{
		"toy.tsv":  toypairs.Counted(200),
		"toy.toml": toypairs.Config("toy.tsv", "runs/toy", 5, "norm = \"pre\"\npositions = \"learned\"\n", ""),
	}
}

// translationRun trains toy.toml (translationFiles) into dir/runs/toy.
func translationRun(t *testing.T, dir string) {
	t.Helper()
	if r := gptg(t, dir, "train", "toy.toml", "--quiet"); r.code != 0 {
		t.Fatalf("training the translation fixture: exit %d: %s", r.code, r.stderr)
	}
}

// translationModelAs writes the translation run's model with every
// weight set to v as dir/name.
func translationModelAs(name string, v float32) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		translationRun(t, dir)
		f, err := modelfile.Read(filepath.Join(dir, "runs/toy/model.safetensors"), modelfile.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var tensors []modelfile.Tensor
		for _, n := range slices.Sorted(maps.Keys(f.Tensors)) {
			w := f.Tensors[n]
			for i := range w.F32 {
				w.F32[i] = v
			}
			for i := range w.F64 {
				w.F64[i] = float64(v)
			}
			tensors = append(tensors, w)
		}
		if err := modelfile.Write(filepath.Join(dir, name), tensors, f.Meta); err != nil {
			t.Fatal(err)
		}
	}
}

func round4Inputs(t *testing.T) []badInput {
	tiny := testmodel.TinyText()
	pairsFiles := func(more map[string]string) map[string]string {
		m := translationFiles()
		maps.Copy(m, more)
		return m
	}
	cfg := map[string]string{"c.toml": "[data]\npath = \"" + tiny + "\"\n[train]\nmax_steps = 2\nout = \"runs/c\"\n"}
	return []badInput{
		// Outputs under the rule of every output flag.
		{name: "data export --out an existing file", files: map[string]string{"notes.txt": "mine\n"},
			args: []string{"data", "export", "toy", "--out", "notes.txt"}, code: 2, msg: "--out notes.txt: already exists and is not a file this command wrote"},
		{name: "data pairs --out a file", files: pairsFiles(nil),
			args: []string{"data", "pairs", "toy.toml", "--out", "toy.tsv"}, code: 2, msg: "--out toy.tsv: exists and is not a folder"},
		{name: "data pairs --out a folder holding another train.tsv", files: pairsFiles(map[string]string{"d/train.tsv": "hello\thola\n"}),
			args: []string{"data", "pairs", "toy.toml", "--out", "d"}, code: 2, msg: "--out d/train.tsv: already exists and is not a file this command wrote"},
		{name: "data pairs --out the folder of its corpus, named train.tsv", files: map[string]string{
			"train.tsv": translationFiles()["toy.tsv"], "c.toml": strings.Replace(translationFiles()["toy.toml"], "toy.tsv", "train.tsv", 1)},
			args: []string{"data", "pairs", "c.toml", "--out", "."}, code: 2, msg: "is train.tsv, which this command reads"},
		{name: "data pairs --out -", files: pairsFiles(nil),
			args: []string{"data", "pairs", "toy.toml", "--out", "-"}, code: 2, msg: "data pairs writes a folder of files"},
		{name: "data pairs --out with a million epochs (batches.tsv of 23 million lines)", files: pairsFiles(nil),
			args: []string{"data", "pairs", "toy.toml", "--out", "d", "--set", "train.max_steps=0", "--set", "train.epochs=1000000"},
			code: 2, maxMB: 200, msg: "batches.tsv would list 23000000 training steps, one line each; at most 1000000"},
		{name: "plot --out an existing file that is no picture", files: map[string]string{"notes.png": "mine\n"},
			args: []string{"plot", filepath.Dir(causalModel), "--out", "notes.png"}, code: 2, msg: "--out notes.png: already exists and is not a file this command wrote"},
		{name: "train --cpuprofile the config it reads", files: cfg,
			args: []string{"train", "c.toml", "--cpuprofile", "c.toml"}, code: 2, msg: "--cpuprofile c.toml: is c.toml, which this command reads"},
		{name: "train --cpuprofile a corpus", files: cfg, setup: func(t *testing.T, dir string) { copyFile(t, tiny, filepath.Join(dir, "tiny.txt")) },
			args: []string{"train", "c.toml", "--cpuprofile", "tiny.txt"}, code: 2, msg: "--cpuprofile tiny.txt: already exists and is not a file this command wrote"},
		{name: "train --cpuprofile -", files: cfg,
			args: []string{"train", "c.toml", "--cpuprofile", "-"}, code: 2, msg: "--cpuprofile -: a profile is binary"},
		{name: "train --cpuprofile with a missing config: no profile left", args: []string{"train", "nope.toml", "--cpuprofile", "p.prof"},
			code: 2, msg: "config nope.toml: no such file"},

		// A zip naming one storage twice, the second all zeros: which one a
		// reader takes is not defined, so neither is the model.
		{name: "import: a checkpoint holding one entry twice", setup: func(t *testing.T, dir string) {
			nanoMeta(t, dir)
			zr, err := zip.OpenReader("../../testdata/nanogpt/ckpt.pt")
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			for i, f := range append(slices.Clone(zr.File), zr.File[1]) {
				r, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(r)
				if i == len(zr.File) {
					b = make([]byte, len(b))
				}
				w, _ := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
				w.Write(b)
			}
			zw.Close()
			if err := os.WriteFile(filepath.Join(dir, "ckpt.pt"), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "ckpt.pt: holds the entry ckpt/data/0 twice"},

		{name: "sweep emit slurm --memory NaN", files: map[string]string{"sw/manifest.jsonl": ""},
			args: []string{"sweep", "emit", "slurm", "sw", "--memory", "NaN"}, code: 2, msg: "--memory NaN must be a number of GiB from 0.25 to 1048576"},

		// eval of a translation model: flags it cannot honour are refused.
		{name: "eval a translation run with --data", files: translationFiles(), setup: translationRun,
			args: []string{"eval", "runs/toy", "--data", tiny}, code: 2, msg: "--data is for language models: a translation model is evaluated on its run's test pairs"},
		{name: "eval a translation run with --prefix-only", files: translationFiles(), setup: translationRun,
			args: []string{"eval", "runs/toy", "--prefix-only"}, code: 2, msg: "--prefix-only is for language models"},
		{name: "eval a language model with --show", args: []string{"eval", causalModel, "--show", "2"}, code: 2, msg: "--show is for translation models"},
		{name: "eval --show -1", args: []string{"eval", causalModel, "--show", "-1"}, code: 2, msg: "--show -1 must be between 0 and 1000000"},

		// Translation models that printed garbage with exit 0.
		{name: "translate: NaN weights", files: translationFiles(), setup: translationModelAs("nan.safetensors", float32(math.NaN())),
			args: []string{"translate", "nan.safetensors", "--text", "a1 a2"}, code: 1, msg: "holds NaN at entry 0"},
		{name: "translate: huge weights", files: translationFiles(), setup: translationModelAs("huge.safetensors", 3e38),
			args: []string{"translate", "huge.safetensors", "--text", "a1 a2", "--beam", "2"}, code: 1, msg: "the model's translation scores (log p) came out NaN or infinite; its largest weight is 3"},
		{name: "eval a translation model: huge weights", files: translationFiles(), setup: func(t *testing.T, dir string) {
			translationModelAs("runs/toy/huge.safetensors", 3e38)(t, dir)
		}, args: []string{"eval", "runs/toy/huge.safetensors"}, code: 1, msg: "the model's test loss came out NaN or infinite"},
	}
}

// TestOutputsRoundFour: the outputs that the rows above refuse work when
// they should: data export and graph --dot write only their content to
// standard output for -, data pairs --out replaces its own files and,
// with --force, others; a profile is written after a run, and replaces a
// profile.
func TestOutputsRoundFour(t *testing.T) {
	dir := t.TempDir()
	for name, text := range translationFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := func(args ...string) result {
		t.Helper()
		r := gptg(t, dir, args...)
		if r.code != 0 {
			t.Fatalf("gptg %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r
	}
	want("data", "export", "toy", "--out", "toy.txt")
	file, _ := os.ReadFile(filepath.Join(dir, "toy.txt"))
	if r := want("data", "export", "toy", "--out", "-"); len(file) == 0 || r.stdout != string(file) {
		t.Errorf("data export --out -: stdout (%d bytes) ends %q, want the corpus alone (%d bytes)", len(r.stdout), r.stdout[max(0, len(r.stdout)-80):], len(file))
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error("data export --out - wrote a file named -")
	}
	if r := want("graph", "toy.toml", "--dot", "-"); !strings.HasPrefix(r.stdout, "digraph") {
		t.Errorf("graph --dot - of a translation config: stdout starts %.80q, want the DOT alone", r.stdout)
	}
	want("data", "pairs", "toy.toml", "--out", "split")
	want("data", "pairs", "toy.toml", "--out", "split") // its own files again
	if err := os.WriteFile(filepath.Join(dir, "split", "src.vocab"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "data", "pairs", "toy.toml", "--out", "split"); r.code != 2 {
		t.Errorf("data pairs over a foreign src.vocab: exit %d, want 2", r.code)
	}
	want("data", "pairs", "toy.toml", "--out", "split", "--force")
	if b, _ := os.ReadFile(filepath.Join(dir, "split", "src.vocab")); !bytes.HasPrefix(b, []byte("<pad>\n")) {
		t.Errorf("data pairs --force did not replace src.vocab: %q", b)
	}
	for range 2 { // the second replaces the first's profile
		want("train", "toy.toml", "--quiet", "--force", "--cpuprofile", "p.prof")
		if b, err := os.ReadFile(filepath.Join(dir, "p.prof")); err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("the profile: %v, starts %q; want a gzip file", err, b[:min(len(b), 4)])
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
