// Package train runs the training loop: one static graph, compiled once,
// fed a batch per step, its gradients clipped and applied by AdamW, with
// evaluation, metrics, checkpoints and resume.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/gptg/gptg/internal/atomicfile"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/graph"
)

// ErrInterrupted is returned when a signal stopped training after a
// checkpoint was written; the caller exits 130.
var ErrInterrupted = errors.New("training interrupted")

// Options are the parts of a run that are not in the config.
type Options struct {
	Log      io.Writer    // progress and messages (os.Stdout)
	Progress bool         // a live progress bar instead of periodic lines
	Force    bool         // start over in a run folder that holds a run
	Client   *http.Client // for downloading the corpus; nil = http.DefaultClient
	// CheckpointEvery, when set, replaces the config's train.checkpoint_every.
	CheckpointEvery int
	// AfterStep, when set, is called after every step (tests interrupt here).
	AfterStep func(step int)
	// Backend says how the graphs compute (fused or not); see graph.Backend.
	Backend graph.Backend
}

// Result summarises a finished run.
type Result struct {
	Dir          string
	Steps        int
	TrainLoss    float64 // mean loss over the last logged interval
	TestLoss     float64
	TestBatch    int     // number of test batches the loss averages
	TrainSecs    float64 // training time, evaluation excluded
	TokensPerSec float64
}

// File names inside a run folder.
const (
	ConfigFile     = "config.toml"
	ModelFile      = "model.safetensors"
	MetricsFile    = "metrics.jsonl"
	CheckpointFile = "checkpoint.safetensors"
)

// Run trains cfg from scratch into cfg.Train.Out.
func Run(ctx context.Context, cfg *config.Config, opts Options) (*Result, error) {
	dir := cfg.Train.Out
	if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); err == nil && !opts.Force {
		return nil, fmt.Errorf("run folder %s already holds a run: continue it with `gptg train --resume %s`, or start over with --force", dir, dir)
	}
	t, err := newTrainer(cfg, opts)
	if err != nil {
		return nil, err
	}
	defer t.close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run folder: %w", err)
	}
	// Starting over (--force): the old run's checkpoint and model must not
	// survive beside the new run's files, where a resume would mix them.
	for _, name := range []string{CheckpointFile, ModelFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("starting over in %s: %w", dir, err)
		}
	}
	text, err := cfg.TOML()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ConfigFile), text); err != nil {
		return nil, err
	}
	if err := t.metrics.reset(0); err != nil {
		return nil, err
	}
	return t.loop(ctx)
}

// Resume continues the run in dir from its checkpoint. The result is the
// same, timings aside, as if the run had never stopped.
func Resume(ctx context.Context, dir string, opts Options) (*Result, error) {
	cfg, err := config.Load(filepath.Join(dir, ConfigFile), nil)
	if err != nil {
		return nil, fmt.Errorf("resuming %s: %w", dir, err)
	}
	cfg.Train.Out = dir
	t, err := newTrainer(cfg, opts)
	if err != nil {
		return nil, err
	}
	defer t.close()
	if err := t.loadCheckpoint(); err != nil {
		return nil, err
	}
	if t.step >= t.total {
		return nil, fmt.Errorf("run %s already finished its %d steps", dir, t.total)
	}
	fmt.Fprintf(opts.Log, "resuming %s at step %d of %d\n", dir, t.step, t.total)
	return t.loop(ctx)
}

// trainer is one training run's state.
type trainer struct {
	cfg     *config.Config
	opts    Options
	dir     string
	data    *corpus.Dataset
	prog    *graph.Program // training graph with gradients
	eval    *graph.Program // the same model without gradients, for test loss
	opt     *AdamW
	stepper *Stepper
	metrics *metricsLog

	perEpoch, total int
	step            int     // steps done
	trainSecs       float64 // training time of earlier processes of this run
	lossSum         float64 // since the last metrics row
	lossCount       int
	lastGradNorm    float64
	lastTrainLoss   float64
	lastTest        float64

	x, y  []int // batch buffers
	order []int // this epoch's window order
	epoch int   // epoch whose order is in order
}

