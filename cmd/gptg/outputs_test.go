package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/testwait"
)

// The rows and tests of this file hold every file gptg writes to one
// rule: an output never replaces a file it did not write (unless --force
// says so), never writes through a link or into a FIFO planted where it
// writes, and leaves nothing half-made when it fails.

func outputInputs(t *testing.T) []badInput {
	tiny := testmodel.TinyText()
	pairsFiles := func(more map[string]string) map[string]string {
		m := translationFiles()
		maps.Copy(m, more)
		return m
	}
	cfg := map[string]string{"c.toml": "[data]\npath = \"" + tiny + "\"\n[train]\nmax_steps = 2\nout = \"runs/c\"\n"}
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
		{name: "train --cpuprofile inside the run folder it is about to make", files: map[string]string{"c.toml": "[model]\ncontext = 8\n[train]\nout = \"runs/q\"\n"},
			args: []string{"train", "c.toml", "--cpuprofile", "runs/q/p.prof"}, code: 2, msg: `--cpuprofile runs/q/p.prof: no folder runs/q to write it in`},
		{name: "ablate --out a file", files: map[string]string{"c.toml": "", "notes.txt": "mine\n"},
			args: []string{"ablate", "c.toml", "--out", "notes.txt"}, code: 2, msg: "--out notes.txt: exists and is not a folder"},
		{name: "ablate --out /", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--out", "/"}, code: 2, msg: "--out /: is the filesystem root"},
		{name: "ablate --out a run folder", files: map[string]string{"c.toml": "", "run/config.toml": ""},
			args: []string{"ablate", "c.toml", "--out", "run"}, code: 2, msg: "--out run: is a run folder (it holds config.toml)"},
		{name: "ablate --set train.out", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--set", "train.out=/tmp/elsewhere"}, code: 2, msg: "train.out cannot be set"},
		{name: "sweep: [set] train.out", files: map[string]string{"c.toml": "", "s.toml": "configs = [\"c.toml\"]\nout = \"sw\"\n[set]\n\"train.out\" = \"/tmp/elsewhere\"\n"},
			args: []string{"sweep", "s.toml"}, code: 2, msg: "train.out cannot be set"},
		{name: "data toy --out a path through a file", files: map[string]string{"f.txt": "x"},
			args: []string{"data", "toy", "--out", "f.txt/t.txt"}, code: 2, msg: "a part of its path before the file name is a file"},
		{name: "data toy --out ending in /", args: []string{"data", "toy", "--out", "new/"}, code: 2, msg: "--out new/: ends in /"},
		{name: "sweep run: events.log a named pipe", setup: fifo("sw/events.log"),
			args: []string{"sweep", "run", "sw", "--index", "0"}, code: 1, msg: "sw/events.log: is a named pipe (FIFO) where gptg keeps a log of its own"},
		{name: "sweep run: events.log a link to the config", setup: link("../c.toml", "sw/events.log"),
			args: []string{"sweep", "run", "sw", "--index", "0"}, code: 1, msg: "sw/events.log: is a symbolic link where gptg keeps a log of its own"},
		{name: "train --resume: metrics.jsonl a link to a file outside the run", setup: func(t *testing.T, dir string) {
			lmRun(t, dir)
			linkOut(t, dir, "runs/lm", "metrics.jsonl")
		}, args: []string{"train", "--resume", "runs/lm", "--set", "train.max_steps=4"}, code: 1,
			msg: `runs/lm/metrics.jsonl is a symbolic link (to ../../outside-metrics.jsonl): a resume rewrites the run's files`},
		{name: "train --resume: a translation run's checkpoint a link outside the run", setup: func(t *testing.T, dir string) {
			for name, text := range translationFiles() {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			translationRun(t, dir)
			linkOut(t, dir, "runs/toy", "checkpoint.safetensors")
		}, args: []string{"train", "--resume", "runs/toy", "--set", "train.max_steps=8"}, code: 1,
			msg: "runs/toy/checkpoint.safetensors is a symbolic link"},
		{name: "train --resume: the lock file a hard link to a file outside the run", setup: func(t *testing.T, dir string) {
			lmRun(t, dir)
			hardLinkLock(t, dir)
		}, args: []string{"train", "--resume", "runs/lm", "--set", "train.max_steps=4"}, code: 1,
			msg: "runs/lm: its lock file .gptg.lock has 2 names (a hard link to another file, whose content gptg would overwrite): remove runs/lm/.gptg.lock"},
	}
}

// TestOutputsWrittenWhenAllowed: the outputs that the rows above refuse work when
// they should: data export and graph --dot write only their content to
// standard output for -, data pairs --out replaces its own files and,
// with --force, others; a profile is written after a run, and replaces a
// profile.
func TestOutputsWrittenWhenAllowed(t *testing.T) {
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

// TestAblateTablesReplaceLinks: summary.md a link to the config the
// ablation reads and runs.csv a link to a file elsewhere: the tables
// replace the links, and the config and the other file keep their bytes.
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

// TestRunModelFilesReplaceLinks: a run's model.safetensors and
// checkpoint.safetensors are files it names itself; a link planted at
// their path once the run has started (and cleared the folder) is
// replaced by the run's file, never written through to the file it
// names (modelfile.WriteOwn, not the link-following modelfile.Write).
func TestRunModelFilesReplaceLinks(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"precious.txt": "precious",
		"c.toml": "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 1\n" +
			"[train]\nbatch = 2\nmax_steps = 1000\neval_batches = 1\ncheckpoint_every = 100000\nout = \"runs/c\"\n"})
	cmd := gptgCommand(context.Background(), dir, "", "train", "c.toml", "--quiet")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	run := filepath.Join(dir, "runs", "c")
	waitFor(t, filepath.Join(run, "metrics.jsonl")) // written once the folder is cleared
	cmd.Process.Signal(syscall.SIGSTOP)
	for _, name := range []string{"model.safetensors", "checkpoint.safetensors"} {
		if err := os.Symlink("../../precious.txt", filepath.Join(run, name)); err != nil {
			t.Fatalf("planting a link at %s while the run trains: %v (did it finish first?)", name, err)
		}
	}
	cmd.Process.Signal(syscall.SIGCONT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gptg train c.toml: %v: %s", err, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "precious.txt")); string(b) != "precious" {
		t.Errorf("the run wrote through a link in its folder: precious.txt holds %.30q", b)
	}
	for _, name := range []string{"model.safetensors", "checkpoint.safetensors"} {
		if info, err := os.Lstat(filepath.Join(run, name)); err != nil || !info.Mode().IsRegular() {
			t.Errorf("runs/c/%s is not a regular file after the run (%v)", name, err)
		}
	}
	ok(t, dir, "inspect", "runs/c")
}

// waitFor waits until path exists.
func waitFor(t *testing.T, path string) {
	t.Helper()
	testwait.Until(t, path+" to appear", func() bool { return exists(path) })
}

// linkOut moves dir/run/name to dir/outside-name and leaves a link to it.
func linkOut(t *testing.T, dir, run, name string) string {
	t.Helper()
	p, out := filepath.Join(dir, run, name), filepath.Join(dir, "outside-"+name)
	if err := os.Rename(p, out); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "outside-"+name), p); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestResumeWritesNoLinkedFile: a resume of a run one of whose four files
