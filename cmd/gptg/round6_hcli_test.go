package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/testmodel"
)

// The rows and tests of this file are the sixth round of hostile input on
// the command-line surface (issue #24; probes in
// testdata/hostile/probes_hcli.py): files that gptg names itself inside a
// folder the user named (an ablation's tables, a sweep's manifest,
// scripts, events.log and failed/) are never followed through a link or
// opened when they are a FIFO; a prompt outside the vocabulary is a wrong
// argument (exit 2, as translate's too-long sentence); a removed current
// folder is said in one line.

func round6HcliInputs(t *testing.T) []badInput {
	fifo := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			smallSweep(t, dir)
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	link := func(target, name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			smallSweep(t, dir)
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []badInput{
		{name: "sweep run: events.log a named pipe (hung before)", setup: fifo("sw/events.log"),
			args: []string{"sweep", "run", "sw", "--index", "0"}, code: 1, msg: "sw/events.log: is a named pipe (FIFO) where gptg keeps a log of its own"},
		{name: "sweep run: events.log a link to the config (appended to it before)", setup: link("../c.toml", "sw/events.log"),
			args: []string{"sweep", "run", "sw", "--index", "0"}, code: 1, msg: "sw/events.log: is a symbolic link where gptg keeps a log of its own"},
		{name: "sweep emit k8s --mount / (hides the image's files)", setup: smallSweep,
			args: []string{"sweep", "emit", "k8s", "sw", "--claim", "work", "--mount", "/"}, code: 2, msg: "--mount /: the claim would hide the container's own files"},
		{name: "sweep emit k8s --mount with a .. (Kubernetes refuses it)", setup: smallSweep,
			args: []string{"sweep", "emit", "k8s", "sw", "--claim", "work", "--mount", "/work/../etc"}, code: 2, msg: "Kubernetes refuses a mount path with a .. in it"},
		{name: "sweep emit k8s --image with a space", setup: smallSweep,
			args: []string{"sweep", "emit", "k8s", "sw", "--claim", "work", "--image", "gptg 1"}, code: 2, msg: `--image "gptg 1": an image reference holds no spaces`},
		{name: "sample a word model with the default prompt \"\\n\" (no --prompt)", setup: copied(wordModel, "w.safetensors"),
			args: []string{"sample", "w.safetensors", "--tokens", "3"}, code: 2, msg: `no --prompt given, and the default prompt "\n" (the run's [sample] prompt) cannot start a sample`},
		{name: "train --cpuprofile inside the run folder it is about to make", files: map[string]string{"c.toml": "[model]\ncontext = 8\n[train]\nout = \"runs/q\"\n"},
			args: []string{"train", "c.toml", "--cpuprofile", "runs/q/p.prof"}, code: 2, msg: `--cpuprofile runs/q/p.prof: no folder runs/q to write it in`},
		{name: "attention: text not UTF-8 (a wrong argument)", args: []string{"attention", causalModel, "--text", "Fi\xffrst"}, code: 2, msg: "--text: not valid UTF-8"},
	}
}

// outsideFile is a file outside the command's folders that a planted link
// leads to; its content must survive.
func outsideFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "victim.txt")
	if err := os.WriteFile(p, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sameContent(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s was written through a link: now %.80q (err %v)", path, b, err)
	}
}

func regular(t *testing.T, path string) {
	t.Helper()
	if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
		t.Errorf("%s is not a regular file after the run (%v)", path, err)
	}
}

// TestAblateTablesReplaceLinks: summary.md a link to the config the
// ablation reads and runs.csv a link to a file elsewhere — before, the
// table overwrote the config and the other file.
func TestAblateTablesReplaceLinks(t *testing.T) {
	dir := t.TempDir()
	config := fmt.Sprintf("[data]\npath = %q\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\n[train]\nbatch = 2\nmax_steps = 2\n", testmodel.TinyText())
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	victim := outsideFile(t)
	os.Mkdir(filepath.Join(dir, "ab"), 0o755)
	for name, target := range map[string]string{"summary.md": "../c.toml", "runs.csv": victim, "loss.png": victim} {
		if err := os.Symlink(target, filepath.Join(dir, "ab", name)); err != nil {
			t.Fatal(err)
		}
	}
	r := gptgEnv(t, dir, nil, "ablate", "c.toml", "--out", "ab")
	if r.code != 0 {
		t.Fatalf("ablate: exit %d\n%s", r.code, r.stderr)
	}
	sameContent(t, filepath.Join(dir, "c.toml"), config)
	sameContent(t, victim, "precious\n")
	for _, name := range []string{"summary.md", "runs.csv", "loss.png"} {
		regular(t, filepath.Join(dir, "ab", name))
	}
}

