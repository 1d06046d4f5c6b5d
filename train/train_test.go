package train

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
)

// tinyConfig is a float64 model small enough to train 60 steps in a second.
func tinyConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	c := config.Default()
	c.Data.Path = "../testdata/tiny.txt"
	c.Data.Stride = 4
	c.Model = config.Model{Bias: true, Init: "torch", Context: 8, Embedding: 8, Blocks: 1, Heads: 2, QKV: true, Mask: true,
		OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", FFMult: 2, Dtype: "float64"}
	c.Train.Batch = 2
	c.Train.MaxSteps = 60
	c.Train.Warmup = 5
	c.Train.LR = 1e-2
	c.Train.MinLR = 1e-3
	c.Train.LogEvery = 10
	c.Train.EvalEvery = 20
	c.Train.Out = dir
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// nanoConfig is tinyConfig with nanoGPT's switches and training options
// on: dropout, tied embeddings, no biases, final norm, exact GELU, GPT-2
// initialisation, random windows, gradient accumulation, test loss
// estimated on random batches, weight decay on matrices only.
func nanoConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	c := tinyConfig(t, dir)
	m := &c.Model
	m.Dropout, m.TieEmbeddings, m.Bias, m.FinalNorm = 0.2, true, false, true
	m.Activation, m.Init = "gelu_exact", "gpt2"
	c.Data.Sampling = "random"
	c.Train.GradAccum, c.Train.EvalBatches, c.Train.Decay = 2, 3, "matrices"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// rows reads metrics.jsonl without the fields that measure time or memory,
// which differ between runs by nature.
func rows(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"tokens_per_s", "elapsed_s", "heap_mb", "rss_mb"} {
			if _, ok := r[k]; !ok {
				t.Fatalf("metrics row without %s: %s", k, sc.Text())
			}
			delete(r, k)
		}
		out = append(out, r)
	}
	return out
}