// is a link to a file outside the run folder is refused, and the file the
// link names keeps its bytes (a resume rewrites or appends to each of
// them).
func TestResumeWritesNoLinkedFile(t *testing.T) {
	for _, name := range []string{"config.toml", "metrics.jsonl", "checkpoint.safetensors", "model.safetensors"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			lmRun(t, dir)
			out := linkOut(t, dir, "runs/lm", name)
			before, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			r := gptg(t, dir, "train", "--resume", "runs/lm", "--set", "train.max_steps=4")
			if r.code != 1 || !strings.Contains(r.stderr, "is a symbolic link") {
				t.Errorf("exit %d, stderr %q; want exit 1 naming the link", r.code, r.stderr)
			}
			if after, err := os.ReadFile(out); err != nil || !bytes.Equal(after, before) {
				t.Errorf("the resume wrote through runs/lm/%s into the file outside the run", name)
			}
		})
	}
}

// hardLinkLock makes runs/lm's lock file a second name of dir/precious.txt.
func hardLinkLock(t *testing.T, dir string) {
	t.Helper()
	lock := filepath.Join(dir, "runs/lm/.gptg.lock")
	if err := os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "precious.txt"), lock); err != nil {
		t.Fatal(err)
	}
}

// TestLockHardLinkKeepsFile: the lock file as a hard link to another file
// is refused before the pid is written into it: "keep me" stays.
func TestLockHardLinkKeepsFile(t *testing.T) {
	dir := t.TempDir()
	lmRun(t, dir)
	hardLinkLock(t, dir)
	for _, args := range [][]string{{"train", "--resume", "runs/lm", "--set", "train.max_steps=4"}, {"train", "lm.toml", "--force"}} {
		r := gptg(t, dir, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "hard link") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 naming the hard link", args, r.code, r.stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "precious.txt")); string(b) != "keep me\n" {
			t.Errorf("%v: the file the lock file links to now holds %q", args, b)
		}
	}
}

// TestStaleTempsRemoved: the temporary files a killed run leaves beside its
// checkpoint and model (atomicfile's .NAME.tmpNNN) are deleted by the next
// resume or --force start under the run's lock; any other file stays.
func TestStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	lmRun(t, dir)
	run := filepath.Join(dir, "runs/lm")
	stale := []string{".checkpoint.safetensors.tmp123", ".model.safetensors.tmp9", ".metrics.jsonl.tmp1", ".config.toml.tmp77"}
	keep := []string{"notes.txt", ".other.tmp5"}
	write := func() {
		for _, n := range append(stale, keep...) {
			if err := os.WriteFile(filepath.Join(run, n), []byte("half"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(how string) {
		for _, n := range stale {
			if _, err := os.Lstat(filepath.Join(run, n)); err == nil {
				t.Errorf("%s left %s behind", how, n)
			}
		}
		for _, n := range keep {
			if _, err := os.Lstat(filepath.Join(run, n)); err != nil {
				t.Errorf("%s removed %s, which is not the run's", how, n)
			}
		}
	}
	write()
	if r := gptg(t, dir, "train", "--resume", "runs/lm", "--set", "train.max_steps=4", "--quiet"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	check("train --resume")
	write()
	if r := gptg(t, dir, "train", "lm.toml", "--force", "--quiet"); r.code != 0 {
		t.Fatalf("train --force: exit %d: %s", r.code, r.stderr)
	}
	check("train --force")
}

// TestDataOutputFailureLeavesNoFolders: data toy and data export make the
// folders --out names; when the write then fails (here ulimit -f 0: the
// file may not grow), the folders they made are removed again, and a
// folder that was there stays.
func TestDataOutputFailureLeavesNoFolders(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"data", "toy", "--out", "a/b/t.txt", "--sentences", "10"},
		{"data", "export", "toy", "--out", "kept/b/c/t.txt"},
	} {
		r := runGptgWith(t, dir, runOptions{ulimit: "-f 0"}, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "file too large") {
			t.Errorf("gptg %s under ulimit -f 0: exit %d, stderr %q; want exit 1, file too large", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if files := listFiles(t, dir); !slices.Equal(files, []string{"kept"}) {
		t.Errorf("files left: %v, want only kept (the folder that was there)", files)
	}
}
