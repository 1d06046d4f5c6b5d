// The trainer of a GPT run: its corpus, graphs and Stepper, made once.

package train

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/nanogpt"
	"github.com/gptg/gptg/recipe"
)

// trainer is one training run's state.
type trainer struct {
	cfg     *config.Config
	opts    Options
	dir     string
	data    *corpus.Dataset
	prog    *tape.Program // training graph with gradients
	tests   eval.Graphs   // the same model without gradients, for test loss
	opt     *AdamW
	stepper *Stepper
	metrics *metricsLog

	runID      string       // this run's identity (newRunID), "" for runs older than run ids
	origin     corpusOrigin // where the corpus and the config were (config.toml's hints)
	parentLine string       // config.toml's line of the config it extends (parentHeader), kept by a resume
	example    string       // the run's example (exampleSentence, exampleText) for gptg serve
	savedTotal int          // the length the checkpoint resumed from planned
	savedStep  int          // step of the newest checkpoint in the folder, -1 if none

	// pending is a metrics row whose evaluation has not finished yet: an
	// interrupt during an evaluation saves it in the checkpoint, and the
	// resumed run evaluates and writes it first.
	pending     *MetricsRow
	pendingEval bool

	perEpoch, total int
	threads         int       // the goroutines the graphs compute on (threads)
	step            int       // steps done
	trainSecs       float64   // training time up to the clock's last pause, earlier processes' included
	segment         time.Time // when the training clock last started (startClock)
	lossSum         float64   // since the last metrics row
	lossCount       int
	lastGradNorm    float64
	lastTrainLoss   float64
	lastTest        float64

	x, y  []int // batch buffers
	order []int // this epoch's window order
	epoch int   // epoch whose order is in order
}

// newTrainer loads the corpus from dataPath (cfg's data.path, or where a
// resumed run found it: FindCorpus) and, for token files, valPath (cfg's
// data.val_path, or where it was found: FindValidation), and builds the
// graphs. Its steps, in
// order: the corpus and the vocabulary it gives the model, the run's
// length, the graphs, the optimizer.
func newTrainer(ctx context.Context, cfg *config.Config, dataPath, valPath string, opts Options) (*trainer, error) {
	opts = withDefaults(opts, cfg.Train)
	noteBF16(cfg.Model, opts)
	data, err := loadCorpus(ctx, cfg, dataPath, valPath, opts)
	if err != nil {
		return nil, err
	}
	example, err := exampleText(data)
	if err != nil {
		data.Close()
		return nil, err
	}
	t := &trainer{cfg: cfg, opts: opts, dir: cfg.Train.Out, data: data, epoch: -1, savedStep: -1, example: example}
	if err := t.planLength(); err != nil {
		data.Close()
		return nil, err
	}
	// Again now that the vocabulary and the corpus are known: they size the
	// embedding, the output layer, the logits, and what the corpus holds.
	if err := cfg.CheckTrainMemoryOn(data.Memory()); err != nil {
		data.Close()
		return nil, err
	}
	be := threads(opts.Backend, cfg.Train)
	t.threads = be.Threads
	if err := t.compileGraphs(be); err != nil {
		data.Close()
		return nil, err
	}
	t.newStepper()
	n := t.windowsPerStep() * cfg.Model.Context
	t.x, t.y = make([]int, n), make([]int, n)
	t.metrics = &metricsLog{path: filepath.Join(t.dir, MetricsFile)}
	return t, nil
}

// noteBF16 says, once, when bfloat16's products are slower here than
// float32's: on the plain-Go kernel, or where the CPU's bfloat16
// instruction (AMX's TDPBF16PS where the products run on AMX tiles, else
// VDPBF16PS) runs at or under float32's multiply-add rate (measured at
// the start, about 0.2 s). Every kernel computes the same bits, so the
// run is the same run, resumable on any machine, only slower: a note
// rather than a refusal.
func noteBF16(m config.Model, opts Options) {
	if m.Dtype != config.DtypeBF16 || opts.Backend.Unfused {
		return
	}
	if note := bf16Note(fused.BF16Kernel(), fused.BF16PeakRatio); note != "" {
		fmt.Fprintln(opts.Log, note)
	}
}