func params(t *testing.T, dir string) map[string]modelfile.Tensor {
	t.Helper()
	f, err := modelfile.Read(filepath.Join(dir, ModelFile), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return f.Tensors
}

func TestSameSeedSameRun(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ra, err := Run(context.Background(), tinyConfig(t, a), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Run(context.Background(), tinyConfig(t, b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ra.Steps != 60 || ra.TestLoss != rb.TestLoss || ra.TrainLoss != rb.TrainLoss {
		t.Fatalf("results differ: %+v vs %+v", ra, rb)
	}
	ma, mb := rows(t, a), rows(t, b)
	if len(ma) != 6 {
		t.Fatalf("%d metrics rows, want 6 (every 10 of 60 steps)", len(ma))
	}
	if !reflect.DeepEqual(ma, mb) {
		t.Fatalf("metrics differ:\n%v\n%v", ma, mb)
	}
	if !reflect.DeepEqual(params(t, a), params(t, b)) {
		t.Fatal("parameters differ")
	}
	// Training must have learnt something, or determinism proves little.
	first, last := ma[0]["loss"].(float64), ma[len(ma)-1]["loss"].(float64)
	if !(last < first) {
		t.Fatalf("loss did not fall: %v → %v", first, last)
	}
	// Evaluation rows carry the test loss; the others don't.
	for _, r := range ma {
		_, has := r["test_loss"]
		if step := int(r["step"].(float64)); has != (step%20 == 0) {
			t.Errorf("step %d: test_loss present = %v", step, has)
		}
	}
	// Another seed, another run.
	c := tinyConfig(t, t.TempDir())
	c.Train.Seed = 7
	rc, err := Run(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.TestLoss == ra.TestLoss {
		t.Fatal("seed 7 gave the same test loss as seed 42")
	}
}

// TestInterruptAndResume stops a run at several steps (between checkpoints
// and right after one), resumes it, and requires exactly the parameters and
// metrics of the uninterrupted run.
func TestInterruptAndResume(t *testing.T) { interruptAndResume(t, tinyConfig) }

// TestInterruptAndResumeNanoGPT is the same with dropout, random windows
// and the other nanoGPT options on: masks, batches and test batches are
// drawn from (seed, step), so the resumed run still ends bit-identical.
func TestInterruptAndResumeNanoGPT(t *testing.T) { interruptAndResume(t, nanoConfig) }

func interruptAndResume(t *testing.T, configFor func(*testing.T, string) *config.Config) {
	whole := t.TempDir()
	if _, err := Run(context.Background(), configFor(t, whole), Options{CheckpointEvery: 25}); err != nil {
		t.Fatal(err)
	}
	for _, stopAt := range []int{1, 25, 37, 59} {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		opts := Options{CheckpointEvery: 25, AfterStep: func(s int) {
			if s == stopAt {
				cancel()
			}
		}}
		_, err := Run(ctx, configFor(t, dir), opts)
		cancel()
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("stop at %d: got %v, want ErrInterrupted", stopAt, err)
		}
		var log strings.Builder
		res, err := Resume(context.Background(), dir, nil, Options{CheckpointEvery: 25, Log: &log})
		if err != nil {
			t.Fatalf("resume after %d: %v", stopAt, err)
		}
		if !strings.Contains(log.String(), "resuming") || res.Steps != 60 {
			t.Fatalf("resume after %d: steps %d, log %q", stopAt, res.Steps, log.String())
		}
		if !reflect.DeepEqual(params(t, dir), params(t, whole)) {
			t.Errorf("stop at %d: parameters differ from the uninterrupted run", stopAt)
		}
		if got, want := rows(t, dir), rows(t, whole); !reflect.DeepEqual(got, want) {
			t.Errorf("stop at %d: metrics differ:\n%v\n%v", stopAt, got, want)
		}
	}
}

// TestInterruptAndResumeFloat32 is TestInterruptAndResume with float32
// weights, whose AdamW moments are float32 too: a checkpoint holds them as
// they are, so the resumed run still ends bit-identical.
func TestInterruptAndResumeFloat32(t *testing.T) { interruptAndResume(t, float32Config) }

// float32Config is tinyConfig in float32.
func float32Config(t *testing.T, dir string) *config.Config {
	t.Helper()
	c := tinyConfig(t, dir)
	c.Model.Dtype = "float32"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestResumesFloat64Moments: a float32 run's checkpoint written by a gptg
// that kept AdamW's moments in float64 still resumes, its moments rounded
// to float32. Moments widened from float32 round back exactly, so a
// checkpoint rewritten that way must resume to the uninterrupted run's
// weights, bit for bit.
func TestResumesFloat64Moments(t *testing.T) {
	whole, dir := t.TempDir(), t.TempDir()
	if _, err := Run(context.Background(), float32Config(t, whole), Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Run(ctx, float32Config(t, dir), Options{AfterStep: func(s int) {
		if s == 30 {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("got %v, want ErrInterrupted", err)
	}
	path := filepath.Join(dir, CheckpointFile)
	f, err := modelfile.Read(path, modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var tensors []modelfile.Tensor
	widened := 0
	for _, name := range f.Order {
		tn := f.Tensors[name]
		if strings.HasPrefix(name, "adam.") {
			if tn.F32 == nil {
				t.Fatalf("%s is %s in a float32 run's checkpoint, want F32", name, tn.DType())
			}
			tn.F64, tn.F32 = widen(tn.F32), nil
			widened++
		}
		tensors = append(tensors, tn)
	}
	if widened == 0 {
		t.Fatal("the checkpoint holds no AdamW moments")
	}
	if err := modelfile.WriteOwn(path, tensors, f.Meta); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(context.Background(), dir, nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(params(t, dir), params(t, whole)) {
		t.Error("the run resumed from float64 moments differs from the uninterrupted run")
	}
}

// TestNanoGPTOptionsChangeTraining: each option must act. Dropout, random
// windows, gradient accumulation and the decay groups each give other
// weights than the run without them, and the run learns.
func TestNanoGPTOptionsChangeTraining(t *testing.T) {
	base := t.TempDir()
	rb, err := Run(context.Background(), nanoConfig(t, base), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rows(t, base); !(r[len(r)-1]["loss"].(float64) < r[0]["loss"].(float64)) {
		t.Fatalf("loss did not fall: %v", r)
	}
	if rb.TestBatch != 3 {
		t.Errorf("test loss over %d batches, want train.eval_batches = 3", rb.TestBatch)
	}
	for name, change := range map[string]func(c *config.Config){
		"dropout 0":    func(c *config.Config) { c.Model.Dropout = 0 },
		"windows":      func(c *config.Config) { c.Data.Sampling = "windows" },
		"grad_accum 1": func(c *config.Config) { c.Train.GradAccum = 1 },
		"decay all":    func(c *config.Config) { c.Train.Decay = "all" },
		"another seed": func(c *config.Config) { c.Train.Seed = 7 },
	} {
		dir := t.TempDir()
		c := nanoConfig(t, dir)
		change(c)
		if _, err := Run(context.Background(), c, Options{}); err != nil {
			t.Fatal(err)
		}
		if reflect.DeepEqual(params(t, dir), params(t, base)) {
			t.Errorf("%s: same weights as the nanoGPT-style run", name)
		}
	}
}

func TestRefusesToOverwriteARun(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), tinyConfig(t, dir), Options{}); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), tinyConfig(t, dir), Options{})
	if err == nil || !strings.Contains(err.Error(), "already holds a finished run (60 steps): train it longer with `gptg train --resume "+dir+" --set train.max_steps=120`") {
		t.Fatalf("got %v", err)
	}
	if _, err := Run(context.Background(), tinyConfig(t, dir), Options{Force: true}); err != nil {
		t.Fatalf("--force: %v", err)
	}
	if _, err := Resume(context.Background(), dir, nil, Options{}); err == nil || !strings.Contains(err.Error(), "already finished") {
		t.Fatalf("resume of a finished run: %v", err)
	}
}

// TestDivergenceStopsAndKeepsCheckpoint trains with an absurd learning rate:
// the weights overflow float32, the loss turns non-finite, and training must
// stop naming the step while the last good checkpoint stays loadable.
func TestDivergenceStopsAndKeepsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, dir)
	c.Model.Dtype = "float32"
	c.Train.LR, c.Train.MinLR, c.Train.Warmup = 1e30, 1e30, 0
	c.Train.Clip = 0
	_, err := Run(context.Background(), c, Options{CheckpointEvery: 1})
	if err == nil || !strings.Contains(err.Error(), "step ") || !strings.Contains(err.Error(), "diverged") {
		t.Fatalf("got %v", err)
	}
	f, err := modelfile.Read(filepath.Join(dir, CheckpointFile), modelfile.Limits{})
	if err != nil {
		t.Fatalf("the last checkpoint is gone or broken: %v", err)
	}
	for name, tn := range f.Tensors {
		for _, v := range tn.F32 {
			if v != v {
				t.Fatalf("checkpoint tensor %s holds NaN", name)
			}
		}
	}
}

// TestThreadsGiveSameWeights trains one float32 model, large enough that
// every kernel splits its work, with 1, 2 and 3 threads: the weights after
// the run must be the same bits (issue #10: numbers never depend on the
// thread count), and so must the metrics.
func TestThreadsGiveSameWeights(t *testing.T) {
	// Batch 8: one graph, its ops split over the threads (256 rows × 128:
	// above fused's minParallelActivation). Batch 16: two shards of 8
	// sequences side by side (tape.Shards), their ops split further at 4
	// threads.
	for _, batch := range []int{8, 16} {
		var want map[string]modelfile.Tensor
		var wantRows []map[string]any
		for _, threads := range []int{1, 2, 3, 4} {
			dir := t.TempDir()
			c := tinyConfig(t, dir)
			c.Model.Context, c.Model.Embedding, c.Model.Dtype, c.Model.Dropout = 32, 128, "float32", 0.1
			c.Data.Stride = 16
			c.Train.Batch, c.Train.MaxSteps, c.Train.EvalEvery = batch, 12, 6
			c.Train.Threads = threads
			if _, err := Run(context.Background(), c, Options{}); err != nil {
				t.Fatal(err)
			}
			got, gotRows := params(t, dir), rows(t, dir)
			if threads == 1 {
				want, wantRows = got, gotRows
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("batch %d, %d threads: the weights differ from 1 thread's", batch, threads)
			}
			if !reflect.DeepEqual(gotRows, wantRows) {
				t.Errorf("batch %d, %d threads: the metrics differ from 1 thread's:\n%v\n%v", batch, threads, gotRows, wantRows)
			}
		}
	}
}

// TestNanoGPTConfigs: the configs of nanoGPT's recipes load and describe
// its GPT: the parameter counts nanoGPT prints ("number of parameters:
// 0.80M" and "10.65M", without the position table) plus that table.
func TestNanoGPTConfigs(t *testing.T) {
	for file, want := range map[string]int{
		"shakespeare-char-cpu.toml": 795_904 + 64*128,
		"shakespeare-char.toml":     10_646_784 + 256*384,
	} {
		c, err := config.Load(filepath.Join("..", "configs", "nanogpt", file), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Model.Vocab = 65 // the corpus's, which the test does not read
		m, err := graph.Build(c.Model, graph.Options{Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range m.Params {
			n += p.Value().Shape().TotalSize()
		}
		if n != want {
			t.Errorf("%s: %d parameters, nanoGPT's model has %d", file, n, want)
		}
	}
}
