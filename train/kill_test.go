package train

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/gptgbin"
	"github.com/gptg/gptg/internal/runlock"
	"github.com/gptg/gptg/internal/testwait"
	"github.com/gptg/gptg/savedmodel"
)

// TestSIGKILLAndResume kills `gptg train` with SIGKILL at random moments, 20
// times, checkpointing every 3 steps so that many kills land inside a
// checkpoint or model write. After every kill the files that exist must
// load, and the run resumes from its last checkpoint (or restarts when it
// died before the first one). Finally it must end exactly as a run that was
// never killed: the same weights and the same metrics.
func TestSIGKILLAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the SIGKILL test (about 20 runs of 200 float64 steps)")
	}
	exe, cfg := gptgbin.Path(t), killConfig(t)
	whole := t.TempDir()
	start := time.Now()
	if out, err := exec.Command(exe, "train", cfg, "--quiet", "--set", "train.out="+whole).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	// Kills are spread over the uninterrupted run's own duration, not over
	// fixed milliseconds: on a loaded machine the process takes longer to
	// start, and fixed delays would land every kill before the first
	// checkpoint.
	runTime := time.Since(start)

	dir := filepath.Join(t.TempDir(), "run")
	rng := rand.New(rand.NewPCG(1, 2))
	kills, midRun := 0, 0
	for attempt := 0; kills < 20; attempt++ {
		if attempt > 200 {
			t.Fatalf("only %d kills landed in 200 attempts", kills)
		}
		args := []string{"train", cfg, "--quiet", "--force", "--set", "train.out=" + dir}
		if step, total, err := Progress(dir); err == nil {
			if step == total {
				// Killed after its final save, before it exited: the run is
				// complete and a resume rightly refuses ("already finished").
				os.RemoveAll(dir) // start over to land the remaining kills
				continue
			}
			args = []string{"train", "--resume", dir, "--quiet"}
		}
		cmd := exec.Command(exe, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("gptg %v failed on its own: %v", args, err)
			}
			// Finished before the kill: only a full run is expected now.
			if step, total, _ := Progress(dir); step != total {
				t.Fatalf("exited at step %d of %d", step, total)
			}
			os.RemoveAll(dir) // start over to land the remaining kills
			continue
		case <-time.After(runTime/20 + time.Duration(rng.Float64()*0.8*float64(runTime))):
			cmd.Process.Kill()
			<-done
			kills++
		}
		// Whatever files exist after a SIGKILL must be whole.
		if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); err == nil {
			step, _, err := Progress(dir)
			if err != nil {
				t.Fatalf("kill %d: checkpoint does not load: %v", kills, err)
			}
			if step > 0 {
				midRun++
			}
		}
		if _, err := os.Stat(filepath.Join(dir, ModelFile)); err == nil {
			if _, err := savedmodel.Load(filepath.Join(dir, ModelFile)); err != nil {
				t.Fatalf("kill %d: model file does not load: %v", kills, err)
			}
		}
	}
	args := []string{"train", "--resume", dir, "--quiet"}
	step, total, err := Progress(dir)
	if err != nil {
		args = []string{"train", cfg, "--quiet", "--force", "--set", "train.out=" + dir}
	}
	if err != nil || step < total { // else the last kill came after the final save
		if out, err := exec.Command(exe, args...).CombinedOutput(); err != nil {
			t.Fatalf("final resume: %v\n%s", err, out)
		}
	}
	if !reflect.DeepEqual(params(t, dir), params(t, whole)) {
		t.Error("after 20 kills and resumes the weights differ from the uninterrupted run")
	}
	if got, want := rows(t, dir), rows(t, whole); !reflect.DeepEqual(got, want) {
		t.Errorf("after 20 kills the metrics differ:\n%v\n%v", got, want)
	}
	// Kills before the first checkpoint test little; most must land later.
	if midRun < 10 {
		t.Errorf("only %d of %d kills came after a checkpoint", midRun, kills)
	}
	t.Logf("%d kills, %d after a checkpoint", kills, midRun)
}

// TestMain removes the CLI gptgbin built for the package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	gptgbin.Remove()
	os.Exit(code)
}