// bf16Note is noteBF16's line for a kernel (fused.BF16Kernel's name) and
// a measure of its peak over float32's ("" when bfloat16 is the faster
// here). Where the CPU has AMX but the OS refused it, the line says why.
func bf16Note(kernel string, peakRatio func() float64) string {
	if kernel == "go" {
		return "model.dtype bfloat16: this CPU has no AVX512_BF16, so the products run on the plain-Go kernel, far slower than float32 (the same numbers)"
	}
	r := peakRatio()
	if r <= 0 || r > 1 {
		return ""
	}
	unit, why := "VDPBF16PS measures", ""
	if kernel == "amx" {
		unit = "AMX tiles (TDPBF16PS) measure"
	} else if _, reason, ok := strings.Cut(kernel, " ("); ok {
		why = "; " + strings.TrimSuffix(reason, ")")
	}
	return fmt.Sprintf("model.dtype bfloat16: this CPU's %s %.2f× float32's multiply-add rate, so the products run slower than float32 (the same numbers; float32 is faster here: docs/configs.md%s)", unit, r, why)
}

// withDefaults fills in what opts leaves unset: no log, and the config's
// checkpoint interval (1000 for a Config built in code, not loaded).
func withDefaults(opts Options, tr config.Train) Options {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = tr.CheckpointEvery
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = 1000
	}
	return opts
}

// loadCorpus reads (or downloads, or prepares) the corpus at dataPath
// (and valPath) and sets the model's vocabulary from it. An interrupt
// while it loads is ErrInterrupted: nothing has been written yet.
func loadCorpus(ctx context.Context, cfg *config.Config, dataPath, valPath string, opts Options) (*corpus.Dataset, error) {
	from := *cfg
	from.Data.Path, from.Data.ValPath = dataPath, valPath
	if err := recipe.EnsureFiles(from.Data, opts.Log); err != nil {
		return nil, err
	}
	var data *corpus.Dataset
	var err error
	if from.Data.Format == config.FormatTokens {
		data, err = nanogpt.LoadData(ctx, from, opts.Log, opts.Client)
	} else {
		var vocab *corpus.Vocab
		if vocab, err = initBPE(cfg, opts.Init); err != nil {
			return nil, err
		}
		data, err = corpus.LoadForVocab(ctx, from, vocab, opts.Log, opts.Client)
	}
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w while loading %s: nothing was written", ErrInterrupted, dataPath)
	}
	if err != nil {
		return nil, err
	}
	if opts.Init != "" {
		err = checkInitVocab(opts.Init, cfg, data)
	}
	if err == nil {
		cfg.Model.Vocab, err = corpus.ModelVocab(*cfg, data)
	}
	if err != nil {
		data.Close()
		return nil, err
	}
	return data, nil
}

// windowsPerStep is how many context windows one step consumes:
// grad_accum batches of them.
func (t *trainer) windowsPerStep() int {
	return t.cfg.Train.Batch * max(1, t.cfg.Train.GradAccum)
}

// planLength sets the steps per epoch and the run's length, refusing a
// corpus too small for one step or one test batch now, not when the first
// evaluation finds it after hours.
func (t *trainer) planLength() error {
	d, tr, data := t.cfg.Data, t.cfg.Train, t.data
	perStep := t.windowsPerStep()
	if d.Sampling == "random" {
		// An epoch is as many tokens as the training split holds.
		t.perEpoch = data.TrainTokens() / (perStep * t.cfg.Model.Context)
		if data.TrainTokens() <= t.cfg.Model.Context {
			return fmt.Errorf("%s has a training split of %d tokens, not more than context %d", d.Path, data.TrainTokens(), t.cfg.Model.Context)
		}
		t.perEpoch = max(1, t.perEpoch)
	} else if t.perEpoch = data.NumTrain() / perStep; t.perEpoch == 0 {
		return fmt.Errorf("%s has %d training windows, fewer than one step's %d (train.batch × train.grad_accum)", d.Path, data.NumTrain(), perStep)
	}
	if data.TestBatches(tr.Batch) == 0 {
		return fmt.Errorf("%s has %d test windows, fewer than one batch of %d: lower train.batch or data.split",
			d.Path, data.NumTest(), tr.Batch)
	}
	t.total = RunLength(tr, t.perEpoch)
	if t.total < 1 {
		return fmt.Errorf("train.epochs = %v gives no step (%d steps per epoch)", tr.Epochs, t.perEpoch)
	}
	return nil
}

