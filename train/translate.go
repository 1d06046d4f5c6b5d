package train

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/runlock"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/translate"
)

// translation is one training run of the encoder–decoder (model.arch =
// "encoder-decoder"): the same AdamW, clipping, schedule, metrics and run
// folder as the GPT's, over batches of sentence pairs. One training graph
// per batch shape (data.buckets) and one evaluation graph per shape share
// the parameters' values.
type translation struct {
	cfg    *config.Config
	opts   Options
	corpus *pairs.Corpus
	train  *pairs.Batcher
	test   *pairs.Batcher
	progs  []*tape.TranslationProgram // training graphs, one per shape
	evals  []*tape.TranslationProgram // evaluation graphs (no dropout, no gradients)
	params []*graph.Param             // the first training graph's: the model's weights
	opt    *AdamW
	sched  Schedule
	clip   clipper
	pairs  [][]G.ValueGrad // per graph: its parameters (shared values) and gradients
	grads  [][]any
}

// runTranslation is Run for an encoder–decoder config. Resuming is not
// supported yet: an interrupted run keeps its model file of the last
// evaluation.
func runTranslation(ctx context.Context, cfg *config.Config, opts Options) (*Result, error) {
	dir := cfg.Train.Out
	if msg := checkRunFolder(dir); msg != "" {
		return nil, &config.Error{File: cfg.Path, Key: "train.out", Msg: msg}
	}
	if err := refuseExistingRun(dir, opts.Force); err != nil {
		return nil, err
	}
	tr, err := newTranslation(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run folder: %w", err)
	}
	lock, err := runlock.Acquire(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	for _, name := range runFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("starting over in %s: %w", dir, err)
		}
	}
	t := &trainer{cfg: cfg, opts: opts, dir: dir, runID: newRunID(), origin: newOrigin(cfg.Data.Path, cfg.Path, dir)}
	if err := t.writeConfig(); err != nil {
		return nil, err
	}
	return tr.loop(ctx, dir)
}

func newTranslation(cfg *config.Config, opts Options) (*translation, error) {
	c, err := pairs.LoadFor(cfg)
	if err != nil {
		return nil, err
	}
	if len(c.Train) == 0 || len(c.Test) == 0 {
		return nil, fmt.Errorf("%s: %d training and %d test pairs after the length filter: both need at least one", c.Path, len(c.Train), len(c.Test))
	}
	fmt.Fprintf(opts.Log, "%s: %d training pairs, %d test pairs (%d left out by the length filter); vocabularies %d source, %d target words\n",
		c.Path, len(c.Train), len(c.Test), c.TooShort+c.TooLong, c.Src.Size(), c.Tgt.Size())
	B := cfg.Train.Batch
	tr := &translation{cfg: cfg, opts: opts, corpus: c}
	tr.train = pairs.NewBatcher(c.Train, B, cfg.Data.MaxSource, cfg.Data.MaxTarget, cfg.Data.Buckets)
	tr.test = pairs.NewBatcherShapes(c.Test, B, tr.train.Shapes())
	spec := translate.Spec(cfg.Model, c.Src.Size(), c.Tgt.Size())
	mem := fused.NewMemory()
	for k, s := range tr.train.Shapes() {
		o := graph.TranslationOptions{Batch: B, SrcLen: s.S, TgtLen: s.T, Loss: true, Dropout: true,
			Seed: cfg.Train.Seed, Memory: mem, Backend: opts.Backend}
		p, err := compileTranslation(spec, o, true)
		if err != nil {
			return nil, err
		}
		o.Dropout = false
		e, err := compileTranslation(spec, o, false)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			tr.params = p.Params
		}
		// Every graph reads the first graph's weights: AdamW updates them
		// in place, and every shape sees the update.
		for _, other := range [][]*graph.Param{p.Params, e.Params} {
			for i, prm := range other {
				if err := G.Let(prm.Node, tr.params[i].Value()); err != nil {
					return nil, fmt.Errorf("sharing %s: %w", prm.Name, err)
				}
			}
		}
		tr.progs, tr.evals = append(tr.progs, p), append(tr.evals, e)
		vg := make([]G.ValueGrad, len(p.Params))
		for i := range p.Params {
			vg[i] = paramGrad{tr.params[i].Node, p.Grads[i]}
		}
		tr.pairs = append(tr.pairs, vg)
		tr.grads = append(tr.grads, make([]any, len(p.Grads)))
	}
	t := cfg.Train
	tr.opt = &AdamW{LR: t.LR, Beta1: t.Beta1, Beta2: t.Beta2, Eps: t.Eps, WeightDecay: t.WeightDecay}
	tr.sched = Schedule{Kind: t.Schedule, LR: t.LR, MinLR: t.MinLR, Warmup: t.Warmup, Total: tr.total(), Dim: cfg.Model.Embedding}
	return tr, nil
}

func compileTranslation(spec graph.TranslationSpec, o graph.TranslationOptions, grads bool) (*tape.TranslationProgram, error) {
	m, err := graph.BuildTranslation(spec, o)
	if err != nil {
		return nil, err
	}
	return tape.CompileTranslation(m, grads)
}

// perEpoch is the number of batches in one pass over the training pairs.
func (tr *translation) perEpoch() int { return len(tr.train.Epoch(0, 0)) }

// total is the number of steps: train.max_steps, or train.epochs passes.
func (tr *translation) total() int { return TranslationSteps(tr.cfg, tr.perEpoch()) }

// TranslationSteps is the number of steps a translation run of cfg takes
// when an epoch is perEpoch batches: train.max_steps, or train.epochs
// passes. Step s trains on batch s % perEpoch of
// Batcher.Epoch(train.seed, s / perEpoch).
func TranslationSteps(cfg *config.Config, perEpoch int) int {
	if cfg.Train.MaxSteps > 0 {
		return cfg.Train.MaxSteps
	}
	return max(1, int(math.Round(cfg.Train.Epochs*float64(perEpoch))))
}