// killConfig writes a small float64 config that checkpoints every 3 steps.
func killConfig(t *testing.T) string {
	t.Helper()
	data, _ := filepath.Abs("../testdata/tiny.txt")
	cfg := filepath.Join(t.TempDir(), "kill.toml")
	if err := os.WriteFile(cfg, []byte(`
[data]
path = "`+data+`"
stride = 4
[model]
context = 8
embedding = 16
blocks = 2
heads = 2
residual = true
norm = "pre"
dtype = "float64"
[train]
batch = 4
max_steps = 200
warmup = 10
lr = 0.01
log_every = 10
eval_every = 100
checkpoint_every = 3
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSIGINTSavesAndExits130 interrupts the real binary as Ctrl-C would:
// it must save, say how to resume, exit 130, and the resume must finish.
func TestSIGINTSavesAndExits130(t *testing.T) {
	exe, cfg := gptgbin.Path(t), killConfig(t)
	dir := filepath.Join(t.TempDir(), "run")
	// A run far longer than the test waits: the interrupt lands mid-run
	// however busy the machine, and the resume goes two steps further.
	cmd := exec.Command(exe, "train", cfg, "--set", "train.out="+dir,
		"--set", "train.max_steps=100000", "--set", "train.checkpoint_every=100000")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testwait.For(func() bool { b, _ := os.ReadFile(filepath.Join(dir, MetricsFile)); return len(b) > 0 }) {
		cmd.Process.Kill()
		t.Fatalf("no metrics row within %v", testwait.Hang)
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("exit: %v, want code 130; output:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "resume with: gptg train --resume "+dir) {
		t.Fatalf("no resume hint in:\n%s", out.String())
	}
	step, total, err := Progress(dir)
	if err != nil || step == 0 || step >= total {
		t.Fatalf("checkpoint after SIGINT: step %d of %d, %v", step, total, err)
	}
	if b, err := exec.Command(exe, "train", "--resume", dir, "--quiet", "--set", fmt.Sprintf("train.max_steps=%d", step+2)).CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, b)
	}
}

// TestFullDiskKeepsTheLastCheckpoint makes every save of a resumed run fail
// the way a full disk does: the process runs under a file-size limit
// (ulimit -f) that the checkpoint exceeds, so writing it fails with EFBIG.
// gptg must stop with one clear line and exit 1, leave no temporary file,
// and leave the checkpoint and model of the last good save byte for byte;
// a later resume without the limit must go on from it.
func TestFullDiskKeepsTheLastCheckpoint(t *testing.T) {
	exe, cfg := gptgbin.Path(t), killConfig(t)
	dir := filepath.Join(t.TempDir(), "run")
	// A first process saves at step 20 and is stopped there (or a save
	// later: its run is far longer than the test waits).
	cmd := exec.Command(exe, "train", cfg, "--quiet", "--set", "train.out="+dir, "--set", "train.max_steps=100000",
		"--set", "train.checkpoint_every=20", "--set", "train.eval_every=50")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testwait.For(func() bool { step, _, err := Progress(dir); return err == nil && step >= 20 }) {
		cmd.Process.Kill()
		t.Fatalf("no checkpoint within %v", testwait.Hang)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	before := map[string][]byte{}
	for _, name := range []string{CheckpointFile, ModelFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = b
	}
	if len(before[CheckpointFile]) < 150<<10 {
		t.Fatalf("checkpoint of %d bytes: the 150 KiB limit would not stop it", len(before[CheckpointFile]))
	}

	// ulimit -f counts KiB; Go ignores SIGXFSZ, so the write returns EFBIG.
	full := exec.Command("bash", "-c", `ulimit -f 150 && exec "$0" train --resume "$1"`, exe, dir)
	var stderr strings.Builder
	full.Stderr = &stderr
	err := full.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want code 1; stderr: %s", err, stderr.String())
	}
	msg := stderr.String()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "saving the checkpoint") || !strings.Contains(msg, "file too large") {
		t.Fatalf("want one line about the failed save, got %q", msg)
	}
	for name, want := range before {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, want) {
			t.Errorf("%s changed after the failed save", name)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && e.Name() != runlock.Name {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	// Two steps past the last good save: the resume writes again.
	step, _, err := Progress(dir)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(exe, "train", "--resume", dir, "--quiet", "--set", fmt.Sprintf("train.max_steps=%d", step+2)).CombinedOutput(); err != nil {
		t.Fatalf("resume after the failed save: %v\n%s", err, out)
	}
}
