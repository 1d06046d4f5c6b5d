package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/modelfile"
)

// badInput is one wrong way to call gptg and what the user must see.
type badInput struct {
	name  string
	files map[string]string              // written into the row's directory first
	setup func(t *testing.T, dir string) // for files made from the tiny model
	args  []string
	code  int
	msg   string // a fragment of the one-line message on stderr
	// maxMB, when set, bounds the peak memory of the run: a refusal that
	// must come before any allocation sized by the input.
	maxMB int64
	stdin string   // a file of the row's directory given as standard input
	env   []string // KEY=VALUE set for the run (shown before the command)
	// headroomMB, when set, runs the row under a ulimit -v that leaves the
	// process about this much (addressUsed): a refusal that names the
	// limit. Its numbers depend on the machine; the table shows them as N.
	headroomMB int64
}

// TestBadInputs runs every row in a fresh directory and requires exactly
// one line on stderr that says what is wrong, the row's exit code, no
// trace of a panic, and no file left behind (a half-written run folder,
// model or image, a temporary file).
func TestBadInputs(t *testing.T) {
	tiny := testmodel.TinyText()
	model := causalModel
	const brokenModel = "broken.safetensors"
	// A metadata model table that LoadModel passes but no graph can have.
	threeHeads := alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
		var m config.Model
		if err := json.Unmarshal([]byte(f.Meta["model"]), &m); err != nil {
			t.Fatal(err)
		}
		m.Heads = 3
		b, _ := json.Marshal(m)
		f.Meta["model"] = string(b)
	})

	rows := []badInput{
		// Dispatch and arguments.
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, msg: `unknown command "frobnicate"`},
		{name: "misspelt command", args: []string{"samp", model}, code: 2, msg: `did you mean "sample"?`},
		{name: "help for an unknown command", args: []string{"help", "nope"}, code: 2, msg: `unknown command "nope"`},
		{name: "train without a config", args: []string{"train"}, code: 2, msg: "train needs exactly one CONFIG file, got 0"},
		{name: "graph with two configs", args: []string{"graph", "a.toml", "b.toml"}, code: 2, msg: "graph needs exactly one CONFIG file, got 2"},
		{name: "sample without a model", args: []string{"sample"}, code: 2, msg: "sample needs exactly one MODEL file, got 0"},
		{name: "eval without a model", args: []string{"eval", "--data", tiny}, code: 2, msg: "eval needs exactly one MODEL file"},
		{name: "inspect without a model", args: []string{"inspect"}, code: 2, msg: "inspect needs exactly one MODEL file"},
		{name: "attention without text", args: []string{"attention", model}, code: 2, msg: "attention needs --text TEXT"},
		{name: "train --resume with a config", args: []string{"train", "--resume", "runs/x", "c.toml"}, code: 2, msg: "--resume takes the run folder alone"},

		// Configs: exit 2 and the file and key to change.
		{name: "malformed TOML", files: map[string]string{"c.toml": "[model]\ncontext = = 8\n"},
			args: []string{"graph", "c.toml"}, code: 2, msg: "config c.toml: line 2:"},
		{name: "train: data not UTF-8", files: map[string]string{"c.toml": "[data]\npath = \"bad.txt\"\n", "bad.txt": "caf\xe9 ol\xe9\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: "data file bad.txt: text is not valid UTF-8 (bad byte 0xe9 at offset 3)"},
		{name: "unknown key", files: map[string]string{"c.toml": "[model]\nhaeds = 2\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: "model.haeds: unknown key; did you mean model.heads?"},
		{name: "wrong type", files: map[string]string{"c.toml": "[model]\ncontext = \"eight\"\n"},
			args: []string{"graph", "c.toml"}, code: 2, msg: "model.context: expected an integer"},
		{name: "heads not dividing embedding", files: map[string]string{"c.toml": "[model]\nembedding = 10\nheads = 3\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: "model.heads: 3 does not divide embedding 10"},
		{name: "context 0", files: map[string]string{"c.toml": "[model]\ncontext = 0\n"},
			args: []string{"graph", "c.toml"}, code: 2, msg: "model.context: 0 is out of range"},
		{name: "split 1.5", files: map[string]string{"c.toml": "[data]\nsplit = 1.5\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: "data.split: 1.5 is out of range"},
		{name: "extends cycle", files: map[string]string{"a.toml": "extends = \"b.toml\"\n", "b.toml": "extends = \"a.toml\"\n"},
			args: []string{"graph", "a.toml"}, code: 2, msg: "cycle: a.toml -> b.toml -> a.toml"},
		{name: "missing config file", args: []string{"train", "nope.toml"}, code: 2, msg: "nope.toml: no such file"},
		{name: "missing config file for graph", args: []string{"graph", "nope.toml"}, code: 2, msg: "nope.toml: no such file"},
		{name: "--set unknown key", files: map[string]string{"c.toml": ""},
			args: []string{"graph", "c.toml", "--set", "model.haeds=2"}, code: 2, msg: "--set model.haeds: unknown key; did you mean model.heads?"},
		{name: "--set bad value", files: map[string]string{"c.toml": ""},
			args: []string{"train", "c.toml", "--set", "model.context=abc"}, code: 2, msg: "--set model.context: expected an integer"},
		{name: "--set without =", files: map[string]string{"c.toml": ""},
			args: []string{"train", "c.toml", "--set", "model.heads"}, code: 2, msg: `--set needs section.key=value, got "model.heads": write --set model.heads=VALUE`},
		{name: "--set key value, a space for the =", files: map[string]string{"c.toml": ""},
			args: []string{"train", "c.toml", "--set", "train.epochs", "0.05"}, code: 2, msg: `--set needs section.key=value, got "train.epochs": write --set train.epochs=0.05`},
		{name: "nanoGPT style --section.key=value, bad value", files: map[string]string{"c.toml": ""},
			args: []string{"train", "c.toml", "--train.epochs=lots"}, code: 2, msg: "--set train.epochs: expected a number"},
		{name: "nanoGPT style --section.key, unknown key", files: map[string]string{"c.toml": ""},
			args: []string{"graph", "c.toml", "--model.haeds", "2"}, code: 2, msg: "--set model.haeds: unknown key; did you mean model.heads?"},
		{name: "misspelt flag", files: map[string]string{"c.toml": ""},
			args: []string{"train", "c.toml", "--sett", "train.epochs=1"}, code: 2, msg: "flag provided but not defined: --sett; did you mean --set?"},
		{name: "misspelt command, not a prefix", args: []string{"smaple"}, code: 2, msg: `unknown command "smaple"; did you mean "sample"?`},
		{name: "version with an argument", args: []string{"version", "x"}, code: 2, msg: "version takes no arguments"},
		{name: "train: missing data file, no url", files: map[string]string{"c.toml": "[data]\npath = \"missing.txt\"\n"},
			args: []string{"train", "c.toml"}, code: 1, msg: "data file missing.txt does not exist and [data] url is not set (relative paths are resolved against the current directory"},
		{name: "train: a config run from another directory", files: map[string]string{"proj/configs/c.toml": "[data]\npath = \"data/t.txt\"\n", "proj/data/t.txt": "abc"},
			args: []string{"train", "proj/configs/c.toml"}, code: 1, msg: "; it exists under "},
		{name: "train: the toy corpus not made yet", files: map[string]string{"c.toml": "[data]\npath = \"data/toy.txt\"\ntokenizer = \"word\"\n"},
			args: []string{"train", "c.toml"}, code: 1, msg: `; use the built-in one (data.path = "builtin:toy") or make it with: gptg data toy --out data/toy.txt`},
		{name: "train: batch larger than the test split", files: map[string]string{"c.toml": "[data]\npath = \"" + tiny + "\"\n[train]\nbatch = 100\n"},
			args: []string{"train", "c.toml"}, code: 1, msg: "has 36 test windows, fewer than one batch of 100: lower train.batch or data.split"},
		{name: "graph: missing data file, no url", files: map[string]string{"c.toml": "[data]\npath = \"missing.txt\"\n"},
			args: []string{"graph", "c.toml"}, code: 1, msg: "data file missing.txt does not exist and [data] url is not set"},

		// Flags of sample.
		{name: "sample --temperature -1", args: []string{"sample", model, "--temperature", "-1"}, code: 2, msg: "--temperature -1 must be a finite number ≥ 0"},
		{name: "sample --top-p 2", args: []string{"sample", model, "--top-p", "2"}, code: 2, msg: "--top-p 2 must be between 0 and 1"},
		{name: "sample --top-k -1", args: []string{"sample", model, "--top-k", "-1"}, code: 2, msg: "--top-k -1 must be ≥ 0"},
		{name: "sample --tokens -5", args: []string{"sample", model, "--tokens", "-5"}, code: 2, msg: "--tokens -5 must be between 0 and 1000000"},
		{name: "sample --tokens abc", args: []string{"sample", model, "--tokens", "abc"}, code: 2, msg: `invalid value "abc" for flag --tokens`},
		{name: "sample --samples 0", args: []string{"sample", model, "--samples", "0"}, code: 2, msg: "--samples 0 must be between 1 and 1000"},
		{name: "sample --prompt and --prompt-file", files: map[string]string{"p.txt": "First"},
			args: []string{"sample", model, "--prompt", "A", "--prompt-file", "p.txt"}, code: 2, msg: "give --prompt or --prompt-file, not both"},
		{name: "sample unknown flag", args: []string{"sample", model, "--frobnicate"}, code: 2, msg: "flag provided but not defined: --frobnicate"},
		{name: "sample missing prompt file", args: []string{"sample", model, "--prompt-file", "nope.txt"}, code: 2, msg: "--prompt-file nope.txt: no such file"},
		{name: "sample prompt outside the vocabulary", args: []string{"sample", model, "--prompt", "Good King Xerxes €"}, code: 2,
			msg: `the prompt: 5 characters outside the vocabulary: "G", "K", "X", "x", "€"`},
		{name: "sample prompt in another script", args: []string{"sample", model, "--prompt", cjk(3000)}, code: 2,
			msg: `the prompt: 3000 characters outside the vocabulary: "一", "丁", "丂", "七", "丄", "丅", "丆", "万" and 2992 more`},
		{name: "sample prompt not UTF-8", args: []string{"sample", model, "--prompt", "Fir\xffst"}, code: 2,
			msg: "the prompt: not valid UTF-8 (bad byte 0xff at offset 3)"},
		{name: "sample word model, capitalised prompt", args: []string{"sample", wordModel, "--prompt", "The cat Sees"}, code: 2,
			msg: `the case differs: "The" is "the", "Sees" is "sees" in the vocabulary`},
		{name: "sample: invalid config.toml beside the model, defaults needed", setup: modelWithConfig("[sample]\ntokens = \"many\"\n"),
			args: []string{"sample", "run"}, code: 2, msg: "reading run/config.toml for the defaults of the flags not given"},
		{name: "sample: a folder without a model", files: map[string]string{"empty/x.txt": ""},
			args: []string{"sample", "empty"}, code: 2, msg: "empty is a folder without model.safetensors: give a model file or a run folder"},
		{name: "sample: a run killed before its model was written", files: map[string]string{"run/checkpoint.safetensors": ""},
			args: []string{"sample", "run"}, code: 2, msg: "run is a run folder without model.safetensors (killed before it was written?): `gptg train --resume run` writes it from the checkpoint"},
		{name: "attention text outside the vocabulary", args: []string{"attention", model, "--text", "Zounds"}, code: 2, msg: `--text: 1 character outside the vocabulary: "Z"`},
		{name: "attention --format bmp", args: []string{"attention", model, "--text", "First", "--format", "bmp"}, code: 2, msg: `--format "bmp" is not text, png or svg`},
		{name: "attention --out with --format text", args: []string{"attention", model, "--text", "First", "--format", "text", "--out", "a.png"}, code: 2, msg: "--out is for pictures; --format text goes to stdout"},
		{name: "attention --out of an unknown picture type", args: []string{"attention", model, "--text", "First", "--out", "a.jpg"}, code: 2,
			msg: "--out a.jpg: the picture format comes from the extension, which must be .png or .svg"},
		{name: "attention --format png --out x.svg", args: []string{"attention", model, "--text", "First", "--format", "png", "--out", "a.svg"}, code: 2,
			msg: "--format png does not match --out a.svg; name the file .png"},
		{name: "attention --out in a missing folder", args: []string{"attention", model, "--text", "First", "--out", "no/such/dir/a.png"}, code: 1, msg: "writing no/such/dir/a.png: no such file or directory"},

		// eval.
		{name: "eval without --data, a model outside a run folder", setup: copied(causalModel, "m.safetensors"),
			args: []string{"eval", "m.safetensors"}, code: 2, msg: "eval needs --data FILE (there is no config.toml beside m.safetensors to take it from)"},
		{name: "eval without --data, invalid config.toml beside the model", setup: modelWithConfig("[data]\nsplit = 2\n"),
			args: []string{"eval", "run"}, code: 2, msg: "reading run/config.toml for the corpus (--data is not given)"},
		{name: "eval --batch 0", args: []string{"eval", model, "--data", tiny, "--batch", "0"}, code: 2, msg: "--batch 0 must be between 1 and 4096"},
		{name: "eval --split 1", args: []string{"eval", model, "--data", tiny, "--split", "1"}, code: 2, msg: "--split 1 must be between 0 and 1"},
		{name: "eval missing data file", args: []string{"eval", model, "--data", "nope.txt"}, code: 2, msg: "--data nope.txt: no such file"},
		{name: "eval corpus of another vocabulary", files: map[string]string{"abc.txt": strings.Repeat("abc cab ", 50)},
			args: []string{"eval", model, "--data", "abc.txt"}, code: 1, msg: "abc.txt has a different vocabulary (4 tokens) from the model's (55 tokens)"},

		// Model files.
		{name: "sample: nonexistent model", args: []string{"sample", "nope.safetensors"}, code: 2, msg: "nope.safetensors: no such model file or run folder"},
		{name: "eval: nonexistent model", args: []string{"eval", "nope.safetensors", "--data", tiny}, code: 2, msg: "nope.safetensors: no such model file or run folder"},
		{name: "inspect: a folder without a model", args: []string{"inspect", "."}, code: 2, msg: ". is a folder without model.safetensors"},
		{name: "inspect: empty file", files: map[string]string{brokenModel: ""},
			args: []string{"inspect", brokenModel}, code: 1, msg: "broken.safetensors: file is empty"},
		{name: "eval: 3-byte file", files: map[string]string{brokenModel: "abc"},
			args: []string{"eval", brokenModel, "--data", tiny}, code: 1, msg: "file is only 3 bytes"},
		{name: "sample: huge header length", files: map[string]string{brokenModel: headerLength(1<<62) + "{}      "},
			args: []string{"sample", brokenModel}, code: 1, msg: "header length 4611686018427387904 exceeds the file size 16"},
		{name: "inspect: header not JSON", files: map[string]string{brokenModel: headerLength(8) + "not json"},
			args: []string{"inspect", brokenModel}, code: 1, msg: "header is not valid JSON"},
		{name: "sample: truncated data", setup: truncatedModel(brokenModel, 100),
			args: []string{"sample", brokenModel}, code: 1, msg: "the file is truncated or its header is wrong"},
		{name: "inspect: tensor of the wrong shape", setup: alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
			tok := f.Tensors["tok.weight"]
			tok.Shape = []int{tok.Shape[1], tok.Shape[0]} // as many values, transposed
			f.Tensors["tok.weight"] = tok
		}), args: []string{"inspect", brokenModel}, code: 1, msg: "tensor tok.weight has shape [8 55], the model's metadata needs [55 8]"},
		{name: "eval: missing tensor", setup: alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
			delete(f.Tensors, "out.bias")
		}), args: []string{"eval", brokenModel, "--data", tiny}, code: 1, msg: "tensor out.bias is missing"},
		{name: "sample: extra tensor", setup: alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
			f.Tensors["blocks.1.att.q.bias"] = modelfile.Tensor{Name: "blocks.1.att.q.bias", Shape: []int{8}, F64: make([]float64, 8)}
		}), args: []string{"sample", brokenModel}, code: 1, msg: "unexpected tensors for this model: blocks.1.att.q.bias"},
		{name: "attention: NaN weights", setup: alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
			f.Tensors["blocks.0.ff.up.weight"].F64[5] = math.NaN()
		}), args: []string{"attention", brokenModel, "--text", "First"}, code: 1, msg: "tensor blocks.0.ff.up.weight holds NaN at entry 5"},
		{name: "sample: format not gptg/1", setup: alteredModel(brokenModel, func(t *testing.T, f *modelfile.File) {
			f.Meta["format"] = "pt"
		}), args: []string{"sample", brokenModel}, code: 1, msg: `not a gptg model file (metadata format is "pt", want "gptg/1")`},
		{name: "inspect: heads not dividing embedding", setup: threeHeads,
			args: []string{"inspect", brokenModel}, code: 1, msg: `broken.safetensors: metadata "model": model.heads: 3 does not divide embedding 8`},
		{name: "sample: heads not dividing embedding", setup: threeHeads,
			args: []string{"sample", brokenModel}, code: 1, msg: `broken.safetensors: metadata "model": model.heads: 3 does not divide embedding 8`},

		// ablate and sweep: run names that would leave the output folder,
		// and plans refused before anything is trained.
		{name: "ablate: config named ...toml", files: map[string]string{"...toml": ""},
			args: []string{"ablate", "...toml", "--out", "x/ab"}, code: 2, msg: `gives the run name "..", which would put its runs outside their own folder`},
		{name: "ablate: config named .toml", files: map[string]string{".toml": ""},
			args: []string{"ablate", ".toml"}, code: 2, msg: `gives the run name "", which is empty`},
		{name: "ablate: one config twice", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "c.toml"}, code: 2, msg: `configs c.toml and c.toml both give the run name "c"`},
		{name: "ablate --seeds 0", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--seeds", "0"}, code: 2, msg: `--seeds: "0" is neither a count from 1 to 1000 nor a list like 1,2,42`},
		{name: "ablate --seeds 1,1", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--seeds", "1,1"}, code: 2, msg: `seed 1 appears twice`},
		{name: "ablate --baseline not a config", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--baseline", "d"}, code: 2, msg: "--baseline d: not one of the configs' names"},
		{name: "sweep without arguments", args: []string{"sweep"}, code: 2, msg: "sweep needs a SWEEP.toml file or one of run, collect, emit"},
		{name: "sweep: unknown key", files: map[string]string{"s.toml": "configs = [\"c.toml\"]\nseed = 2\n", "c.toml": ""},
			args: []string{"sweep", "s.toml"}, code: 2, msg: "sweep file s.toml: unknown key seed"},
		{name: "sweep: impossible value", files: map[string]string{"s.toml": "configs = [\"c.toml\"]\n[set]\n\"model.heads\" = [1, 3]\n", "c.toml": ""},
			args: []string{"sweep", "s.toml"}, code: 2, msg: "model.heads: 3 does not divide embedding 64"},
		{name: "sweep: config named ...toml", files: map[string]string{"s.toml": "configs = [\"...toml\"]\n", "...toml": ""},
			args: []string{"sweep", "s.toml"}, code: 2, msg: `gives the run name ".."`},
		{name: "sweep run: not a sweep folder", args: []string{"sweep", "run", "."}, code: 2, msg: "is not a sweep folder"},
		{name: "sweep run: entry out of range", setup: smallSweep, args: []string{"sweep", "run", "sw", "--index", "5"}, code: 2,
			msg: "entry 5: the sweep in sw has entries 0 to 1"},
		{name: "sweep emit: unknown engine", setup: smallSweep, args: []string{"sweep", "emit", "pbs", "sw"}, code: 2, msg: "sweep emit needs slurm or k8s"},
		{name: "sweep emit k8s without a claim", setup: smallSweep, args: []string{"sweep", "emit", "k8s", "sw"}, code: 2, msg: "sweep emit k8s needs --claim"},

		// nanoGPT checkpoints: pickles, read without running them; the file's fault is exit 2.
		{name: "import without a kind", args: []string{"import", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "import needs the kind of checkpoint"},
		{name: "import without --out", args: []string{"import", "nanogpt", "ckpt.pt"}, code: 2, msg: "import nanogpt needs --out"},
		{name: "import without meta.pkl (a char model)", setup: nanoCheckpoint,
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "no --meta given and no meta.pkl beside ckpt.pt"},
		{name: "import: missing checkpoint", setup: nanoMeta,
			args: []string{"import", "nanogpt", "nope.pt", "--meta", "meta.pkl", "--out", "m.safetensors"}, code: 2, msg: "nope.pt: no such file"},
		{name: "import: not a zip", setup: nanoMeta, files: map[string]string{"ckpt.pt": "PK? no"},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "ckpt.pt: not a PyTorch checkpoint (a zip archive written by torch.save)"},
		{name: "import: truncated checkpoint", setup: nanoTruncated,
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "ckpt.pt: not a PyTorch checkpoint"},
		{name: "import: pickle calling os.system", setup: nanoMeta, files: map[string]string{"ckpt.pt": torchZip("\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsR.")},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: `pickle names the global "os.system", which is not one a nanoGPT checkpoint uses; refused without running it`},
		{name: "import: pickle with a huge length", setup: nanoMeta, files: map[string]string{"ckpt.pt": torchZip("\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x40")},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "claims 4611686018427387904 bytes, only 0 remain"},
		{name: "import: meta.pkl calling eval", setup: nanoCheckpoint, files: map[string]string{"meta.pkl": "\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R."},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: `meta.pkl: pickle names the global "builtins.eval"`},
	}
	rows = append(rows, hardenedInputs(t)...)
	rows = append(rows, corpusInputs(t)...)
	rows = append(rows, pairsInputs()...)
	rows = append(rows, translationInputs(model)...)
	rows = append(rows, translationFlagInputs(t)...)
	rows = append(rows, hostileInputs(t)...)
	rows = append(rows, serveInputs()...)
	rows = append(rows, sweepInputs()...)
	rows = append(rows, argumentInputs(t)...)
	rows = append(rows, outputInputs(t)...)
	rows = append(rows, modelFileInputs(t)...)
	rows = append(rows, importInputs(t)...)
	rows = append(rows, limitInputs(t)...)
	rows = append(rows, runInputs(t)...)
	rows = append(rows, memcapsInputs()...)
	rows = append(rows, unreadInputs()...)
	rows = append(rows, tokensInputs()...)
	rows = append(rows, tokenFileInputs(t)...)
	rows = append(rows, learnedBPEInputs(t)...)
	rows = append(rows, exportInputs(t)...)

	var table []errorDoc
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range row.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if row.setup != nil {
				row.setup(t, dir)
			}
			var limit int64
			if row.headroomMB > 0 {
				limit = addressUsed(t, dir) + row.headroomMB<<10
				os.Remove(filepath.Join(dir, "huge.toml"))
			}
			before := listFiles(t, dir)
			opts := runOptions{stdin: row.stdin, env: row.env}
			if limit > 0 {
				opts.ulimit = fmt.Sprintf("-v %d", limit)
			}
			r := runGptgWith(t, dir, opts, row.args...)

			if r.code != row.code {
				t.Errorf("exit code %d, want %d; stderr: %s; stdout: %.300s", r.code, row.code, r.stderr, r.stdout)
			}
			if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
				t.Errorf("stderr is not exactly one line:\n%s", r.stderr)
			}
			if !strings.Contains(r.stderr, row.msg) {
				t.Errorf("stderr %q\ndoes not contain %q", r.stderr, row.msg)
			}
			if row.maxMB > 0 && r.maxRSSKB > row.maxMB<<10 {
				t.Errorf("peak memory %d MiB, more than %d MiB: the input was allocated before it was refused", r.maxRSSKB>>10, row.maxMB)
			}
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine") {
				t.Errorf("stderr shows a panic:\n%s", r.stderr)
			}
			if after := listFiles(t, dir); !slices.Equal(after, before) {
				t.Errorf("files before the run %v, after %v", before, after)
			}
			table = append(table, errorDoc{row, r, dir})
		})
	}
	checkErrorsDoc(t, table)
}

