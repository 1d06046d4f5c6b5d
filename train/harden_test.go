package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// interrupted runs tinyConfig into dir and stops it after step stopAt.
func interrupted(t *testing.T, dir string, stopAt int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := Options{CheckpointEvery: 25, AfterStep: func(s int) {
		if s == stopAt {
			cancel()
		}
	}}
	if _, err := Run(ctx, tinyConfig(t, dir), opts); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("got %v, want ErrInterrupted", err)
	}
}

func wantErr(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", fragments)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q\ndoes not contain %q", err, f)
		}
	}
}

// TestAnyRunFileMeansARun: a folder whose checkpoint is gone still holds
// a run (its config, model or metrics); only --force starts over there.
func TestAnyRunFileMeansARun(t *testing.T) {
	for _, name := range []string{ConfigFile, ModelFile, MetricsFile} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), tinyConfig(t, dir), Options{})
		wantErr(t, err, "already holds a run ("+name+") without a checkpoint to resume: start over with --force")
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != "x" {
			t.Fatalf("%s was overwritten", name)
		}
	}
	dir := t.TempDir()
	interrupted(t, dir, 30)
	_, err := Run(context.Background(), tinyConfig(t, dir), Options{})
	wantErr(t, err, "already holds a run (at step 30 of 60): continue it with `gptg train --resume "+dir+"`")
}

// TestRefusesForeignOrRootOut: the filesystem root, a file and a non-empty
// folder that is not a run folder are refused before anything is written;
// an empty folder is fine.
func TestRefusesForeignOrRootOut(t *testing.T) {
	_, err := Run(context.Background(), tinyConfig(t, "/"), Options{})
	wantErr(t, err, "train.out: / is the filesystem root")
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "thesis.tex"), []byte("x"), 0o644)
	_, err = Run(context.Background(), tinyConfig(t, foreign), Options{Force: true})
	wantErr(t, err, "is a folder that is not a gptg run folder and not empty (it holds thesis.tex)")
	if entries, _ := os.ReadDir(foreign); len(entries) != 1 {
		t.Fatalf("the foreign folder now holds %v", entries)
	}
	_, err = Run(context.Background(), tinyConfig(t, filepath.Join(foreign, "thesis.tex")), Options{})
	wantErr(t, err, "is a file, not a folder")
	if _, err := Run(context.Background(), tinyConfig(t, t.TempDir()), Options{}); err != nil {
		t.Fatalf("empty folder: %v", err)
	}
}

// TestInterruptDuringEvaluation: a signal during the final evaluation
// saves at once with the evaluation still to do; the resumed run does it
// and ends exactly as the uninterrupted one.
func TestInterruptDuringEvaluation(t *testing.T) {
	whole := t.TempDir()
	if _, err := Run(context.Background(), tinyConfig(t, whole), Options{CheckpointEvery: 25}); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{20, 60} {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		opts := Options{CheckpointEvery: 25, beforeEval: func(s int) {
			if s == at {
				cancel()
			}
		}}
		_, err := Run(ctx, tinyConfig(t, dir), opts)
		cancel()
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("at %d: got %v, want ErrInterrupted", at, err)
		}
		if step, total, _ := Progress(dir); step != at-1 || total != 60 {
			t.Fatalf("at %d: progress %d of %d, want the evaluated step not done", at, step, total)
		}
		if _, err := Resume(context.Background(), dir, nil, Options{CheckpointEvery: 25}); err != nil {
			t.Fatalf("at %d: resume: %v", at, err)
		}
		if !reflect.DeepEqual(params(t, dir), params(t, whole)) {
			t.Errorf("at %d: parameters differ from the uninterrupted run", at)
		}
		if got, want := rows(t, dir), rows(t, whole); !reflect.DeepEqual(got, want) {
			t.Errorf("at %d: metrics differ:\n%v\n%v", at, got, want)
		}
	}
}

// TestResumeChecksTheRun: a checkpoint of another run of the same config
// is refused, and so is a config.toml edited since the run started
// (except [sample]), naming the setting.
func TestResumeChecksTheRun(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	interrupted(t, a, 30)
	interrupted(t, b, 30)
	own, _ := os.ReadFile(filepath.Join(a, CheckpointFile))
	other, _ := os.ReadFile(filepath.Join(b, CheckpointFile))
	os.WriteFile(filepath.Join(a, CheckpointFile), other, 0o644)
	_, err := Resume(context.Background(), a, nil, Options{})
	wantErr(t, err, "checkpoint.safetensors belongs to another run", "put this run's checkpoint back, or start over with --force")
	os.WriteFile(filepath.Join(a, CheckpointFile), own, 0o644)

	path := filepath.Join(a, ConfigFile)
	text, _ := os.ReadFile(path)
	edited := strings.Replace(string(text), "lr = 0.01", "lr = 0.02", 1)
	if edited == string(text) {
		t.Fatalf("no lr line in\n%s", text)
	}
	os.WriteFile(path, []byte(edited), 0o644)
	_, err = Resume(context.Background(), a, nil, Options{})
	wantErr(t, err, "edited since the run started (train.lr=0.02 (was 0.01))", "only train.epochs and train.max_steps may change")
	var ce interface{ Unwrap() error }
	if !errors.As(err, &ce) {
		t.Fatalf("%T is not a config error", err)
	}

	edited = strings.Replace(string(text), `prompt = "\n"`, `prompt = "ROMEO:"`, 1)
	os.WriteFile(path, []byte(edited), 0o644)
	if _, err := Resume(context.Background(), a, nil, Options{}); err != nil {
		t.Fatalf("resume after editing [sample]: %v", err)
	}
}

