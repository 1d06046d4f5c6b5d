// The GPT run's loop: batches, steps, evaluations, metrics rows and saves.

package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/metrics"
	"time"

	"github.com/gptg/gptg/savedmodel"
)

// Salts that keep the random streams drawn from the seed apart: the
// windows of data.sampling = "random", and the test batches of
// train.eval_batches. (Epoch orders use (seed, epoch), dropout masks
// graph.Model.SetDropout's (seed, pass).)
const (
	saltRandomBatches = 0x72616e646f6d // "random"
	saltEvalBatches   = 0x6576616c     // "eval"
)

// batch fills t.x and t.y with the windows of step s. With data.sampling
// "windows", epoch s/perEpoch visits the training windows in an order
// drawn from (seed, epoch) alone; with "random", the windows start at
// offsets drawn from (seed, s). Either way a resumed run needs only its
// step to find its place.
func (t *trainer) batch(s int) error {
	B := t.cfg.Train.Batch * max(1, t.cfg.Train.GradAccum)
	if t.cfg.Data.Sampling == "random" {
		rng := rand.New(rand.NewPCG(uint64(t.cfg.Train.Seed)^saltRandomBatches, uint64(s)))
		return t.data.RandomBatch(t.x, t.y, false, rng)
	}
	if e := s / t.perEpoch; e != t.epoch {
		rng := rand.New(rand.NewPCG(uint64(t.cfg.Train.Seed), uint64(e)))
		t.order = rng.Perm(t.data.NumTrain())
		t.epoch = e
	}
	i := s % t.perEpoch
	return t.data.TrainBatch(t.x, t.y, t.order[i*B:(i+1)*B])
}

// testLoss is the seed's test loss of the current weights, over the whole
// test split, or with train.eval_batches = N over N batches at random
// offsets of it drawn from (seed, step), as nanoGPT's estimate_loss. It
// stops early with ctx's error when ctx is done.
func (t *trainer) testLoss(ctx context.Context) (float64, int, error) {
	n := t.cfg.Train.EvalBatches
	if n == 0 {
		return t.tests.TestLoss(ctx, t.data, nil)
	}
	rng := rand.New(rand.NewPCG(uint64(t.cfg.Train.Seed)^saltEvalBatches, uint64(t.step)))
	loss, err := t.tests.RandomTestLoss(ctx, t.data, n, rng)
	if err != nil {
		return 0, 0, err
	}
	return loss, n, nil
}

// loop trains from t.step to t.total. Each turn: stop and save if ctx is
// done; take a step; when a metrics row is due, evaluate (if due) and
// write it. A row whose evaluation an interrupt cut short stays pending:
// it is saved in the checkpoint and is the resumed run's first turn.
func (t *trainer) loop(ctx context.Context) (*Result, error) {
	t.stepper.Stop = func() bool { return ctx.Err() != nil }
	t.watchRanks(ctx)
	bar := newProgress(t.opts, t.total, t.step)
	defer bar.finish()
	t.startClock()
	for t.step < t.total || t.pending != nil {
		if t.stopNow(ctx) {
			return nil, t.stopInterrupted(bar)
		}
		if t.pending == nil {
			if err := t.trainStep(bar); err != nil {
				return nil, err
			}
		}
		if t.pending != nil {
			interrupted, err := t.writeRow(ctx, bar)
			if err != nil {
				return nil, err
			}
			if interrupted {
				continue // saved with the row still pending, at the top of the loop
			}
		}
		if t.opts.AfterStep != nil {
			t.opts.AfterStep(t.step)
		}
	}
	bar.finish()
	return t.result(), nil
}

// result reports the run as it stands.
func (t *trainer) result() *Result {
	return &Result{
		Dir: t.dir, Steps: t.step, TrainLoss: t.lastTrainLoss, TestLoss: t.lastTest,
		TestBatch: t.testBatches(), TrainSecs: t.trainSecs,
		TokensPerSec: float64(t.step) * t.tokensPerStep() / t.trainSecs, Threads: t.threads,
	}
}

// tokensPerStep is what tokens/s counts: a step consumes grad_accum
// batches of windows.
func (t *trainer) tokensPerStep() float64 {
	return float64(t.windowsPerStep() * t.cfg.Model.Context)
}

// stopInterrupted saves the checkpoint and the model when ctx is done and
// says how to resume.
func (t *trainer) stopInterrupted(bar *trainProgress) error {
	t.pauseClock()
	err := t.saveAll()
	t.waitForSave()
	if err != nil {
		return fmt.Errorf("interrupted, and saving failed: %w", err)
	}
	bar.finish()
	fmt.Fprintf(t.opts.Log, "\ninterrupted at step %d of %d; checkpoint and model saved in %s\nresume with: gptg train --resume %s%s\n",
		t.step, t.total, t.dir, t.dir, t.distributedFlag())
	return ErrInterrupted
}