func newTrainer(cfg *config.Config, opts Options) (*trainer, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = cfg.Train.CheckpointEvery
	}
	if opts.CheckpointEvery <= 0 { // a Config built in code, not loaded
		opts.CheckpointEvery = 1000
	}
	data, err := corpus.LoadFor(cfg, opts.Log, opts.Client)
	if err != nil {
		return nil, err
	}
	d, tr := cfg.Data, cfg.Train
	t := &trainer{cfg: cfg, opts: opts, dir: tr.Out, data: data, epoch: -1}
	t.perEpoch = data.NumTrain() / tr.Batch
	if t.perEpoch == 0 {
		return nil, fmt.Errorf("%s has %d training windows, fewer than one batch of %d", d.Path, data.NumTrain(), tr.Batch)
	}
	// Checked now, not when the first evaluation finds it after hours.
	if data.TestBatches(tr.Batch) == 0 {
		return nil, fmt.Errorf("%s has %d test windows, fewer than one batch of %d: lower train.batch or data.split",
			d.Path, data.NumTest(), tr.Batch)
	}
	t.total = int(float64(t.perEpoch) * tr.Epochs)
	if tr.MaxSteps > 0 && tr.MaxSteps < t.total {
		t.total = tr.MaxSteps
	}
	if t.total < 1 {
		return nil, fmt.Errorf("train.epochs = %v gives no step (%d steps per epoch)", tr.Epochs, t.perEpoch)
	}

	// Threads: the command line's, else the config's, else every core.
	be := opts.Backend
	if be.Threads == 0 {
		be.Threads = tr.Threads
	}
	if be.Threads == 0 {
		be.Threads = runtime.GOMAXPROCS(0)
	}
	m, err := graph.Build(cfg.Model, graph.Options{Batch: tr.Batch, Loss: true, Seed: tr.Seed, Backend: be})
	if err != nil {
		return nil, err
	}
	if t.prog, err = graph.Compile(m, true); err != nil {
		return nil, err
	}
	em, err := graph.Build(cfg.Model, graph.Options{Batch: tr.Batch, Loss: true, Seed: tr.Seed, Backend: be})
	if err != nil {
		return nil, err
	}
	// The evaluation graph reads the training graph's parameter tensors
	// themselves, so it always sees the current weights without copying.
	for i, p := range em.Params {
		if err := G.Let(p.Node, m.Params[i].Value()); err != nil {
			return nil, fmt.Errorf("sharing %s with the evaluation graph: %w", p.Name, err)
		}
	}
	if t.eval, err = graph.Compile(em, false); err != nil {
		return nil, err
	}
	t.opt = &AdamW{Beta1: tr.Beta1, Beta2: tr.Beta2, Eps: tr.Eps, WeightDecay: tr.WeightDecay}
	sched := Schedule{LR: tr.LR, MinLR: tr.MinLR, Warmup: tr.Warmup, Total: t.total}
	t.stepper = NewStepper(t.prog, t.opt, sched, tr.Clip)
	n := tr.Batch * cfg.Model.Context
	t.x, t.y = make([]int, n), make([]int, n)
	t.metrics = &metricsLog{path: filepath.Join(t.dir, MetricsFile)}
	return t, nil
}

func (t *trainer) close() {
	t.prog.Close()
	t.eval.Close()
	t.metrics.close()
}

// batch fills t.x and t.y with the windows of step s: epoch s/perEpoch
// visits the training windows in an order drawn from (seed, epoch) alone,
// so a resumed run needs only its step to find its place.
func (t *trainer) batch(s int) {
	B := t.cfg.Train.Batch
	if e := s / t.perEpoch; e != t.epoch {
		rng := rand.New(rand.NewPCG(uint64(t.cfg.Train.Seed), uint64(e)))
		t.order = rng.Perm(t.data.NumTrain())
		t.epoch = e
	}
	i := s % t.perEpoch
	t.data.TrainBatch(t.x, t.y, t.order[i*B:(i+1)*B])
}

// testLoss is the seed's test loss of the current weights.
func (t *trainer) testLoss() (float64, int, error) {
	return eval.TestLoss(t.eval, t.data)
}