// TestExtendARun: --resume with a longer train.max_steps continues a
// finished run from where it ended on a schedule recomputed for the new
// length, and records the length; other keys and shortening are refused.
func TestExtendARun(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), tinyConfig(t, dir), Options{}); err != nil {
		t.Fatal(err)
	}
	before := rows(t, dir)
	_, err := Resume(context.Background(), dir, []string{"model.heads=4"}, Options{})
	wantErr(t, err, "--set model.heads: --resume changes only the run's length (train.epochs, train.max_steps)")
	_, err = Resume(context.Background(), dir, []string{"train.max_steps=50"}, Options{})
	wantErr(t, err, "is at step 60, past the 50 steps its length now gives")

	var log strings.Builder
	res, err := Resume(context.Background(), dir, []string{"train.max_steps=80"}, Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 80 || !strings.Contains(log.String(), "extended from 60 to 80 steps") {
		t.Fatalf("steps %d, log %q", res.Steps, log.String())
	}
	after := rows(t, dir)
	if len(after) != 8 || !reflect.DeepEqual(after[:6], before) {
		t.Fatalf("rows %v\nbefore %v", after, before)
	}
	c := tinyConfig(t, dir)
	want := Schedule{LR: c.Train.LR, MinLR: c.Train.MinLR, Warmup: c.Train.Warmup, Total: 80}.At(79)
	if got := after[7]["lr"].(float64); got != want {
		t.Errorf("last lr %v, want %v from the 80-step schedule", got, want)
	}
	if text, _ := os.ReadFile(filepath.Join(dir, ConfigFile)); !strings.Contains(string(text), "max_steps = 80") {
		t.Errorf("config.toml does not record the new length:\n%s", text)
	}
	_, err = Resume(context.Background(), dir, nil, Options{})
	wantErr(t, err, "already finished its 80 steps: train it longer with `gptg train --resume "+dir+" --set train.max_steps=160`")
}

// TestResumeRepairsMetrics: a partial last row is dropped and said so; a
// deleted metrics file or a huge line is an error that says what to do.
func TestResumeRepairsMetrics(t *testing.T) {
	dir := t.TempDir()
	interrupted(t, dir, 37) // checkpoint at 37 counts rows 10, 20, 30
	path := filepath.Join(dir, MetricsFile)
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(path, []byte(lines[0]+lines[1]+lines[2][:40]), 0o644)
	var log strings.Builder
	if _, err := Resume(context.Background(), dir, nil, Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dropped a partial last row (row 3", "holds 2 rows, the checkpoint counts 3: the resumed run goes on without rows 3 to 3"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q lacks %q", log.String(), want)
		}
	}
	if r := rows(t, dir); len(r) != 5 {
		t.Errorf("%d rows, want 5", len(r))
	}

	dir = t.TempDir()
	interrupted(t, dir, 37)
	path = filepath.Join(dir, MetricsFile)
	os.Remove(path)
	_, err := Resume(context.Background(), dir, nil, Options{})
	wantErr(t, err, "metrics.jsonl is missing, and the checkpoint counts 3 rows in it", "(touch "+path+")")
	os.WriteFile(path, []byte(strings.Repeat("x", 2<<20)+"\n"), 0o644)
	_, err = Resume(context.Background(), dir, nil, Options{})
	wantErr(t, err, "row 1 is longer than 1048576 bytes")
}

// TestDivergenceNamesOnlyAnExistingCheckpoint: diverging before the first
// checkpoint says there is none.
func TestDivergenceNamesOnlyAnExistingCheckpoint(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, dir)
	c.Model.Dtype = "float32"
	c.Train.LR, c.Train.MinLR, c.Train.Warmup, c.Train.Clip = 1e30, 1e30, 0, 0
	_, err := Run(context.Background(), c, Options{CheckpointEvery: 1000})
	wantErr(t, err, "diverged", "no checkpoint was written yet")
	if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); err == nil {
		t.Fatal("there is a checkpoint after all")
	}
}
