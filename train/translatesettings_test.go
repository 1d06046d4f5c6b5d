package train

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/translate"
)

// translationRun trains a tiny encoder–decoder on toy pairs with the
// given --set overrides into a folder of its own, and returns its result
// and model.
func translationRun(t *testing.T, data string, sets ...string) (*Result, *translate.Model) {
	t.Helper()
	return translationRunOn(t, data, graph.Backend{Threads: 1}, sets...)
}

// translationRunOn is translationRun computing on be.
func translationRunOn(t *testing.T, data string, be graph.Backend, sets ...string) (*Result, *translate.Model) {
	t.Helper()
	dir := t.TempDir()
	text := fmt.Sprintf(`[data]
format = "pairs"
path = %q
split = 0.9
min_count = 1
max_source = 8
max_target = 8

[model]
arch = "encoder-decoder"
embedding = 16
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 32
norm = "post"
activation = "relu"
dropout = 0.1
dtype = "float64"

[train]
batch = 16
max_steps = 6
lr = 3e-3
warmup = 3
eval_every = 3
weight_decay = 0.1
out = %q
`, data, filepath.Join(dir, "run"))
	path := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, sets)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, Options{Log: io.Discard, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	m, err := translate.Load(filepath.Join(res.Dir, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	return res, m
}

// TestTranslationThreadsGiveSameWeights: an encoder–decoder large enough
// that its kernels split their work (batch 32 × 9 positions × 128 wide,
// above fused's minParallelActivation) trains to the same bits, metrics
// included, on 1 and on 3 threads, whether the count comes from
// train.threads or from the command line (Options.Backend).
func TestTranslationThreadsGiveSameWeights(t *testing.T) {
	data := toyPairsFile(t)
	sets := []string{"model.embedding=128", "model.ff_hidden=256", "model.dtype=float32", "train.batch=32", "train.max_steps=4", "train.eval_every=2"}
	one, oneModel := translationRunOn(t, data, graph.Backend{}, append(sets, "train.threads=1")...)
	for _, be := range []graph.Backend{{}, {Threads: 3}} {
		res, m := translationRunOn(t, data, be, append(sets, "train.threads=3")...)
		if res.Threads != 3 {
			t.Errorf("train.threads = 3, --threads %d: trained on %d threads", be.Threads, res.Threads)
		}
		if !sameTensors(m, oneModel) {
			t.Errorf("3 threads (--threads %d): the weights differ from 1 thread's", be.Threads)
		}
		a, _ := os.ReadFile(filepath.Join(one.Dir, MetricsFile))
		b, _ := os.ReadFile(filepath.Join(res.Dir, MetricsFile))
		if got, want := lossColumns(t, b), lossColumns(t, a); !slices.Equal(got, want) {
			t.Errorf("3 threads: losses %v, 1 thread: %v", got, want)
		}
	}
}

// lossColumns is the training and test loss of each metrics row.
func lossColumns(t *testing.T, jsonl []byte) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(string(jsonl)) {
		var row MetricsRow
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		s := fmt.Sprintf("%d %v", row.Step, row.Loss)
		if row.TestLoss != nil {
			s += fmt.Sprintf(" %v", *row.TestLoss)
		}
		out = append(out, s)
	}
	return out
}

func toyPairsFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toy.tsv")
	if err := os.WriteFile(path, []byte(toypairs.Random(rand.New(rand.NewPCG(3, 4)), 400, 12, 3, 7)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTranslationSettingsAreUsed: train.decay, train.eval_batches and
// train.grad_accum change an encoder–decoder's run as they change a GPT's.
func TestTranslationSettingsAreUsed(t *testing.T) {
	data := toyPairsFile(t)
	base, baseModel := translationRun(t, data)

	// decay = "matrices": after one step the matrices are the same bits
	// as with decay on every parameter (same gradient, same decay); the
	// vectors (biases, LayerNorm gains) are not decayed, so they differ.
	_, all := translationRun(t, data, "train.max_steps=1")
	_, matrices := translationRun(t, data, "train.max_steps=1", "train.decay=matrices")
	vectorsDiffer := false
	for name, a := range all.Tensors {
		b := matrices.Tensors[name]
		same := slices.Equal(a.F64, b.F64)
		if len(a.Shape) >= 2 && !same {
			t.Errorf("decay = matrices changed %s %v, a matrix, after one step", name, a.Shape)
		}
		vectorsDiffer = vectorsDiffer || len(a.Shape) < 2 && !same
	}
	if !vectorsDiffer {
		t.Error("decay = matrices: no vector parameter differs from decay = all after one step")
	}

	// eval_batches: the test loss of a few batches drawn at random is not
	// the whole split's, the training is the same.
	sampled, sampledModel := translationRun(t, data, "train.eval_batches=2")
	if sampled.TestLoss == base.TestLoss || sampled.TrainLoss != base.TrainLoss || !sameTensors(sampledModel, baseModel) {
		t.Errorf("eval_batches = 2: test loss %v (whole split %v), train loss %v (%v): want another test loss, the same training",
			sampled.TestLoss, base.TestLoss, sampled.TrainLoss, base.TrainLoss)
	}
	again, _ := translationRun(t, data, "train.eval_batches=2")
	if again.TestLoss != sampled.TestLoss {
		t.Errorf("eval_batches = 2 gave %v, then %v: the batches must be drawn from the seed", sampled.TestLoss, again.TestLoss)
	}

	// grad_accum: two batches a step make another run; train.epochs
	// counts batches, so the steps halve.
	accum, accumModel := translationRun(t, data, "train.grad_accum=2")
	if sameTensors(accumModel, baseModel) || accum.TrainLoss == base.TrainLoss {
		t.Error("grad_accum = 2 trained the same weights as grad_accum = 1")
	}
	byEpochs, _ := translationRun(t, data, "train.max_steps=0", "train.epochs=1")
	halved, _ := translationRun(t, data, "train.max_steps=0", "train.epochs=1", "train.grad_accum=2")
	if want := (byEpochs.Steps + 1) / 2; halved.Steps != want && halved.Steps != byEpochs.Steps/2 {
		t.Errorf("one epoch: %d steps with grad_accum = 2, %d without; want half", halved.Steps, byEpochs.Steps)
	}
}

// TestTranslationGradAccumResumes: a run with grad_accum = 2 interrupted
// after a checkpoint and resumed gives the same weights, bit for bit, as
// one that was not: the batches and dropout masks follow from the step.
func TestTranslationGradAccumResumes(t *testing.T) {
	data := toyPairsFile(t)
	whole, wholeModel := translationRun(t, data, "train.grad_accum=2")
	dir := t.TempDir()
	path := filepath.Join(dir, "c.toml")
	text, err := os.ReadFile(filepath.Join(whole.Dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, []string{"train.out=" + filepath.Join(dir, "run")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Run(ctx, cfg, Options{Log: io.Discard, Backend: graph.Backend{Threads: 1}, AfterStep: func(step int) {
		if step == 4 {
			cancel()
		}
	}})
	if err != ErrInterrupted {
		t.Fatalf("interrupted run: %v", err)
	}
	if _, err := Resume(context.Background(), filepath.Join(dir, "run"), nil, Options{Log: io.Discard, Backend: graph.Backend{Threads: 1}}); err != nil {
		t.Fatal(err)
	}
	resumed, err := translate.Load(filepath.Join(dir, "run", ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if !sameTensors(resumed, wholeModel) {
		t.Error("resumed at step 4 of 6 with grad_accum = 2: the weights differ from the uninterrupted run's")
	}
}

func sameTensors(a, b *translate.Model) bool {
	if len(a.Tensors) != len(b.Tensors) {
		return false
	}
	for name, x := range a.Tensors {
		if !slices.Equal(x.F64, b.Tensors[name].F64) || !slices.Equal(x.F32, b.Tensors[name].F32) {
			return false
		}
	}
	return true
}