// threads is the backend with its thread count settled: the command
// line's, else the config's, else every core.
func threads(be graph.Backend, tr config.Train) graph.Backend {
	if be.Threads == 0 {
		be.Threads = tr.Threads
	}
	if be.Threads == 0 {
		be.Threads = runtime.GOMAXPROCS(0)
	}
	return be
}

// compileGraphs builds the training step's graph and the evaluation
// graphs. Training and evaluation never run at once: one Memory serves
// both, so evaluation costs no memory beyond the training step's.
func (t *trainer) compileGraphs(be graph.Backend) error {
	cfg, tr := t.cfg, t.cfg.Train
	mem := fused.NewMemory()
	// The training step: one graph, or shards of the batch side by side
	// (tape.CompileTraining).
	var err error
	o := graph.Options{Batch: tr.Batch, Loss: true, Seed: tr.Seed, Dropout: true, Memory: mem, Backend: be}
	if t.opts.weightsGiven {
		o.Weights = graph.Zeros(cfg.Model.Dtype) // no draw that --init or the checkpoint overwrites
	}
	if t.prog, err = tape.CompileTraining(cfg.Model, o); err != nil {
		return err
	}
	// The evaluation graphs: one at the training step's shard size, a
	// part of the batch the test loss is defined over (eval.Graphs.Parts),
	// whose buffers are the first shard's sizes and so borrowed from it,
	// and one at a multiple of the batch that covers several batches per
	// run where that is faster (config's EvalBatch).
	t.tests.Parts = t.prog.Shards()
	if t.tests.Batch, err = t.evalGraph(tr.Batch/t.tests.Parts, mem, be); err != nil {
		return err
	}
	if e := cfg.Model.EvalBatch(tr.Batch, t.testBatches()); e > tr.Batch {
		if t.tests.Chunk, err = t.evalGraph(e, mem, be); err != nil {
			return err
		}
	}
	return nil
}

// evalGraph compiles the model without gradients at batch size batch. It
// reads the training graph's parameter tensors themselves, so it always
// sees the current weights without copying.
func (t *trainer) evalGraph(batch int, mem *fused.Memory, be graph.Backend) (*tape.Program, error) {
	em, err := graph.Build(t.cfg.Model, graph.Options{Batch: batch, Loss: true, Memory: mem, Backend: be,
		Weights: graph.SharedWith(t.prog.Model.Params)})
	if err != nil {
		return nil, err
	}
	return tape.CompileLoss(em, false) // its loss alone is read
}

// newStepper sets up AdamW, the learning-rate schedule over the run's
// length and the Stepper that applies them after each step's gradients.
func (t *trainer) newStepper() {
	tr := t.cfg.Train
	t.opt = &AdamW{Beta1: tr.Beta1, Beta2: tr.Beta2, Eps: tr.Eps, WeightDecay: tr.WeightDecay}
	if tr.Decay == "matrices" {
		t.opt.SkipDecay = SkipDecayBelow2D(t.prog.Model.Params)
	}
	sched := Schedule{Kind: tr.Schedule, LR: tr.LR, MinLR: tr.MinLR, Warmup: tr.Warmup, Total: t.total, Dim: t.cfg.Model.Embedding}
	t.stepper = NewStepper(t.prog, t.opt, sched, tr.Clip)
	t.stepper.Accum, t.stepper.Seed = max(1, tr.GradAccum), tr.Seed
	t.stepper.Comm = t.opts.Comm
}

func (t *trainer) close() {
	t.prog.Close()
	t.tests.Close()
	t.metrics.close()
	t.data.Close()
}

// testBatches is the number of batches a test loss averages.
func (t *trainer) testBatches() int {
	if n := t.cfg.Train.EvalBatches; n > 0 {
		return n
	}
	return t.data.TestBatches(t.cfg.Train.Batch)
}