// loop trains for total steps, logging every log_every steps, evaluating
// every eval_every steps and at the end; the model file is written after
// every evaluation, and on an interrupt.
func (tr *translation) loop(ctx context.Context, dir string) (*Result, error) {
	cfg := tr.cfg.Train
	total, perEpoch := tr.total(), tr.perEpoch()
	ml := &metricsLog{path: filepath.Join(dir, MetricsFile)}
	if err := ml.reset(0, 0, tr.opts.Log); err != nil {
		return nil, err
	}
	defer ml.close()
	bar := newProgress(tr.opts, total, 0)
	defer bar.finish()
	batches := make([]*pairs.Batch, len(tr.progs))
	for k := range batches {
		batches[k] = tr.train.NewBatch(k)
	}
	var plans []pairs.Plan
	var (
		lossSum, trainSecs, tokens, lastTest, lastTrain float64
		lossCount                                       int
	)
	for step := 0; step < total; step++ {
		if ctx.Err() != nil {
			bar.finish()
			if err := tr.save(dir); err != nil {
				return nil, fmt.Errorf("interrupted, and saving failed: %w", err)
			}
			fmt.Fprintf(tr.opts.Log, "\ninterrupted at step %d of %d; model saved in %s (translation runs cannot be resumed yet)\n", step, total, dir)
			return nil, ErrInterrupted
		}
		if step%perEpoch == 0 {
			plans = tr.train.Epoch(uint64(cfg.Seed), step/perEpoch)
		}
		plan := plans[step%perEpoch]
		b, p := batches[plan.Bucket], tr.progs[plan.Bucket]
		tr.train.Fill(plan, b)
		start := time.Now()
		r := StepResult{LR: tr.sched.At(step)}
		p.SetDropout(cfg.Seed, uint64(step))
		if err := p.Run(b.Src, b.DecIn, b.DecTgt); err != nil {
			return nil, err
		}
		r.Loss = p.Loss()
		for i, g := range p.Grads {
			tr.grads[plan.Bucket][i] = g.Value().Data()
		}
		r.GradNorm = tr.clip.clip(tr.grads[plan.Bucket], cfg.Clip)
		if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) || math.IsNaN(r.GradNorm) || math.IsInf(r.GradNorm, 0) {
			return nil, fmt.Errorf("step %d: loss %v, gradient norm %v: training diverged (try a lower lr or a longer warmup)", step+1, r.Loss, r.GradNorm)
		}
		tr.opt.LR = r.LR
		if err := tr.opt.Step(tr.pairs[plan.Bucket]); err != nil {
			return nil, err
		}
		trainSecs += time.Since(start).Seconds()
		tokens += float64(b.Tokens)
		lossSum += r.Loss
		lossCount++

		done := step + 1
		evalNow := done == total || (cfg.EvalEvery > 0 && done%cfg.EvalEvery == 0)
		if !evalNow && done%max(1, cfg.LogEvery) != 0 {
			bar.step(done, r)
			continue
		}
		row := MetricsRow{Step: done, Epoch: float64(done) / float64(perEpoch), LR: r.LR,
			Loss: lossSum / float64(lossCount), GradNorm: r.GradNorm,
			TokensPerSec: tokens / trainSecs, ElapsedSecs: trainSecs, HeapMB: heapMB(), RSSMB: rssMB()}
		lastTrain, lossSum, lossCount = row.Loss, 0, 0
		if evalNow {
			bar.evaluating(done)
			tl, err := tr.testLoss()
			if err != nil {
				return nil, err
			}
			row.TestLoss, lastTest = &tl, tl
			if err := tr.save(dir); err != nil {
				return nil, err
			}
		}
		if err := ml.append(row); err != nil {
			return nil, err
		}
		bar.row(row, total)
	}
	bar.finish()
	return &Result{Dir: dir, Steps: total, TrainLoss: lastTrain, TestLoss: lastTest,
		TestBatch: len(tr.test.InOrder()), TrainSecs: trainSecs, TokensPerSec: tokens / trainSecs}, nil
}

// testLoss is the mean loss per non-PAD target over the whole test split:
// each batch's mean weighted by its number of targets.
func (tr *translation) testLoss() (float64, error) {
	return TranslationLoss(tr.test, tr.evals)
}

// TranslationLoss is the mean loss per non-PAD target over every batch
// of b, run on evals (one evaluation graph per shape of b).
func TranslationLoss(b *pairs.Batcher, evals []*tape.TranslationProgram) (float64, error) {
	batches := make([]*pairs.Batch, len(evals))
	for k := range batches {
		batches[k] = b.NewBatch(k)
	}
	sum, n := 0.0, 0
	for _, plan := range b.InOrder() {
		batch := batches[plan.Bucket]
		b.Fill(plan, batch)
		if err := evals[plan.Bucket].Run(batch.Src, batch.DecIn, batch.DecTgt); err != nil {
			return 0, err
		}
		sum += evals[plan.Bucket].Loss() * float64(batch.Tokens)
		n += batch.Tokens
	}
	if n == 0 {
		return 0, fmt.Errorf("the test split has no target words")
	}
	return sum / float64(n), nil
}

// save writes the model file.
func (tr *translation) save(dir string) error {
	c := tr.corpus
	return translate.Save(filepath.Join(dir, ModelFile), tr.cfg.Model, c.Src, c.Tgt,
		tr.cfg.Data.MaxSource, tr.cfg.Data.MaxTarget, tr.params)
}
