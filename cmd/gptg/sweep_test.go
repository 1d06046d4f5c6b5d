package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/testwait"
)

// gptgEnv runs the binary in dir with extra environment variables; a
// sweep trains several runs in one process, so it may use four times a
// command's CPU.
func gptgEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return runGptg(t, dir, env, 4*commandCPU, args...)
}

// sweepProject writes two tiny configs (steps steps each) and a sweep of
// them over two learning rates (4 entries: a lr1, a lr2, b lr1, b lr2) into a new folder.
func sweepProject(t *testing.T, dataPath string, steps int) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"a.toml": fmt.Sprintf("[data]\npath = %q\nstride = 4\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\ndtype = \"float64\"\n[train]\nbatch = 2\nepochs = 10000\nmax_steps = %d\nlog_every = 10\n", dataPath, steps),
		"b.toml": "extends = \"a.toml\"\n[model]\nheads = 2\n",
		"s.toml": "configs = [\"a.toml\", \"b.toml\"]\nout = \"sw\"\n[set]\n\"train.lr\" = [0.003, 0.01]\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ok(t, dir, "sweep", "s.toml")
	return dir
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestSweepRunsTheTaskEntry: a Slurm array task (SLURM_ARRAY_TASK_ID=3)
// runs exactly entry 3, a Kubernetes pod (JOB_COMPLETION_INDEX=1) entry 1;
// collect then tables the two finished runs and lists the two others.
func TestSweepRunsTheTaskEntry(t *testing.T) {
	dir := sweepProject(t, testmodel.TinyText(), 30)
	folders := []string{"sw/runs/a/train.lr=0.003", "sw/runs/a/train.lr=0.01", "sw/runs/b/train.lr=0.003", "sw/runs/b/train.lr=0.01"}
	r := gptgEnv(t, dir, []string{"SLURM_ARRAY_TASK_ID=3"}, "sweep", "run", "sw")
	if r.code != 0 || !strings.Contains(r.stdout, "entry 3 (from SLURM_ARRAY_TASK_ID)") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for i, f := range folders {
		if got := exists(filepath.Join(dir, f, "model.safetensors")); got != (i == 3) {
			t.Errorf("entry %d's model exists: %v", i, got)
		}
	}
	r = gptgEnv(t, dir, []string{"JOB_COMPLETION_INDEX=1"}, "sweep", "run", "sw")
	if r.code != 0 || !exists(filepath.Join(dir, folders[1], "model.safetensors")) || exists(filepath.Join(dir, folders[0])) {
		t.Fatalf("JOB_COMPLETION_INDEX=1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Requeued: the finished entry is not trained again.
	r = gptgEnv(t, dir, []string{"SLURM_ARRAY_TASK_ID=3"}, "sweep", "run", "sw")
	if r.code != 0 || !strings.Contains(r.stdout, "already finished") {
		t.Errorf("rerun of entry 3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	events, _ := os.ReadFile(filepath.Join(dir, "sw", "events.log"))
	if n := strings.Count(string(events), "entry 3 host"); n != 3 || strings.Count(string(events), ": fresh\n") != 2 || strings.Contains(string(events), "entry 0 ") {
		t.Errorf("events.log:\n%s", events)
	}
	r = gptgEnv(t, dir, nil, "sweep", "collect", "sw")
	md, _ := os.ReadFile(filepath.Join(dir, "sw", "summary.md"))
	if r.code != 0 || !strings.Contains(string(md), "| b train.lr=0.01 | heads=2 train.lr=0.01 train.min_lr=0.001 | 1/1 |") ||
		!strings.Contains(string(md), "| a train.lr=0.003 |  | 0/1 |") || !strings.Contains(string(md), "Runs not finished:") ||
		!strings.Contains(string(md), "- b train.lr=0.003: not started") {
		t.Errorf("collect: exit %d %s\n%s", r.code, r.stderr, md)
	}
	for _, f := range []string{"summary.csv", "runs.csv", "loss.png"} {
		if !exists(filepath.Join(dir, "sw", f)) {
			t.Errorf("collect wrote no %s", f)
		}
	}
}

// TestSweepFailedEntries: a failed entry is remembered, skipped when run
// again, retried with --retry-failed, and forgotten once it finishes.
func TestSweepFailedEntries(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.txt") // missing at first
	dir = sweepProject(t, corpus, 30)
	marker := filepath.Join(dir, "sw", "failed", "0.txt")
	r := gptgEnv(t, dir, nil, "sweep", "run", "sw", "--index", "0")
	if r.code != 1 || !strings.Contains(r.stderr, "1 of 1 runs failed") || !exists(marker) {
		t.Fatalf("failing entry: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = gptgEnv(t, dir, nil, "sweep", "run", "sw", "--index", "0")
	if r.code != 1 || !strings.Contains(r.stdout, "its last attempt failed") || !strings.Contains(r.stdout, "corpus.txt") {
		t.Errorf("skipped entry: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	copyFile(t, testmodel.TinyText(), corpus)
	r = gptgEnv(t, dir, nil, "sweep", "run", "sw", "--index", "0", "--retry-failed")
	if r.code != 0 || exists(marker) || !exists(filepath.Join(dir, "sw/runs/a/train.lr=0.003/model.safetensors")) {
		t.Errorf("retried entry: exit %d marker %v\n%s%s", r.code, exists(marker), r.stdout, r.stderr)
	}
}

// TestSweepEmit writes both job files for a real sweep folder.
func TestSweepEmit(t *testing.T) {
	dir := sweepProject(t, testmodel.TinyText(), 30)
	ok(t, dir, "sweep", "emit", "slurm", "sw", "--parallel", "2", "--gptg", "/usr/local/bin/gptg")
	script, _ := os.ReadFile(filepath.Join(dir, "sw", "sweep.sbatch"))
	abs, _ := filepath.EvalSymlinks(dir)
	for _, want := range []string{"#SBATCH --array=0-3%2\n", "exec /usr/local/bin/gptg sweep run "} {
		if !strings.Contains(string(script), want) {
			t.Errorf("sweep.sbatch lacks %q:\n%s", want, script)
		}
	}
	if !exists(filepath.Join(dir, "sw", "logs")) || (!strings.Contains(string(script), "--chdir="+dir+"\n") && !strings.Contains(string(script), "--chdir="+abs+"\n")) {
		t.Errorf("no logs folder or wrong --chdir:\n%s", script)
	}
	ok(t, dir, "sweep", "emit", "k8s", "sw", "--image", "gptg:dev", "--claim", "work")
	job, _ := os.ReadFile(filepath.Join(dir, "sw", "job.yaml"))
	if !strings.Contains(string(job), "completionMode: Indexed") || !strings.Contains(string(job), "completions: 4") {
		t.Errorf("job.yaml:\n%s", job)
	}
}

// TestSweepNeverTrainsOneRunTwice: two tasks for one entry at once (a
// requeued task while its first copy still runs): gptg train's lock on the
// run folder lets one train; the other says the folder is in use and
// leaves no failure marker, so a later task is not kept from the entry.
func TestSweepNeverTrainsOneRunTwice(t *testing.T) {
	dir := sweepProject(t, testmodel.TinyText(), 1000000)
	run := filepath.Join(dir, "sw/runs/a/train.lr=0.003")
	first := exec.Command(gptgBin, "sweep", "run", "sw", "--index", "0")
	first.Dir = dir
	var out1 bytes.Buffer
	first.Stdout, first.Stderr = &out1, &out1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	if !testwait.For(func() bool { return exists(filepath.Join(run, "metrics.jsonl")) }) {
		t.Fatalf("the first task did not start training:\n%s", out1.String())
	}
	r := gptgEnv(t, dir, nil, "sweep", "run", "sw", "--index", "0")
	if r.code != 1 || !strings.Contains(r.stdout, "run folder is in use by process") || !strings.Contains(r.stderr, "another process is already training 1 of the 1 runs") {
		t.Errorf("second task: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if exists(filepath.Join(dir, "sw/failed/0.txt")) {
		t.Error("a busy run folder was recorded as a failure")
	}
	// The first task is not disturbed: stopped, it saves and exits 130.
	first.Process.Signal(syscall.SIGTERM)
	err := first.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !exists(filepath.Join(run, "checkpoint.safetensors")) {
		t.Errorf("first task: %v\n%s", err, out1.String())
	}
	events, _ := os.ReadFile(filepath.Join(dir, "sw/events.log"))
	if strings.Count(string(events), ": busy: ") != 1 || strings.Count(string(events), ": interrupted\n") != 1 {
		t.Errorf("events.log:\n%s", events)
	}
}

// sweepInputs are job files gptg sweep emit refuses to write.
func sweepInputs() []badInput {
	return []badInput{
		{name: "sweep emit slurm --memory NaN", files: map[string]string{"sw/manifest.jsonl": ""},
			args: []string{"sweep", "emit", "slurm", "sw", "--memory", "NaN"}, code: 2, msg: "--memory NaN must be a number of GiB from 0.25 to 1048576"},
		{name: "sweep emit k8s --mount / (hides the image's files)", setup: smallSweep,
			args: []string{"sweep", "emit", "k8s", "sw", "--claim", "work", "--mount", "/"}, code: 2, msg: "--mount /: the claim would hide the container's own files"},
		{name: "sweep emit k8s --mount with a .. (Kubernetes refuses it)", setup: smallSweep,
			args: []string{"sweep", "emit", "k8s", "sw", "--claim", "work", "--mount", "/work/../etc"}, code: 2, msg: "Kubernetes refuses a mount path with a .. in it"},
		{name: "sweep emit k8s --image with a space", setup: smallSweep,
			args: []string{"sweep", "emit", "k8s", "sw", "--claim", "work", "--image", "gptg 1"}, code: 2, msg: `--image "gptg 1": an image reference holds no spaces`},
	}
}