// runIDs matches a run id (train's newRunID) in a message: random, so
// the table shows one fixed id instead.
var runIDs = regexp.MustCompile(`\b[0-9a-f]{16}\b`)

// errorDoc is one row of docs/errors.md: the input and what gptg said.
type errorDoc struct {
	row badInput
	got result
	dir string
}

// checkErrorsDoc renders docs/errors.md, the table of bad inputs with the
// exact message gptg gives, from the runs above, and fails when the
// committed file differs: the document cannot drift from the program.
// GPTG_UPDATE_ERRORS=1 rewrites it.
func checkErrorsDoc(t *testing.T, table []errorDoc) {
	var b strings.Builder
	b.WriteString("# What gptg says when the input is wrong\n\n")
	b.WriteString("Every row is run through the real binary by `TestBadInputs` (cmd/gptg/errors_test.go),\n")
	b.WriteString("which checks the exit code, that stderr is this one line, that no panic shows and that no\n")
	b.WriteString("file is left behind. The test regenerates this table and fails when it differs;\n")
	b.WriteString("`GPTG_UPDATE_ERRORS=1 go test ./cmd/gptg -run TestBadInputs` rewrites it.\n")
	b.WriteString("`runs/causal` and `runs/unmasked` stand for two tiny trained models, `runs/words` for a word-level one, `data/tiny.txt` for a small corpus.\n\n")
	b.WriteString("Exit codes follow one rule. **2**: the command line asks for something wrong — a flag's value, a config,\n")
	b.WriteString("an input named on it that does not exist, a file or folder of another kind than the command takes (a config or a corpus\n")
	b.WriteString("for a model, a translation model for a language model, a file for a folder output, the filesystem root),\n")
	b.WriteString("a FIFO or device named as an input. **1**: what was named is of the right kind but its content is damaged\n")
	b.WriteString("(a model file's header, metadata or tensors), or the run fails. **130**: interrupted after saving.\n")
	b.WriteString("`TestWrongArgumentExitCodes` (cmd/gptg/arguments_test.go) holds every command to the first half;\n")
	b.WriteString("`python3 testdata/hostile/probe.py GPTG_BINARY` reruns the hostile-input probes of issue #24.\n\n")
	b.WriteString("| # | bad input | command | exit | message (stderr) |\n|---|---|---|---|---|\n")
	cell := strings.NewReplacer("|", `\|`, "\n", " ", "`", "'")
	for i, d := range table {
		clean := strings.NewReplacer(
			d.dir+string(filepath.Separator), "", d.dir, ".",
			fmt.Sprintf("process %d", os.Getpid()), "process 4242",
			filepath.Dir(causalModel), "runs/causal", filepath.Dir(unmaskedModel), "runs/unmasked", filepath.Dir(wordModel), "runs/words",
			testmodel.TinyText(), "data/tiny.txt")
		var args []string
		for _, a := range append(append(slices.Clone(d.row.env), "gptg"), d.row.args...) {
			a = clean.Replace(a)
			if a == "" || strings.ContainsAny(a, " \t\n\"'\\") || len(a) > 40 || !utf8.ValidString(a) {
				a = strconv.Quote(a)
			}
			if r := []rune(a); len(r) > 60 { // cut whole characters: the table stays UTF-8
				a = string(r[:57]) + "…"
			}
			args = append(args, a)
		}
		if d.row.stdin != "" {
			args = append(args, "<", d.row.stdin)
		}
		command, stderr := strings.Join(args, " "), strings.TrimSpace(runIDs.ReplaceAllString(clean.Replace(d.got.stderr), "1234abcd5678ef90"))
		if d.row.headroomMB > 0 {
			command = "ulimit -v N; " + command
			stderr = regexp.MustCompile(`[0-9]+`).ReplaceAllString(stderr, "N")
		}
		fmt.Fprintf(&b, "| %d | %s | `%s` | %d | `%s` |\n", i+1, cell.Replace(d.row.name),
			cell.Replace(command), d.got.code, cell.Replace(stderr))
	}
	const path = "../../docs/errors.md"
	if os.Getenv("GPTG_UPDATE_ERRORS") == "1" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil || string(old) != b.String() {
		t.Errorf("docs/errors.md is missing or out of date (%v): run GPTG_UPDATE_ERRORS=1 go test ./cmd/gptg -run TestBadInputs", err)
	}
}

