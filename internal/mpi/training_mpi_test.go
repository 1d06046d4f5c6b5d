//go:build mpi

package mpi_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests run gptg train --distributed under Open MPI's mpirun
// (.ci/mpi installs it and runs them): go test -tags mpi ./internal/mpi/.

// smallConfig is a word model of the built-in toy grammar whose steps are
// four batches (train.grad_accum), so that 1, 2 and 4 ranks can share
// them; with dropout, so that each batch's masks must follow it to its rank.
const smallConfig = `[data]
path = "builtin:toy"
tokenizer = "word"
split = 0.9

[model]
context = 16
embedding = 32
blocks = 2
heads = 2
qkv = true
mask = true
residual = true
norm = "pre"
activation = "gelu"
dropout = 0.1

[train]
batch = 4
grad_accum = 4
max_steps = 30
lr = 3e-3
warmup = 5
eval_every = 15
log_every = 10
checkpoint_every = 10
`

var bin string // gptg built with MPI, for every test (TestMain)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gptg-mpi-test-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "gptg")
	build := exec.Command("go", "build", "-tags", "mpi", "-o", bin, "github.com/gptg/gptg/cmd/gptg")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic(fmt.Sprintf("go build -tags mpi: %v\n%s", err, out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// setUp writes the config into a temporary folder and returns it.
func setUp(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Fatal("mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small.toml"), []byte(smallConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mpirun runs bin with args on ranks processes in dir.
func mpirun(t *testing.T, dir string, ranks int, bin string, args ...string) *exec.Cmd {
	t.Helper()
	a := []string{"-np", strconv(ranks), "--oversubscribe"}
	if os.Geteuid() == 0 {
		a = append(a, "--allow-run-as-root")
	}
	cmd := exec.Command("mpirun", append(append(a, bin), args...)...)
	cmd.Dir = dir
	return cmd
}

func strconv(n int) string { return string(rune('0' + n)) }

func run(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return string(out)
}

func same(t *testing.T, dir, a, b, file string) {
	t.Helper()
	x, err := os.ReadFile(filepath.Join(dir, a, file))
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(filepath.Join(dir, b, file))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Errorf("%s/%s and %s/%s differ: the ranks did not give one process's weights", a, file, b, file)
	}
}

// TestDistributedGivesOneProcessWeights: 2 and 4 ranks give the model
// file of one process, byte for byte (weights and all), and the same
// losses and gradient norms in metrics.jsonl; only rank 0 writes.
func TestDistributedGivesOneProcessWeights(t *testing.T) {
	dir := setUp(t)
	one := exec.Command(bin, "train", "small.toml", "--set", "train.out=one", "--quiet")
	one.Dir = dir
	run(t, one)
	for _, n := range []int{2, 4} {
		out := "ranks" + strconv(n)
		log := run(t, mpirun(t, dir, n, bin, "train", "small.toml", "--set", "train.out="+out, "--quiet", "--distributed"))
		same(t, dir, "one", out, "model.safetensors")
		if got := strings.Count(log, "done: 30 steps"); got != 1 {
			t.Errorf("%d ranks: %d summaries, want rank 0's alone:\n%s", n, got, log)
		}
		x, _ := os.ReadFile(filepath.Join(dir, "one", "metrics.jsonl"))
		y, _ := os.ReadFile(filepath.Join(dir, out, "metrics.jsonl"))
		if a, b := lossColumns(string(x)), lossColumns(string(y)); a != b || a == "" {
			t.Errorf("%d ranks: losses and norms\n%s\nwant one process's\n%s", n, b, a)
		}
	}
}

// lossColumns keeps each metrics row's step, loss, grad_norm and
// test_loss (the timings differ from run to run).
func lossColumns(jsonl string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(jsonl), "\n") {
		for _, f := range strings.Split(strings.Trim(line, "{}"), ",") {
			k, _, _ := strings.Cut(f, ":")
			switch k {
			case `"step"`, `"loss"`, `"grad_norm"`, `"test_loss"`:
				b.WriteString(f + " ")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestDistributedRefusals: a rank count that does not divide
// train.grad_accum, and ranks on different configs, are refused with one
// line from rank 0 (exit 2) before the run folder exists.
func TestDistributedRefusals(t *testing.T) {
	dir := setUp(t)
	cmd := mpirun(t, dir, 3, bin, "train", "small.toml", "--set", "train.out=three", "--quiet", "--distributed")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "train.grad_accum = 4 (the batches of a step, which the ranks share) is not a multiple of 3") {
		t.Errorf("3 ranks of grad_accum 4: %v\n%s", err, out)
	}
	if strings.Count(string(out), "gptg train:") != 1 {
		t.Errorf("3 ranks: want one line from rank 0, got\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "three")); err == nil {
		t.Error("the refused run left its run folder")
	}
	// Two programs in one job (mpirun's A : B): rank 1 has another lr.
	args := []string{"-np", "1", bin, "train", "small.toml", "--set", "train.out=mixed", "--quiet", "--distributed", ":",
		"-np", "1", bin, "train", "small.toml", "--set", "train.out=mixed", "--set", "train.lr=1e-3", "--quiet", "--distributed"}
	if os.Geteuid() == 0 {
		args = append([]string{"--allow-run-as-root"}, args...)
	}
	cmd = exec.Command("mpirun", args...)
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "rank 1's config differs from rank 0's") || strings.Count(string(out), "gptg train:") != 1 {
		t.Errorf("mismatched configs: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "mixed")); err == nil {
		t.Error("the refused run left its run folder")
	}
}

// TestRankDeathResumes kills rank 1 of a 2-rank run once a checkpoint is
// written: rank 0 says so and where to resume, and 4 ranks resume it to
// one process's weights.
func TestRankDeathResumes(t *testing.T) {
	dir := setUp(t)
	// Long enough that rank 1 dies mid-run on a quiet machine too, as in
	// TestInterruptSavesAndResumes.
	long := func(out string) []string {
		return []string{"train", "small.toml", "--set", "train.out=" + out, "--set", "train.max_steps=8000", "--set", "train.checkpoint_every=20", "--set", "train.eval_every=4000", "--quiet"}
	}
	one := exec.Command(bin, long("one")...)
	one.Dir = dir
	run(t, one)

	_, log, done := atFirstCheckpoint(t, dir, "killed", append(long("killed"), "--distributed"))
	rank1 := rankPID(t, bin, 1)
	if err := exec.Command("kill", "-9", rank1).Run(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the job whose rank 1 was killed succeeded:\n%s", log.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the job did not end a minute after rank 1 died:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "gptg train: rank 0: the job was stopped while rank 0 waited for the other ranks") ||
		!strings.Contains(log.String(), "continue with gptg train --resume killed --distributed") {
		t.Errorf("rank 0 did not say what happened and how to go on:\n%s", log.String())
	}
	run(t, mpirun(t, dir, 4, bin, "train", "--resume", "killed", "--quiet", "--distributed"))
	same(t, dir, "one", "killed", "model.safetensors")
}

// atFirstCheckpoint starts gptg with args on 2 ranks in dir and returns
// once the run folder out holds its first checkpoint: the job, its output
// (still growing) and the channel its end is sent on.
func atFirstCheckpoint(t *testing.T, dir, out string, args []string) (*exec.Cmd, *bytes.Buffer, <-chan error) {
	t.Helper()
	cmd := mpirun(t, dir, 2, bin, args...)
	log := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, out, "checkpoint.safetensors")); err == nil {
			return cmd, log, done
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after a minute:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rankPID finds the process of bin that is rank r (Open MPI puts the rank
// in each process's environment).
func rankPID(t *testing.T, bin string, r int) string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join(p, "exe"))
		if err != nil || exe != bin {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == "OMPI_COMM_WORLD_RANK="+strconv(r) {
				return filepath.Base(p)
			}
		}
	}
	t.Fatalf("no process of %s is rank %d", bin, r)
	return ""
}

// TestInterruptSavesAndResumes sends SIGINT to mpirun mid-run, as Ctrl-C
// does: the ranks stop after the same step, rank 0 saves and says how to
// resume (the others wait for its save: mpirun ends the job when one
// exits), and 4 ranks resume the run to one process's weights.
func TestInterruptSavesAndResumes(t *testing.T) {
	dir := setUp(t)
	// Long enough that the interrupt, sent at the first checkpoint, lands
	// mid-run on a quiet machine too (400 steps took 0.6 s there).
	long := func(out string) []string {
		return []string{"train", "small.toml", "--set", "train.out=" + out, "--set", "train.max_steps=8000", "--set", "train.checkpoint_every=20", "--set", "train.eval_every=4000"}
	}
	one := exec.Command(bin, append(long("one"), "--quiet")...)
	one.Dir = dir
	run(t, one)

	cmd, log, done := atFirstCheckpoint(t, dir, "stopped", append(long("stopped"), "--distributed"))
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the job did not end a minute after SIGINT:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "checkpoint and model saved in stopped") ||
		!strings.Contains(log.String(), "resume with: gptg train --resume stopped --distributed") {
		t.Fatalf("rank 0 did not save and say how to resume:\n%s", log.String())
	}
	if strings.Contains(log.String(), "done: 8000 steps") {
		t.Fatalf("the run finished before the interrupt reached it:\n%s", log.String())
	}
	run(t, mpirun(t, dir, 4, bin, "train", "--resume", "stopped", "--quiet", "--distributed"))
	same(t, dir, "one", "stopped", "model.safetensors")
}

// TestSweepRanks: gptg sweep run --ranks 2 trains each entry with mpirun
// -np 2 gptg train --distributed, and the entry's model is the one a
// plain gptg train of its config and settings gives.
func TestSweepRanks(t *testing.T) {
	dir := setUp(t)
	sweepFile := "configs = [\"small.toml\"]\nseeds = 1\nout = \"sw\"\n[set]\n\"train.lr\" = [0.003]\n"
	if err := os.WriteFile(filepath.Join(dir, "sw.toml"), []byte(sweepFile), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"sweep", "sw.toml"}, {"sweep", "run", "sw", "--ranks", "2"},
		{"train", "small.toml", "--set", "train.lr=0.003", "--set", "train.seed=1", "--set", "train.out=one", "--quiet"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		// mpirun, started by sweep run, as root (CI) and on few cores.
		cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1")
		run(t, cmd)
	}
	var entry string
	filepath.WalkDir(filepath.Join(dir, "sw", "runs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "model.safetensors" {
			entry, _ = filepath.Rel(dir, filepath.Dir(path))
		}
		return nil
	})
	if entry == "" {
		t.Fatal("the sweep entry wrote no model")
	}
	same(t, dir, "one", entry, "model.safetensors")
	log, err := os.ReadFile(filepath.Join(dir, "sw", "events.log"))
	if err != nil || strings.Count(string(log), ": fresh") != 1 || strings.Count(string(log), ": finished") != 1 {
		t.Errorf("events.log: %v\n%s", err, log)
	}
}