// loop trains from t.step to t.total.
func (t *trainer) loop(ctx context.Context) (*Result, error) {
	cfg := t.cfg.Train
	tokensPerStep := float64(cfg.Batch * t.cfg.Model.Context)
	bar := newProgress(t.opts, t.total, t.step)
	defer bar.finish()
	segment := time.Now() // training time since the last pause (eval, checkpoint)
	secs := func() float64 { return t.trainSecs + time.Since(segment).Seconds() }
	pause := func() { t.trainSecs += time.Since(segment).Seconds() }
	resume := func() { segment = time.Now() }

	for t.step < t.total {
		if err := ctx.Err(); err != nil {
			pause()
			if err := t.saveAll(); err != nil {
				return nil, fmt.Errorf("interrupted, and saving failed: %w", err)
			}
			bar.finish()
			fmt.Fprintf(t.opts.Log, "\ninterrupted at step %d of %d; checkpoint and model saved in %s\nresume with: gptg train --resume %s\n",
				t.step, t.total, t.dir, t.dir)
			return nil, ErrInterrupted
		}
		t.batch(t.step)
		r, err := t.stepper.Step(t.step, t.x, t.y)
		if err != nil {
			return nil, fmt.Errorf("%w; the last good checkpoint is in %s", err, t.dir)
		}
		t.step++
		t.lossSum += r.Loss
		t.lossCount++
		t.lastGradNorm = r.GradNorm

		last := t.step == t.total
		evalNow := last || (cfg.EvalEvery > 0 && t.step%cfg.EvalEvery == 0)
		logNow := evalNow || t.step%cfg.LogEvery == 0
		if logNow {
			elapsed := secs()
			row := metricsRow{
				Step: t.step, Epoch: float64(t.step) / float64(t.perEpoch), LR: r.LR,
				Loss: t.lossSum / float64(t.lossCount), GradNorm: r.GradNorm,
				TokensPerSec: float64(t.step) * tokensPerStep / elapsed, ElapsedSecs: elapsed,
				HeapMB: heapMB(), RSSMB: rssMB(),
			}
			t.lastTrainLoss = row.Loss
			t.lossSum, t.lossCount = 0, 0
			if evalNow {
				pause()
				tl, _, err := t.testLoss()
				if err != nil {
					return nil, err
				}
				row.TestLoss = &tl
				t.lastTest = tl
			}
			if err := t.metrics.append(row); err != nil {
				return nil, err
			}
			bar.row(row, t.total)
			if evalNow {
				if err := t.saveAll(); err != nil {
					return nil, err
				}
				resume()
			}
		} else {
			bar.step(t.step, r)
		}
		if !evalNow && t.step%t.opts.CheckpointEvery == 0 {
			pause()
			if err := t.saveAll(); err != nil {
				return nil, err
			}
			resume()
		}
		if t.opts.AfterStep != nil {
			t.opts.AfterStep(t.step)
		}
	}
	bar.finish()
	res := &Result{
		Dir: t.dir, Steps: t.step, TrainLoss: t.lastTrainLoss, TestLoss: t.lastTest,
		TestBatch: t.data.TestBatches(cfg.Batch), TrainSecs: t.trainSecs,
		TokensPerSec: float64(t.step) * tokensPerStep / t.trainSecs,
	}
	return res, nil
}

// heapMB is the heap the last garbage collection found live, in MiB: unlike
// the momentary heap size it does not saw up and down between collections,
// so a leak shows as a rising line.
func heapMB() float64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(s[0].Value.Uint64()) / (1 << 20)
}

// rssMB is the process's resident memory in MiB (Linux; 0 elsewhere).
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return float64(resident*int64(os.Getpagesize())) / (1 << 20)
}

// saveAll writes the checkpoint and then the model file, each atomically.
// The checkpoint goes first, so a write that fails (a full disk) leaves
// both files as they were, at the same earlier step; a crash between the
// two leaves a newer checkpoint beside an older model, which the next save
// of the resumed run brings level.
func (t *trainer) saveAll() error {
	if err := t.saveCheckpoint(); err != nil {
		return fmt.Errorf("saving the checkpoint: %w", err)
	}
	if err := graph.SaveModel(filepath.Join(t.dir, ModelFile), t.cfg.Model, t.data.Vocab, t.prog.Params); err != nil {
		return fmt.Errorf("saving the model: %w", err)
	}
	return nil
}