// cjk is n distinct CJK characters, a prompt no Shakespeare model knows.
func cjk(n int) string {
	var b strings.Builder
	for r := rune(0x4e00); r < 0x4e00+rune(n); r++ {
		b.WriteRune(r)
	}
	return b.String()
}

// copied copies src into the row's directory as name.
func copied(src, name string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		copyFile(t, src, filepath.Join(dir, name))
	}
}

// modelWithConfig makes a run folder "run" holding the tiny causal model
// beside a config.toml with the given text.
func modelWithConfig(configText string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if err := os.MkdirAll(filepath.Join(dir, "run"), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, causalModel, filepath.Join(dir, "run", "model.safetensors"))
		if err := os.WriteFile(filepath.Join(dir, "run", "config.toml"), []byte(configText), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// headerLength is the 8-byte little-endian header length that starts a
// safetensors file.
func headerLength(n uint64) string {
	return string(binary.LittleEndian.AppendUint64(nil, n))
}

// truncatedModel writes the tiny model without its last cut bytes.
func truncatedModel(name string, cut int) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		b, err := os.ReadFile(causalModel)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b[:len(b)-cut], 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// alteredModel writes the tiny model after change has altered it. The file
// stays a valid safetensors file, so only the model checks can catch it.
func alteredModel(name string, change func(t *testing.T, f *modelfile.File)) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		f, err := modelfile.Read(causalModel, modelfile.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		change(t, f)
		var tensors []modelfile.Tensor
		for _, n := range slices.Sorted(maps.Keys(f.Tensors)) {
			tensors = append(tensors, f.Tensors[n])
		}
		if err := modelfile.Write(filepath.Join(dir, name), tensors, f.Meta); err != nil {
			t.Fatal(err)
		}
	}
}

// torchZip is a torch.save-like archive holding data.pkl = pkl.
func torchZip(pkl string) string {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, _ := z.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
	w.Write([]byte(pkl))
	z.Close()
	return buf.String()
}

// nanoFile copies a file of testdata/nanogpt (made by nanoGPT, see make.py)
// into dir, the first cut bytes only when cut > 0.
func nanoFile(t *testing.T, dir, name string, cut int) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "nanogpt", name))
	if err != nil {
		t.Fatal(err)
	}
	if cut > 0 {
		b = b[:cut]
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func nanoMeta(t *testing.T, dir string)       { nanoFile(t, dir, "meta.pkl", 0) }
func nanoCheckpoint(t *testing.T, dir string) { nanoFile(t, dir, "ckpt.pt", 0) }
func nanoTruncated(t *testing.T, dir string) {
	nanoMeta(t, dir)
	nanoFile(t, dir, "ckpt.pt", 50_000)
}

// listFiles returns every file and folder under dir, relative to it, hidden
// ones (such as atomicfile's temporaries) included.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// smallSweep makes a sweep folder sw of two entries (nothing trained).
func smallSweep(t *testing.T, dir string) {
	files := map[string]string{"c.toml": "", "s.toml": "configs = [\"c.toml\"]\nout = \"sw\"\nseeds = 2\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := gptg(t, dir, "sweep", "s.toml"); r.code != 0 {
		t.Fatalf("gptg sweep: %s", r.stderr)
	}
}
