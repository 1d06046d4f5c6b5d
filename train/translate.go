package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/runlock"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/translate"
)

// translation is one training run of the encoder–decoder (model.arch =
// "encoder-decoder"): the same AdamW, clipping, schedule, metrics,
// checkpoints and run folder as the GPT's, over batches of sentence pairs.
// One training graph per batch shape (data.buckets) and one evaluation
// graph per shape share the parameters' values.
type translation struct {
	cfg    *config.Config
	opts   Options
	dir    string
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
	// sums holds the sums of a step's batch gradients (train.grad_accum > 1).
	sums []any
	// threads is the goroutines the graphs compute on (threads).
	threads int

	runID   string       // this run's identity (config.toml and checkpoints carry it)
	origin  corpusOrigin // where the corpus and the config were
	example string       // the sentence config.toml records for gptg serve (exampleSentence)
	metrics *metricsLog

	// The loop's state: all a checkpoint needs besides the weights and
	// AdamW's moments. The batch order and the dropout masks follow from
	// (seed, step) alone.
	step, total, savedTotal     int
	trainSecs, tokens, lossSum  float64
	lossCount                   int
	lastTest, lastTrain, lastGN float64
	savedStep                   int // step of the newest checkpoint, -1 if none
}

// runTranslation is Run for an encoder–decoder config.
func runTranslation(ctx context.Context, cfg *config.Config, opts Options) (*Result, error) {
	dir := cfg.Train.Out
	if msg := checkRunFolder(dir); msg != "" {
		return nil, &config.Error{File: cfg.Path, Key: "train.out", Msg: msg}
	}
	if err := runlock.Busy(dir); err != nil {
		return nil, err
	}
	if err := refuseExistingRun(dir, opts); err != nil {
		return nil, err
	}
	opts.starting()
	if err := downloadPairs(ctx, cfg.Data, opts); err != nil {
		return nil, err
	}
	tr, err := newTranslation(cfg, cfg.Data.Path, opts)
	if err != nil {
		return nil, err
	}
	// The run's record of its corpus, as a GPT run's (corpus.go): checked
	// by gptg train --resume and gptg eval.
	cfg.Data.SHA256, cfg.Data.Size = tr.corpus.SHA256, tr.corpus.Size
	if opts.Init != "" {
		if err := tr.initFrom(opts.Init); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run folder: %w", err)
	}
	lock, err := runlock.Acquire(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	if err := refuseExistingRun(dir, opts); err != nil { // made by another process meanwhile
		return nil, err
	}
	if err := startOver(dir); err != nil {
		return nil, err
	}
	tr.runID, tr.origin, tr.opts.lock = newRunID(), newOrigin(cfg.Data, cfg.Path, dir), lock
	if err := tr.writeConfig(); err != nil {
		return nil, err
	}
	if err := tr.metrics.reset(0, 0, tr.opts.Log); err != nil {
		return nil, err
	}
	defer tr.metrics.close()
	return tr.loop(ctx)
}

// downloadPairs fetches a missing pairs file from data.url, as a text
// corpus is fetched (corpus.EnsureContext: checked against data.sha256
// before it is written, nothing left behind by a failure).
func downloadPairs(ctx context.Context, d config.Data, opts Options) error {
	if d.URL == "" {
		return nil
	}
	if _, err := os.Stat(d.Path); !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or pairs.Load says what is wrong with it
	}
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "%s is missing: downloading %s\n", d.Path, d.URL)
	}
	err := corpus.EnsureContext(ctx, d.Path, d.URL, d.SHA256, opts.Client)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w while downloading %s: nothing was written", ErrInterrupted, d.URL)
	}
	return err
}