// TestSweepFilesReplaceLinks: the sweep's emitted scripts over links to
// an input and to a file elsewhere, and its failed/ folder a link to
// another folder.
func TestSweepFilesReplaceLinks(t *testing.T) {
	dir := t.TempDir()
	smallSweep(t, dir)
	victim := outsideFile(t)
	os.Symlink(victim, filepath.Join(dir, "sw/sweep.sbatch"))
	os.Symlink("../s.toml", filepath.Join(dir, "sw/job.yaml"))
	sweepFile, _ := os.ReadFile(filepath.Join(dir, "s.toml"))
	if r := gptg(t, dir, "sweep", "emit", "slurm", "sw"); r.code != 0 {
		t.Fatalf("emit slurm: exit %d\n%s", r.code, r.stderr)
	}
	if r := gptg(t, dir, "sweep", "emit", "k8s", "sw", "--claim", "work"); r.code != 0 {
		t.Fatalf("emit k8s: exit %d\n%s", r.code, r.stderr)
	}
	sameContent(t, victim, "precious\n")
	sameContent(t, filepath.Join(dir, "s.toml"), string(sweepFile))
	regular(t, filepath.Join(dir, "sw/sweep.sbatch"))
	regular(t, filepath.Join(dir, "sw/job.yaml"))

	elsewhere := t.TempDir()
	os.Symlink(elsewhere, filepath.Join(dir, "sw/failed"))
	r := gptgEnv(t, dir, nil, "sweep", "run", "sw", "--index", "0")
	if r.code != 1 || !strings.Contains(r.stderr, "sw/failed: is a symbolic link where gptg keeps a folder of its own") {
		t.Errorf("failed/ a link: exit %d\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("sweep run wrote %s into the folder failed/ leads to", entries[0].Name())
	}
}

// TestResultLostOnStdout: a command whose result is its standard output,
// started with stdout closed (the Go runtime puts /dev/null there) or
// redirected to a full disk, exits 1 saying so; before, eval, inspect,
// graph and attention exited 0 with the result gone, and the others too
// with stdout closed. `> /dev/null`, a discard asked for, stays exit 0,
// and so does train, whose stdout is only progress.
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

// TestAblateWordConfigWithoutPrompt: a word-level config that keeps the
// default [sample] prompt "\n" trains; its sample cannot start (no word in
// it), which the table says — before, the run was listed as failed ("the
// prompt has no tokens") and ablate exited 1.
func TestAblateWordConfigWithoutPrompt(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"words.txt": strings.Repeat("the cat sees the dog . the dog sees a cat .\n", 80),
		"w.toml":    "[data]\npath = \"words.txt\"\ntokenizer = \"word\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\n[train]\nbatch = 2\nmax_steps = 2\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := gptgEnv(t, dir, nil, "ablate", "w.toml", "--out", "ab")
	summary, _ := os.ReadFile(filepath.Join(dir, "ab/summary.md"))
	if r.code != 0 || !strings.Contains(string(summary), "(no sample: the prompt") {
		t.Errorf("exit %d\n%s\nsummary.md:\n%s", r.code, r.stderr, summary)
	}
}

// TestAttentionPictureBounded: a picture of more heatmap cells than gonum
// can draw in reasonable time is refused at once, naming how many tokens
// fit; before, a 4×4-head model over 256 tokens drew for minutes and GBs
// (an imported GPT-2 over 1,024 tokens would need 275 GB).
func TestAttentionPictureBounded(t *testing.T) {
	dir := t.TempDir()
	config := fmt.Sprintf("[data]\npath = %q\n[model]\ncontext = 300\nembedding = 8\nblocks = 1\nheads = 1\n[train]\nbatch = 1\nmax_steps = 1\nout = \"run\"\n", testmodel.TinyText())
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "train", "c.toml", "--quiet")
	text, err := os.ReadFile(testmodel.TinyText())
	if err != nil || len(text) < 300 {
		t.Fatalf("corpus: %v", err)
	}
	start := time.Now()
	r := gptg(t, dir, "attention", "run", "--text", string(text[:300]), "--out", "a.png")
	if r.code != 2 || !strings.Contains(r.stderr, "give a --text of at most 256 tokens") || exists(filepath.Join(dir, "a.png")) {
		t.Errorf("exit %d, a.png %v, stderr %s", r.code, exists(filepath.Join(dir, "a.png")), r.stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("refused after %v", d)
	}
	if r := gptg(t, dir, "attention", "run", "--text", string(text[:256]), "--out", "a.svg"); r.code != 0 {
		t.Errorf("256 tokens as svg: exit %d, %s", r.code, r.stderr)
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
