package train

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/modelfile"
)

// tinyTranslation writes a small pairs file (the reversal task of
// TestTranslationLearnsToy) and a config that trains on it into out with
// dropout and label smoothing on, and returns the config's path.
func tinyTranslation(t *testing.T, dir string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	writeFile(t, filepath.Join(dir, "toy.tsv"), toypairs.Random(rng, 400, 12, 2, 5))
	cfg := `[data]
format = "pairs"
path = "toy.tsv"
split = 0.9
min_count = 1
max_source = 6
max_target = 6
buckets = 2

[model]
arch = "encoder-decoder"
embedding = 16
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 32
positions = "sinusoidal"
dropout = 0.1
label_smoothing = 0.1

[train]
batch = 16
max_steps = 30
schedule = "noam"
warmup = 10
eval_every = 10
log_every = 3
checkpoint_every = 7
`
	path := filepath.Join(dir, "toy.toml")
	writeFile(t, path, cfg)
	return path
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func loadTiny(t *testing.T, path, out string, sets ...string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path, append([]string{"train.out=" + out}, sets...))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// chdir runs the test in dir (the config's data.path is relative).
func chdir(t *testing.T, dir string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(wd) })
}

// TestTranslationResume: a translation run interrupted (Ctrl-C: saved at
// the step it reached) or killed (only the last checkpoint_every
// checkpoint left) and resumed ends with the very weights, bit for bit,
// and the same metrics rows as the run that never stopped; its
// config.toml records the pairs file's sha256 and size, and a resume
// after the file was edited is refused.
func TestTranslationResume(t *testing.T) {
	dir := t.TempDir()
	chdir(t, dir)
	cfgPath := tinyTranslation(t, dir)
	opts := func() Options { return Options{Log: io.Discard, Backend: graph.Backend{Threads: 1}} }

	if _, err := Run(context.Background(), loadTiny(t, cfgPath, "whole"), opts()); err != nil {
		t.Fatal(err)
	}
	sum, size, err := corpus.Digest("toy.tsv")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := config.Load(filepath.Join("whole", ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Data.SHA256 != sum || rec.Data.Size != size {
		t.Errorf("config.toml records data.sha256 %q, data.size %d; the file has %s, %d", rec.Data.SHA256, rec.Data.Size, sum, size)
	}

	// stop runs into out and stops after step at; with killed, the
	// checkpoint is put back to the one of step 7 (checkpoint_every), as
	// if the process had been killed at step at.
	stop := func(out string, at int, killed bool) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		o := opts()
		var saved []byte
		o.AfterStep = func(step int) {
			if step == 7 {
				saved, _ = os.ReadFile(filepath.Join(out, CheckpointFile))
			}
			if step == at {
				cancel()
			}
		}
		if _, err := Run(ctx, loadTiny(t, cfgPath, out), o); !errors.Is(err, ErrInterrupted) {
			t.Fatalf("%s: interrupted run returned %v, want ErrInterrupted", out, err)
		}
		if killed {
			if saved == nil {
				t.Fatal("no checkpoint at step 7")
			}
			writeFile(t, filepath.Join(out, CheckpointFile), string(saved))
		}
		if step, total, err := Progress(out); err != nil || total != 30 || (killed && step != 7) || (!killed && step != at) {
			t.Fatalf("%s: Progress = %d of %d, %v", out, step, total, err)
		}
		if _, err := Resume(context.Background(), out, nil, opts()); err != nil {
			t.Fatalf("%s: resume: %v", out, err)
		}
	}
	stop("interrupted", 13, false)
	stop("killed", 13, true)

	want := tensors(t, "whole")
	wantRows := metricRows(t, "whole")
	for _, run := range []string{"interrupted", "killed"} {
		got := tensors(t, run)
		if len(got) != len(want) {
			t.Fatalf("%s: %d tensors, want %d", run, len(got), len(want))
		}
		for name, w := range want {
			if g := got[name]; !slices.Equal(g.F32, w.F32) || !slices.Equal(g.F64, w.F64) {
				t.Errorf("%s: tensor %s differs from the uninterrupted run's", run, name)
			}
		}
		if rows := metricRows(t, run); !slices.Equal(rows, wantRows) {
			t.Errorf("%s: metrics rows\n%v\nwant\n%v", run, rows, wantRows)
		}
	}

	// A finished run is extended like a GPT run.
	if _, err := Resume(context.Background(), "whole", []string{"train.max_steps=33"}, opts()); err != nil {
		t.Fatalf("extending: %v", err)
	}
	if rows := metricRows(t, "whole"); rows[len(rows)-1].step != 33 {
		t.Errorf("extended run's last row is of step %d, want 33", rows[len(rows)-1].step)
	}

	// An edited pairs file is not the run's corpus.
	text, _ := os.ReadFile("toy.tsv")
	writeFile(t, "toy.tsv", "a1 a2\tb2 b1\n"+string(text))
	stopped := filepath.Join(dir, "stopped")
	ctx, cancel := context.WithCancel(context.Background())
	o := opts()
	o.AfterStep = func(step int) { cancel() }
	writeFile(t, "toy.tsv", string(text))
	if _, err := Run(ctx, loadTiny(t, cfgPath, stopped), o); !errors.Is(err, ErrInterrupted) {
		t.Fatal(err)
	}
	writeFile(t, "toy.tsv", "a1 a2\tb2 b1\n"+string(text))
	var ce *CorpusChangedError
	if _, err := Resume(context.Background(), stopped, nil, opts()); !errors.As(err, &ce) {
		t.Errorf("resume after the pairs file was edited: %v, want a CorpusChangedError", err)
	} else if msg := err.Error(); !strings.Contains(msg, "toy.tsv is not the corpus run "+stopped+" was trained on") {
		t.Errorf("message %q", msg)
	}
}

// TestTranslationInit: gptg train --init starts a translation run from a
// model file's weights: with a learning rate of ~1e-10 for its one step,
// the new run's test loss is the file's, not a fresh model's; another
// vocabulary is refused.
func TestTranslationInit(t *testing.T) {
	dir := t.TempDir()
	chdir(t, dir)
	cfgPath := tinyTranslation(t, dir)
	o := Options{Log: io.Discard, Backend: graph.Backend{Threads: 1}}
	trained, err := Run(context.Background(), loadTiny(t, cfgPath, "a", "model.dropout=0"), o)
	if err != nil {
		t.Fatal(err)
	}
	still := []string{"train.max_steps=1", "train.warmup=1000000", "model.dropout=0"}
	fresh, err := Run(context.Background(), loadTiny(t, cfgPath, "fresh", still...), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Init = filepath.Join("a", ModelFile)
	from, err := Run(context.Background(), loadTiny(t, cfgPath, "b", still...), o)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(from.TestLoss - trained.TestLoss); d > 1e-5 {
		t.Errorf("test loss from --init %.6f, the file's %.6f (a fresh model's %.6f)", from.TestLoss, trained.TestLoss, fresh.TestLoss)
	}
	if math.Abs(fresh.TestLoss-trained.TestLoss) < 0.1 {
		t.Fatalf("a fresh model's test loss %.4f is the trained one's %.4f: the test cannot tell", fresh.TestLoss, trained.TestLoss)
	}
	// The same sizes over other words: refused, naming the vocabulary.
	text, err := os.ReadFile("toy.tsv")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, "other.tsv", strings.NewReplacer("a", "x", "b", "y").Replace(string(text)))
	_, err = Run(context.Background(), loadTiny(t, cfgPath, "c", append(still, "data.path=other.tsv")...), o)
	if err == nil || !strings.Contains(err.Error(), "the source words of the corpus other.tsv are not those of a/model.safetensors: it lacks 12 of the model's 16 (") {
		t.Errorf("--init with another vocabulary: %v", err)
	}
}

// tensors reads a run's model file.
func tensors(t *testing.T, run string) map[string]modelfile.Tensor {
	t.Helper()
	f, err := modelfile.Read(filepath.Join(run, ModelFile), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return f.Tensors
}

type metricRow struct {
	step             int
	lr, loss, gn, tl float64
}

// metricRows are a run's rows without their timings.
func metricRows(t *testing.T, run string) []metricRow {
	t.Helper()
	rows, err := ReadMetrics(run)
	if err != nil {
		t.Fatal(err)
	}
	var out []metricRow
	for _, r := range rows {
		m := metricRow{step: r.Step, lr: r.LR, loss: r.Loss, gn: r.GradNorm, tl: -1}
		if r.TestLoss != nil {
			m.tl = *r.TestLoss
		}
		out = append(out, m)
	}
	return out
}