// resumeTranslation is Resume for an encoder–decoder run: dir's lock is
// held, cfg is its config.toml (text, as read) with any new length set.
func resumeTranslation(ctx context.Context, dir string, cfg *config.Config, text []byte, sets []string, opts Options) (*Result, error) {
	origin := readOrigin(text)
	data, err := findCorpus(dir, cfg.Data, origin)
	if err != nil {
		return nil, err // it names the run
	}
	origin.setFile(data, dir)
	tr, err := newTranslation(cfg, data, opts)
	if err != nil {
		return nil, err
	}
	tr.origin, tr.runID = origin, readRunID(text)
	st, err := readCheckpoint(dir, cfg, tr.runID, tr.total, tr.params, tr.opt)
	if err != nil {
		return nil, err
	}
	tr.step, tr.savedTotal, tr.savedStep = st.Step, st.Total, st.Step
	tr.trainSecs, tr.tokens = st.TrainSecs, st.Tokens
	tr.lossSum, tr.lossCount = st.LossSum, st.LossCount
	tr.lastTest, tr.lastTrain, tr.lastGN = st.LastTest, st.LastTrainLoss, st.LastGradNorm
	if tr.step >= tr.total {
		if !ModelBehind(dir) {
			return nil, fmt.Errorf("run %s already finished its %d steps: train it longer with `gptg train --resume %s --set train.max_steps=%d` (or train.epochs)",
				dir, tr.total, dir, 2*tr.total)
		}
		if err := tr.save(dir); err != nil {
			return nil, fmt.Errorf("saving the model: %w", err)
		}
		fmt.Fprintf(tr.opts.Log, "run %s had finished its %d steps, but its %s was missing or older than its checkpoint (killed while writing it): written from the checkpoint\n", dir, tr.total, ModelFile)
		return tr.result(), nil
	}
	if len(sets) > 0 { // the new length goes on record for the next resume
		if err := tr.writeConfig(); err != nil {
			return nil, err
		}
	}
	if err := tr.metrics.reset(st.MetricsRows, st.Step, tr.opts.Log); err != nil {
		return nil, err
	}
	defer tr.metrics.close()
	if tr.savedTotal != tr.total {
		fmt.Fprintf(tr.opts.Log, "resuming %s at step %d, extended from %d to %d steps\n", dir, tr.step, tr.savedTotal, tr.total)
	} else {
		fmt.Fprintf(tr.opts.Log, "resuming %s at step %d of %d\n", dir, tr.step, tr.total)
	}
	return tr.loop(ctx)
}

// writeConfig writes the run's resolved config with its run id and where
// its corpus was, as a GPT run's.
func (tr *translation) writeConfig() error {
	t := &trainer{cfg: tr.cfg, dir: tr.dir, runID: tr.runID, origin: tr.origin, example: tr.example}
	return t.writeConfig()
}

// newTranslation loads the pairs from dataPath (cfg's data.path, or where
// a resumed run found its corpus) and builds the graphs.
func newTranslation(cfg *config.Config, dataPath string, opts Options) (*translation, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	from := *cfg
	from.Data.Path = dataPath
	c, err := pairs.LoadFor(&from)
	if err != nil {
		return nil, err
	}
	switch d := cfg.Data; {
	case d.SHA256 != "" && d.SHA256 != c.SHA256:
		return nil, &pairs.Error{Path: dataPath, Msg: fmt.Sprintf("has sha256 %s, but [data] sha256 expects %s", c.SHA256, d.SHA256)}
	case d.Size != 0 && d.Size != c.Size:
		return nil, &pairs.Error{Path: dataPath, Msg: fmt.Sprintf("has %d bytes, but [data] size expects %d", c.Size, d.Size)}
	}
	if len(c.Train) == 0 || len(c.Test) == 0 {
		return nil, fmt.Errorf("%s: %d training and %d test pairs after the length filter: both need at least one", c.Path, len(c.Train), len(c.Test))
	}
	fmt.Fprintf(opts.Log, "%s: %d training pairs, %d test pairs (%d left out by the length filter); vocabularies %d source, %d target words\n",
		c.Path, len(c.Train), len(c.Test), c.TooShort+c.TooLong, c.Src.Size(), c.Tgt.Size())
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = cfg.Train.CheckpointEvery
	}
	if opts.CheckpointEvery <= 0 { // a Config built in code, not loaded
		opts.CheckpointEvery = 1000
	}
	B := cfg.Train.Batch
	dir := cfg.Train.Out
	be := threads(opts.Backend, cfg.Train)
	tr := &translation{cfg: cfg, opts: opts, dir: dir, corpus: c, savedStep: -1, example: exampleSentence(c), threads: be.Threads,
		metrics: &metricsLog{path: filepath.Join(dir, MetricsFile)}}
	tr.train = pairs.NewBatcher(c.Train, B, cfg.Data.MaxSource, cfg.Data.MaxTarget, cfg.Data.Buckets)
	tr.test = pairs.NewBatcherShapes(c.Test, B, tr.train.Shapes())
	if err := checkTranslationMemory(cfg, c, tr.train.Shapes()); err != nil {
		return nil, err
	}
	spec := translate.Spec(cfg.Model, c.Src.Size(), c.Tgt.Size())
	mem := fused.NewMemory()
	for k, s := range tr.train.Shapes() {
		o := graph.TranslationOptions{Batch: B, SrcLen: s.S, TgtLen: s.T, Loss: true, Dropout: true,
			Seed: cfg.Train.Seed, Memory: mem, Backend: be}
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
	tr.total = tr.totalSteps()
	tr.opt = &AdamW{LR: t.LR, Beta1: t.Beta1, Beta2: t.Beta2, Eps: t.Eps, WeightDecay: t.WeightDecay}
	if t.Decay == "matrices" {
		tr.opt.SkipDecay = SkipDecayBelow2D(tr.params)
	}
	tr.sched = Schedule{Kind: t.Schedule, LR: t.LR, MinLR: t.MinLR, Warmup: t.Warmup, Total: tr.total, Dim: cfg.Model.Embedding}
	return tr, nil
}

