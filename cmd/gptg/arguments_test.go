package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
)

// The rows and tests of this file hold every command to the exit-code
// rule: a wrong argument (a missing path, a file or folder of another
// kind, a model of the wrong kind, text that is not UTF-8) is exit 2 with
// one line saying so, and a result that cannot reach standard output is
// exit 1, never a silent 0.

func argumentInputs(t *testing.T) []badInput {
	const cfg = "[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 1\n[train]\nmax_steps = 2\n"
	link := func(target, name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}

	return []badInput{
		// One rule for exit codes: a wrong argument is exit 2.
		{name: "sample: a missing model", args: []string{"sample", "nope"}, code: 2, msg: "nope: no such model file or run folder"},
		{name: "translate: a missing model", args: []string{"translate", "nope", "--text", "a"}, code: 2, msg: "nope: no such model file or run folder"},
		{name: "attention: a corpus instead of a model", args: []string{"attention", "t.txt", "--text", "Fi"}, files: map[string]string{"t.txt": "First Citizen:\nBefore we proceed\n"},
			code: 2, msg: "t.txt is a text file, not a model file"},
		{name: "inspect: a nanoGPT checkpoint instead of a model", setup: nanoCheckpoint, args: []string{"inspect", "ckpt.pt"}, code: 2, msg: "ckpt.pt is a zip archive"},
		{name: "eval /dev/null as the model", args: []string{"eval", "/dev/null", "--data", "x.txt"}, code: 2, msg: "/dev/null is a character device, not a model file"},
		{name: "train --init a missing model", files: map[string]string{"c.toml": "[data]\npath = \"builtin:toy\"\ntokenizer = \"word\"\n"},
			args: []string{"train", "c.toml", "--init", "nope"}, code: 2, msg: "nope: no such model file or run folder"},
		{name: "train --resume a folder that is no run", files: map[string]string{"d/x.txt": ""},
			args: []string{"train", "--resume", "d"}, code: 2, msg: "--resume d: it has no config.toml, so it is not a run folder"},
		{name: "plot a model file", args: []string{"plot", causalModel}, code: 2, msg: "is a file, not a run folder: give its folder"},
		{name: "serve --addr without a port number", args: []string{"serve", ".", "--addr", "localhost:http"}, code: 2, msg: "the port \"http\" is not a number"},
		{name: "graph a model file as its config", setup: func(t *testing.T, dir string) { copyFile(t, causalModel, filepath.Join(dir, "m.safetensors")) },
			args: []string{"graph", "m.safetensors"}, code: 2, msg: "is a safetensors model file (give it to sample, eval or inspect), not a TOML config"},
		{name: "sample a word model with the default prompt \"\\n\" (no --prompt)", setup: copied(wordModel, "w.safetensors"),
			args: []string{"sample", "w.safetensors", "--tokens", "3"}, code: 2, msg: `no --prompt given, and the default prompt "\n" (the run's [sample] prompt) cannot start a sample`},
		{name: "attention: text not UTF-8 (a wrong argument)", args: []string{"attention", causalModel, "--text", "Fi\xffrst"}, code: 2, msg: "--text: not valid UTF-8"},
		{name: "ablate /dev/stdin redirected from a config (each run would read its own stdin)",
			files: map[string]string{"c.toml": cfg}, stdin: "c.toml",
			args: []string{"ablate", "/dev/stdin", "--out", "ab"}, code: 2, msg: "config /dev/stdin: is in /dev; each run reads its config again"},
		{name: "ablate of a config that is a link to /dev/stdin", files: map[string]string{"c.toml": cfg}, stdin: "c.toml", setup: link("/dev/stdin", "x.toml"),
			args: []string{"ablate", "x.toml", "--out", "ab"}, code: 2, msg: "config x.toml: leads to /dev/stdin; each run reads its config again"},
	}
}

