package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/runlock"
	"github.com/gptg/gptg/modelfile"
)

// TestMaxStepsDecides: train.max_steps is the run's length whatever
// train.epochs would give, shorter or longer, as nanoGPT's max_iters; an
// extension by epochs alone drops the recorded max_steps instead of being
// silently capped by it.
func TestMaxStepsDecides(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, dir)
	c.Train.Epochs, c.Train.MaxSteps = 0.01, 20 // 0.01 epoch is 6 steps of this corpus
	res, err := Run(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 20 {
		t.Fatalf("max_steps 20 with epochs 0.01 ran %d steps, want 20", res.Steps)
	}
	res, err = Resume(context.Background(), dir, []string{"train.max_steps=30"}, Options{})
	if err != nil || res.Steps != 30 {
		t.Fatalf("extended to max_steps 30: %v steps, %v", res, err)
	}
	// By epochs: 0.1 epoch is well past 30 steps; the recorded max_steps
	// must not hold the run at 30.
	res, err = Resume(context.Background(), dir, []string{"train.epochs=0.1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps <= 30 {
		t.Fatalf("extended to 0.1 epoch: %d steps, want more than 30", res.Steps)
	}
	text, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	if !strings.Contains(string(text), "max_steps = 0") || !strings.Contains(string(text), "epochs = 0.1") {
		t.Errorf("config.toml does not record the epochs extension:\n%s", text)
	}
}

// TestSuggestedCommandsRun: every command the refusals of a finished run
// suggest is run as written, and does what it says.
func TestSuggestedCommandsRun(t *testing.T) {
	for _, length := range []struct {
		name            string
		epochs          float64
		maxSteps        int
		suggestedLength string
	}{
		{"max_steps", 2, 12, "train.max_steps=24"},
		{"epochs", 0.01, 0, "train.max_steps=12"}, // 6 steps: the suggestion doubles them
	} {
		t.Run(length.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tinyConfig(t, dir)
			c.Train.Epochs, c.Train.MaxSteps, c.Train.EvalEvery = length.epochs, length.maxSteps, 0
			if _, err := Run(context.Background(), c, Options{}); err != nil {
				t.Fatal(err)
			}
			for _, refused := range []func() error{
				func() error { _, err := Run(context.Background(), c, Options{}); return err },
				func() error { _, err := Resume(context.Background(), dir, nil, Options{}); return err },
			} {
				err := refused()
				sets := suggestedSets(t, err, dir)
				if len(sets) != 1 || sets[0] != length.suggestedLength {
					t.Fatalf("suggestion %q in %v, want --set %s", sets, err, length.suggestedLength)
				}
			}
			sets := suggestedSets(t, refuseExistingRun(dir, Options{}), dir)
			res, err := Resume(context.Background(), dir, sets, Options{})
			if err != nil {
				t.Fatalf("the suggested `gptg train --resume %s --set %s` fails: %v", dir, sets[0], err)
			}
			want := 2 * max(length.maxSteps, 6)
			if res.Steps != want {
				t.Fatalf("the suggested command trained to step %d, want %d", res.Steps, want)
			}
		})
	}
}

// suggestedSets finds "gptg train --resume DIR --set K=V ..." in err and
// returns its --set values.
func suggestedSets(t *testing.T, err error, dir string) []string {
	t.Helper()
	if err == nil {
		t.Fatal("no error, want one suggesting a command")
	}
	_, cmd, ok := strings.Cut(err.Error(), "`gptg train --resume "+dir)
	cmd, _, ok2 := strings.Cut(cmd, "`")
	if !ok || !ok2 {
		t.Fatalf("%v: no `gptg train --resume %s …` suggested", err, dir)
	}
	var sets []string
	f := strings.Fields(cmd)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--set" {
			sets = append(sets, f[i+1])
		}
	}
	return sets
}