// checkTranslationMemory refuses training cfg on corpus c over batches
// of shapes when it would need more than train.max_memory or than the
// process may still take, before any graph is built (config's
// TranslationTrainMemory).
func checkTranslationMemory(cfg *config.Config, c *pairs.Corpus, shapes []pairs.Shape) error {
	var held config.TranslationPairs
	for _, ps := range [][]pairs.Pair{c.Train, c.Test} {
		for _, p := range ps {
			held.Pairs++
			held.IDs += int64(len(p.Src) + len(p.Tgt))
			held.TextBytes += int64(len(p.SrcText) + len(p.TgtText))
		}
	}
	ts := make([]config.TranslationShape, len(shapes))
	for i, s := range shapes {
		ts[i] = config.TranslationShape{S: s.S, T: s.T}
	}
	return cfg.CheckTranslationTrainMemory(c.Src.Size(), c.Tgt.Size(), ts, held)
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

// accumSteps is train.grad_accum: the batches one step averages.
func (tr *translation) accumSteps() int { return max(1, tr.cfg.Train.GradAccum) }

// totalSteps is the number of steps: train.max_steps, or train.epochs passes.
func (tr *translation) totalSteps() int { return TranslationSteps(tr.cfg, tr.perEpoch()) }

// TranslationSteps is the number of steps a translation run of cfg takes
// when an epoch is perEpoch batches: train.max_steps, or train.epochs
// passes of train.grad_accum batches a step. Step s trains on the batches
// k = s·grad_accum … (s+1)·grad_accum − 1, batch k being batch
// k % perEpoch of Batcher.Epoch(train.seed, k / perEpoch).
func TranslationSteps(cfg *config.Config, perEpoch int) int {
	if cfg.Train.MaxSteps > 0 {
		return cfg.Train.MaxSteps
	}
	return max(1, int(math.Round(cfg.Train.Epochs*float64(perEpoch)/float64(max(1, cfg.Train.GradAccum)))))
}

// loop trains from tr.step to tr.total, logging every log_every steps and
// evaluating every eval_every steps and at the end. The checkpoint and the
// model file are written after every evaluation, every
// train.checkpoint_every steps and on an interrupt (Ctrl-C), so that
// gptg train --resume continues as if the run had never stopped.
func (tr *translation) loop(ctx context.Context) (*Result, error) {
	cfg := tr.cfg.Train
	perEpoch := tr.perEpoch()
	bar := newProgress(tr.opts, tr.total, tr.step)
	defer bar.finish()
	feed := &pairFeed{batcher: tr.train, seed: uint64(cfg.Seed), perEpoch: perEpoch, epoch: -1}
	for k := range len(tr.progs) {
		feed.batches = append(feed.batches, tr.train.NewBatch(k))
	}
	for tr.step < tr.total {
		if ctx.Err() != nil {
			return nil, tr.stopInterrupted(bar)
		}
		r, err := tr.trainStep(feed)
		if err != nil {
			return nil, err
		}
		done := tr.step
		evalNow := done == tr.total || (cfg.EvalEvery > 0 && done%cfg.EvalEvery == 0)
		if !evalNow && done%max(1, cfg.LogEvery) != 0 {
			bar.step(done, r)
		} else if err := tr.writeRow(bar, r, evalNow, perEpoch); err != nil {
			return nil, err
		}
		if evalNow || done%tr.opts.CheckpointEvery == 0 {
			if err := tr.saveAll(); err != nil {
				return nil, err
			}
		}
		if tr.opts.AfterStep != nil {
			tr.opts.AfterStep(done)
		}
	}
	bar.finish()
	return tr.result(), nil
}

// stopInterrupted saves the run at the step it reached when a signal
// stopped it, and says how to go on.
func (tr *translation) stopInterrupted(bar *trainProgress) error {
	bar.finish()
	if err := tr.saveAll(); err != nil {
		return fmt.Errorf("interrupted, and saving failed: %w", err)
	}
	fmt.Fprintf(tr.opts.Log, "\ninterrupted at step %d of %d; checkpoint and model saved in %s\nresume with: gptg train --resume %s\n",
		tr.step, tr.total, tr.dir, tr.dir)
	return ErrInterrupted
}

// pairFeed hands out the training batches in each epoch's order: batch k
// of the run is plan k mod perEpoch of epoch k / perEpoch, one batch
// buffer per shape.
type pairFeed struct {
	batcher  *pairs.Batcher
	seed     uint64
	perEpoch int
	batches  []*pairs.Batch
	plans    []pairs.Plan // the order of epoch
	epoch    int
}

// batch fills and returns batch k of the run with its plan.
func (f *pairFeed) batch(k int) (*pairs.Batch, pairs.Plan) {
	if e := k / f.perEpoch; e != f.epoch {
		f.plans, f.epoch = f.batcher.Epoch(f.seed, e), e
	}
	plan := f.plans[k%f.perEpoch]
	b := f.batches[plan.Bucket]
	f.batcher.Fill(plan, b)
	return b, plan
}

// trainStep takes step tr.step: the forward and backward passes of its
// batches (grad_accum of them), their gradients summed in their dtype and
// their mean left in the last one's buffers, whose parameter pairs the
// optimizer updates through, as the GPT's Stepper does (addGrad).
func (tr *translation) trainStep(feed *pairFeed) (StepResult, error) {
	cfg := tr.cfg.Train
	step := tr.step
	start := time.Now()
	r := StepResult{LR: tr.sched.At(step)}
	accum := tr.accumSteps()
	var plan pairs.Plan
	for a := range accum {
		k := step*accum + a
		var b *pairs.Batch
		b, plan = feed.batch(k)
		p := tr.progs[plan.Bucket]
		p.SetDropout(cfg.Seed, uint64(k))
		if err := p.Run(b.Src, b.DecIn, b.DecTgt); err != nil {
			return r, err
		}
		r.Loss += p.Loss() / float64(accum)
		for i, g := range p.Grads {
			tr.grads[plan.Bucket][i] = g.Value().Data()
		}
		if accum > 1 {
			tr.sums = addGrads(tr.sums, tr.grads[plan.Bucket], a, accum)
		}
		tr.tokens += float64(b.Tokens)
	}
	r.GradNorm = tr.clip.clip(tr.grads[plan.Bucket], cfg.Clip)
	if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) || math.IsNaN(r.GradNorm) || math.IsInf(r.GradNorm, 0) {
		return r, fmt.Errorf("step %d: loss %v, gradient norm %v: training diverged (try a lower lr or a longer warmup); %s",
			step+1, r.Loss, r.GradNorm, tr.lastCheckpoint())
	}
	tr.opt.LR = r.LR
	if err := tr.opt.Step(tr.pairs[plan.Bucket]); err != nil {
		return r, err
	}
	tr.trainSecs += time.Since(start).Seconds()
	tr.lossSum += r.Loss
	tr.lossCount++
	tr.lastGN = r.GradNorm
	tr.step++
	return r, nil
}