// TestWrongArgumentExitCodes is the exit-code rule over every command that
// takes a model, a config or a run folder: given anything of another kind,
// or nothing that exists, each exits 2 with one line.
func TestWrongArgumentExitCodes(t *testing.T) {
	dir := t.TempDir()
	for name, text := range translationFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	translationRun(t, dir)
	copyFile(t, causalModel, filepath.Join(dir, "m.safetensors"))
	nanoCheckpoint(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte("[data]\npath = \"toy.tsv\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	lm := filepath.Dir(causalModel)
	wrong := map[string]string{"a config": "c.toml", "a corpus": "toy.tsv", "a folder without a model": "empty",
		"a missing path": "nope", "a device": "/dev/null", "a nanoGPT checkpoint": "ckpt.pt"}
	commands := map[string]func(arg string) []string{
		"sample":     func(a string) []string { return []string{"sample", a, "--tokens", "2"} },
		"attention":  func(a string) []string { return []string{"attention", a, "--text", "Fi"} },
		"inspect":    func(a string) []string { return []string{"inspect", a} },
		"translate":  func(a string) []string { return []string{"translate", a, "--text", "a1"} },
		"eval":       func(a string) []string { return []string{"eval", a, "--data", "toy.tsv"} },
		"train init": func(a string) []string { return []string{"train", "toy.toml", "--set", "train.out=new", "--init", a} },
		"plot":       func(a string) []string { return []string{"plot", a} },
		"tokens":     func(a string) []string { return []string{"tokens", a, "x"} },
		"export":     func(a string) []string { return []string{"export", a, "--dtype", "bfloat16", "--out", "x.safetensors"} },
	}
	check := func(args []string, msg string) {
		t.Helper()
		r := gptg(t, dir, args...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, msg) {
			t.Errorf("gptg %q: exit %d, stderr %q; want exit 2 and one line holding %q", args, r.code, r.stderr, msg)
		}
	}
	for cmd, args := range commands {
		for what, arg := range wrong {
			if cmd == "plot" && what == "a folder without a model" {
				continue // a run folder needs no model to be plotted
			}
			t.Run(cmd+" given "+what, func(t *testing.T) { check(args(arg), "") })
		}
	}
	// A model of the other kind.
	check([]string{"sample", "runs/toy"}, "is a translation model")
	check([]string{"translate", lm}, "is a language model")
	check([]string{"translate", "m.safetensors", "--text", "a1"}, "is a language model")
	for _, args := range [][]string{
		{"ablate", "c.toml", "--out", "toy.tsv"},
		{"sweep", "run", "toy.tsv"},
		{"train", "--resume", "toy.tsv"},
		{"train", "--resume", "nope"},
		{"serve", "toy.tsv"},
		{"import", "nanogpt", "m.safetensors", "--meta", "toy.tsv", "--out", "x.safetensors"},
	} {
		check(args, "")
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Errorf("a refused train --init left the folder new behind")
	}
}

// TestResultLostOnStdout: a command whose result is its standard output,
// started with stdout closed (the Go runtime puts /dev/null there) or
// redirected to a full disk, exits 1 saying so, never 0 with the result
// gone. `> /dev/null`, a discard asked for, stays exit 0, and so does
// train, whose stdout is only progress.
func TestResultLostOnStdout(t *testing.T) {
	dir := t.TempDir()
	config := fmt.Sprintf("[data]\npath = %q\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\n[train]\nbatch = 2\nmax_steps = 2\nout = \"run\"\n", testmodel.TinyText())
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := func(script string, args ...string) (int, string) {
		cmd := exec.Command("sh", append([]string{"-c", script, gptgBin}, args...)...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, stderr.String()
	}
	for _, args := range [][]string{
		{"graph", "c.toml"}, {"graph", "c.toml", "--dot", "-"}, {"inspect", causalModel}, {"eval", causalModel, "--data", testmodel.TinyText()},
		{"attention", causalModel, "--text", "First"}, {"sample", causalModel, "--tokens", "3"}, {"data", "toy", "--out", "-", "--sentences", "3"},
	} {
		if code, stderr := sh(`exec "$0" "$@" >&-`, args...); code != 1 || !strings.Contains(stderr, "standard output is closed") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v >&-: exit %d, stderr %q", args, code, stderr)
		}
		if code, stderr := sh(`exec "$0" "$@" >/dev/full`, args...); code != 1 || !strings.Contains(stderr, "no space left on device") {
			t.Errorf("%v >/dev/full: exit %d, stderr %q", args, code, stderr)
		}
		if code, stderr := sh(`exec "$0" "$@" >/dev/null`, args...); code != 0 {
			t.Errorf("%v >/dev/null: exit %d, stderr %q", args, code, stderr)
		}
	}
	if code, stderr := sh(`exec "$0" train c.toml >&-`); code != 0 || !exists(filepath.Join(dir, "run/model.safetensors")) {
		t.Errorf("train >&-: exit %d, stderr %q", code, stderr)
	}
}

// TestRemovedWorkingFolder: a command run from a folder removed under the
// shell says so, instead of "getwd: no such file or directory" after a
// config's name or a bare "no such file or directory" (exit 1) for data toy.
func TestRemovedWorkingFolder(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"data", "toy", "--out", "t.txt"}, {"graph", "../c.toml"}} {
		cmd := exec.Command("sh", append([]string{"-c", `mkdir gone && cd gone && rmdir ../gone && exec "$0" "$@"`, gptgBin}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 2 || !strings.Contains(string(out), "the current folder no longer exists") || strings.Count(string(out), "\n") != 1 {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
}

// TestFlagErrorsSayDoubleDash: the flag package's own errors (an unknown
// flag, a bad value, a missing argument) name flags as the help and the
// docs do, --threads, not Go's -threads, in every command.
func TestFlagErrorsSayDoubleDash(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "m.safetensors", "--threads", "-3"}, `invalid value "-3" for flag --threads:`},
		{[]string{"serve", ".", "--threads", "1.5"}, `invalid value "1.5" for flag --threads:`},
		{[]string{"sample", "m.safetensors", "--tokens"}, "flag needs an argument: --tokens"},
		{[]string{"graph", "c.toml", "--forward=maybe"}, `invalid boolean value "maybe" for --forward:`},
		{[]string{"ablate", "c.toml", "--jbos", "2"}, "flag provided but not defined: --jbos; did you mean --jobs?"},
		{[]string{"sweep", "run", "sw", "--index", "x"}, `invalid value "x" for flag --index:`},
	} {
		r := gptg(t, dir, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("gptg %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}