// trainStep takes step t.step. When a metrics row is due it is left in
// t.pending for writeRow; between evaluations a checkpoint is saved every
// opts.CheckpointEvery steps.
func (t *trainer) trainStep(bar *trainProgress) error {
	if err := t.batch(t.step); err != nil {
		return fmt.Errorf("step %d: %w; %s", t.step, err, t.lastCheckpoint())
	}
	r, err := t.stepper.Step(t.step, t.x, t.y)
	if err != nil {
		return fmt.Errorf("%w; %s", err, t.lastCheckpoint())
	}
	t.step++
	t.lossSum += r.Loss
	t.lossCount++
	t.lastGradNorm = r.GradNorm

	cfg := t.cfg.Train
	evalNow := t.step == t.total || (cfg.EvalEvery > 0 && t.step%cfg.EvalEvery == 0)
	if evalNow || t.step%cfg.LogEvery == 0 {
		t.holdRow(r, evalNow)
	} else {
		bar.step(t.step, r)
	}
	if !evalNow && t.step%t.opts.CheckpointEvery == 0 {
		t.pauseClock()
		if err := t.saveAll(); err != nil {
			return err
		}
		t.startClock()
	}
	return nil
}

// holdRow makes the metrics row of the step just taken, its training loss
// the mean since the last row, and holds it in t.pending until writeRow
// has evaluated (if evalNow) and written it.
func (t *trainer) holdRow(r StepResult, evalNow bool) {
	elapsed := t.trainedSecs()
	t.pending = &MetricsRow{
		Step: t.step, Epoch: float64(t.step) / float64(t.perEpoch), LR: r.LR,
		Loss: t.lossSum / float64(t.lossCount), GradNorm: r.GradNorm,
		TokensPerSec: float64(t.step) * t.tokensPerStep() / elapsed, ElapsedSecs: elapsed,
		HeapMB: heapMB(), RSSMB: rssMB(),
	}
	t.pendingEval = evalNow
	t.lastTrainLoss = t.pending.Loss
	t.lossSum, t.lossCount = 0, 0
}

// writeRow evaluates the pending row's test loss if it asks for one,
// appends the row to metrics.jsonl and, after an evaluation, saves the
// checkpoint and the model. interrupted means ctx stopped the evaluation:
// the row stays pending, to be saved with the checkpoint.
func (t *trainer) writeRow(ctx context.Context, bar *trainProgress) (interrupted bool, err error) {
	row := t.pending
	if t.follower() { // rank 0 evaluates and writes the row
		t.pending = nil
		return false, nil
	}
	if t.pendingEval {
		t.pauseClock()
		if t.opts.beforeEval != nil {
			t.opts.beforeEval(t.step)
		}
		bar.evaluating(t.step)
		tl, _, err := t.testLoss(ctx)
		if ctx.Err() != nil {
			t.startClock()
			return true, nil
		}
		if err != nil {
			return false, err
		}
		row.TestLoss = &tl
		t.lastTest = tl
	}
	if err := t.opts.stillLocked(t.dir, t.step); err != nil {
		return false, err
	}
	if err := t.metrics.append(*row); err != nil {
		return false, err
	}
	t.pending = nil
	bar.row(*row, t.total)
	if t.pendingEval {
		if err := t.saveAll(); err != nil {
			return false, err
		}
		t.startClock()
	}
	return false, nil
}

// startClock starts (or restarts) the training clock: t.trainSecs counts
// training alone, not evaluations or saves.
func (t *trainer) startClock() { t.segment = time.Now() }

// pauseClock adds the training time since the clock started to t.trainSecs.
func (t *trainer) pauseClock() { t.trainSecs += time.Since(t.segment).Seconds() }

// trainedSecs is the run's training time so far, the running segment included.
func (t *trainer) trainedSecs() float64 { return t.trainSecs + time.Since(t.segment).Seconds() }

// lastCheckpoint says where training can be picked up again after a
// failure, naming only a checkpoint that exists.
func (t *trainer) lastCheckpoint() string {
	if t.savedStep < 0 {
		return fmt.Sprintf("no checkpoint was written yet (train.checkpoint_every is %d)", t.opts.CheckpointEvery)
	}
	return fmt.Sprintf("the last good checkpoint (step %d) is in %s", t.savedStep, t.dir)
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
	if t.follower() {
		return nil
	}
	if err := t.opts.stillLocked(t.dir, t.step); err != nil {
		return err
	}
	if err := t.saveCheckpoint(); err != nil {
		return fmt.Errorf("saving the checkpoint: %w", err)
	}
	t.savedStep = t.step
	if err := savedmodel.Save(filepath.Join(t.dir, ModelFile), t.cfg.Model, t.data.Vocab, t.prog.Params); err != nil {
		return fmt.Errorf("saving the model: %w", err)
	}
	return nil
}