// writeRow appends the metrics row of the step just taken, with the test
// loss when evalNow.
func (tr *translation) writeRow(bar *trainProgress, r StepResult, evalNow bool, perEpoch int) error {
	done := tr.step
	row := MetricsRow{Step: done, Epoch: float64(done*tr.accumSteps()) / float64(perEpoch), LR: r.LR,
		Loss: tr.lossSum / float64(tr.lossCount), GradNorm: r.GradNorm,
		TokensPerSec: tr.tokens / tr.trainSecs, ElapsedSecs: tr.trainSecs, HeapMB: heapMB(), RSSMB: rssMB()}
	tr.lastTrain, tr.lossSum, tr.lossCount = row.Loss, 0, 0
	if evalNow {
		bar.evaluating(done)
		tl, err := tr.testLoss()
		if err != nil {
			return err
		}
		row.TestLoss, tr.lastTest = &tl, tl
	}
	if err := tr.opts.stillLocked(tr.dir, tr.step); err != nil {
		return err
	}
	if err := tr.metrics.append(row); err != nil {
		return err
	}
	bar.row(row, tr.total)
	return nil
}

// result reports the run as it stands.
func (tr *translation) result() *Result {
	return &Result{Dir: tr.dir, Steps: tr.total, TrainLoss: tr.lastTrain, TestLoss: tr.lastTest,
		TestBatch: len(tr.test.InOrder()), TrainSecs: tr.trainSecs, TokensPerSec: tr.tokens / tr.trainSecs, Threads: tr.threads}
}