// TestTokensPerSecondCountsGradAccum: a step consumes batch × grad_accum
// windows of context tokens, and the throughput in the metrics and the
// result counts all of them.
func TestTokensPerSecondCountsGradAccum(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, dir)
	c.Train.GradAccum, c.Train.MaxSteps, c.Train.LogEvery = 3, 20, 10
	res, err := Run(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	perStep := float64(c.Train.Batch * c.Train.GradAccum * c.Model.Context)
	if got := res.TokensPerSec * res.TrainSecs / float64(res.Steps); math.Abs(got-perStep) > 1e-6*perStep {
		t.Errorf("result: %.3f tokens per step, want %v", got, perStep)
	}
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		var r MetricsRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if got := r.TokensPerSec * r.ElapsedSecs / float64(r.Step); math.Abs(got-perStep) > 1e-3*perStep { // rows are rounded
			t.Errorf("metrics row %s: %.3f tokens per step, want %v", line, got, perStep)
		}
	}
}

// TestProgressReadsOnlyTheHeader: learning a run's step from a large
// checkpoint reads its header, not its tensors.
func TestProgressReadsOnlyTheHeader(t *testing.T) {
	dir := t.TempDir()
	big := make([]float32, 4<<20) // 16 MB of tensor data
	state := `{"step":7,"total":9}`
	if err := modelfile.Write(filepath.Join(dir, CheckpointFile), []modelfile.Tensor{{Name: "param/w", Shape: []int{len(big)}, F32: big}},
		map[string]string{"format": checkpointFormat, "state": state}); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	step, total, err := Progress(dir)
	runtime.ReadMemStats(&after)
	if err != nil || step != 7 || total != 9 {
		t.Fatalf("Progress: %d of %d, %v; want 7 of 9", step, total, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("Progress allocated %d bytes for a checkpoint of 16 MB tensors: it reads more than the header", alloc)
	}
}

// TestInitStartsFromAModel: --init starts a new run from a model file's
// weights (its first loss is the trained model's, not a fresh one's), and
// refuses a model the config does not describe.
func TestInitStartsFromAModel(t *testing.T) {
	first := tinyConfig(t, t.TempDir())
	if _, err := Run(context.Background(), first, Options{}); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(first.Train.Out, ModelFile)
	firstLoss := func(c *config.Config, init string) float64 {
		c.Train.MaxSteps, c.Train.LogEvery, c.Train.EvalEvery = 1, 1, 0
		if _, err := Run(context.Background(), c, Options{Init: init}); err != nil {
			t.Fatal(err)
		}
		return rows(t, c.Train.Out)[0]["loss"].(float64)
	}
	fresh, tuned := firstLoss(tinyConfig(t, t.TempDir()), ""), firstLoss(tinyConfig(t, t.TempDir()), model)
	trained := rows(t, first.Train.Out)[len(rows(t, first.Train.Out))-1]["loss"].(float64)
	if !(tuned < fresh-0.3) || math.Abs(tuned-trained) > 0.5 {
		t.Errorf("first loss from --init %.4f, fresh %.4f, the trained run's last %.4f", tuned, fresh, trained)
	}
	other := tinyConfig(t, t.TempDir())
	other.Model.Heads = 1
	_, err := Run(context.Background(), other, Options{Init: model})
	wantErr(t, err, "holds another model than this config describes: it has model.heads=2")
}

// TestBusyFolderSaysSoFirst: a folder another process trains in is
// refused as in use, naming the process, before it is refused as holding
// a run.
func TestBusyFolderSaysSoFirst(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, dir)
	c.Train.MaxSteps = 5
	if _, err := Run(context.Background(), c, Options{}); err != nil {
		t.Fatal(err)
	}
	lock, err := runlock.Acquire(dir) // another open file: flock refuses this process too
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = Run(context.Background(), c, Options{})
	wantErr(t, err, fmt.Sprintf("run folder is in use by process %d", os.Getpid()))
}