// lastCheckpoint says where training can be picked up after a failure.
func (tr *translation) lastCheckpoint() string {
	if tr.savedStep < 0 {
		return fmt.Sprintf("no checkpoint was written yet (train.checkpoint_every is %d)", tr.opts.CheckpointEvery)
	}
	return fmt.Sprintf("the last good checkpoint (step %d) is in %s", tr.savedStep, tr.dir)
}

// saveAll writes the checkpoint, then the model file (trainer.saveAll's
// order and reasons).
func (tr *translation) saveAll() error {
	if err := tr.opts.stillLocked(tr.dir, tr.step); err != nil {
		return err
	}
	st := checkpointState{
		Step: tr.step, Total: tr.total, Seed: tr.cfg.Train.Seed, AdamSteps: tr.opt.Steps,
		TrainSecs: tr.trainSecs, Tokens: tr.tokens, LossSum: tr.lossSum, LossCount: tr.lossCount,
		LastGradNorm: tr.lastGN, LastTrainLoss: tr.lastTrain, LastTest: tr.lastTest,
		MetricsRows: tr.metrics.rows, RunID: tr.runID,
	}
	if err := writeCheckpoint(filepath.Join(tr.dir, CheckpointFile), tr.cfg, tr.params, tr.opt, st); err != nil {
		return fmt.Errorf("saving the checkpoint: %w", err)
	}
	tr.savedStep = tr.step
	if err := tr.save(tr.dir); err != nil {
		return fmt.Errorf("saving the model: %w", err)
	}
	return nil
}

// testLoss is the mean loss per non-PAD target over the whole test split
// (each batch's mean weighted by its number of targets), or with
// train.eval_batches = N over N of its batches drawn at random from
// (seed, step), as the GPT's estimate.
func (tr *translation) testLoss() (float64, error) {
	plans := tr.test.InOrder()
	if n := tr.cfg.Train.EvalBatches; n > 0 {
		rng := rand.New(rand.NewPCG(uint64(tr.cfg.Train.Seed)^saltEvalBatches, uint64(tr.step)))
		drawn := make([]pairs.Plan, n)
		for i := range drawn {
			drawn[i] = plans[rng.IntN(len(plans))]
		}
		plans = drawn
	}
	return translate.PlanLoss(tr.test, tr.evals, plans)
}

// save writes the model file.
func (tr *translation) save(dir string) error {
	c := tr.corpus
	return translate.Save(filepath.Join(dir, ModelFile), tr.cfg.Model, c.Src, c.Tgt,
		tr.cfg.Data.MaxSource, tr.cfg.Data.MaxTarget, tr.params)
}
