package train

import (
	"fmt"
	"math"
	"sync/atomic"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph/tape"
)

// Stepper does one training step on a compiled program: forward and
// backward, global-norm clipping, then AdamW at the scheduled rate.
type Stepper struct {
	Prog  *tape.Program
	Opt   *AdamW
	Sched Schedule
	Clip  float64
	// Accum is the number of batches per step (train.grad_accum); their
	// gradients are averaged before clipping and the update. 0 means 1.
	Accum int
	// Seed draws the dropout masks of every forward pass, from (Seed, pass).
	Seed int64
	// Comm, when it has more than one rank, shares each step's Accum
	// batches among the ranks of a distributed run (distributed.go).
	Comm Comm

	// Stop, in a distributed run, says this rank was asked to stop; the
	// ranks agree on it in each step's exchange (stopAgreed).
	Stop func() bool

	chain32      *chain[float32]
	chain64      *chain[float64]
	stopAgreed   bool         // some rank was asked to stop during the last step
	waitingSince atomic.Int64 // when the step's exchange began (Unix ns), 0 outside it

	pairs   []G.ValueGrad
	grads   []any
	clipper clipper
	sums    []any // gradient sums over the batches of one step (Accum > 1), each in its gradient's dtype
}

// StepResult is what one step measured.
type StepResult struct {
	LR, Loss, GradNorm float64
}

// NewStepper ties prog's parameters and gradients to opt.
func NewStepper(prog *tape.Program, opt *AdamW, sched Schedule, clip float64) *Stepper {
	s := &Stepper{Prog: prog, Opt: opt, Sched: sched, Clip: clip}
	// Clipping and the update on the goroutines of the program's kernels.
	s.clipper.split = prog.Split
	if opt.Split == nil {
		opt.Split = prog.Split
	}
	for i, p := range prog.Params {
		s.pairs = append(s.pairs, paramGrad{p.Node, prog.Grads[i]})
	}
	s.grads = make([]any, len(prog.Grads))
	return s
}

// Step trains on one batch as step number step (0-based): tokens and
// targets hold Accum batches of the program's size, one after the other.
// The loss is their mean, as is the gradient, as nanoGPT's division of
// each micro-batch's loss by gradient_accumulation_steps gives. A
// non-finite loss or gradient returns an error before any parameter changes.
func (s *Stepper) Step(step int, tokens, targets []int) (StepResult, error) {
	r := StepResult{LR: s.Sched.At(step)}
	// The gradients' buffers serve the next run's activations once the
	// update has read them.
	defer s.Prog.ReleaseGrads()
	accum := max(1, s.Accum)
	n := len(tokens) / accum
	if s.Comm != nil && s.Comm.Size() > 1 {
		var err error
		if r.Loss, err = s.gradsAcross(step, tokens, targets); err != nil {
			return r, err
		}
		accum = 0 // the gradients are in place
	}
	for k := 0; k < accum; k++ {
		s.Prog.SetDropout(s.Seed, uint64(step*accum+k))
		if err := s.Prog.Run(tokens[k*n:(k+1)*n], targets[k*n:(k+1)*n]); err != nil {
			return r, err
		}
		if accum == 1 {
			r.Loss = s.Prog.Loss()
			break
		}
		r.Loss += s.Prog.Loss() / float64(accum)
		s.accumulate(k, accum)
		if k < accum-1 {
			s.Prog.ReleaseGrads() // folded into the sums
		}
	}
	for i, g := range s.Prog.Grads {
		s.grads[i] = g.Value().Data()
	}
	r.GradNorm = s.clipper.clip(s.grads, s.Clip) // ClipGlobalNorm, on the program's goroutines
	if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) || math.IsNaN(r.GradNorm) || math.IsInf(r.GradNorm, 0) {
		return r, fmt.Errorf("step %d: loss %v, gradient norm %v: training diverged (try a lower lr)", step+1, r.Loss, r.GradNorm)
	}
	s.Opt.LR = r.LR
	if err := s.Opt.Step(s.pairs); err != nil {
		return r, err
	}
	return r, nil
}

// accumulate adds the gradients of batch k of a step to the sums and,
// after the last batch, leaves their mean in the gradient tensors, where
// clipping and AdamW read them. The sums are in the gradients' dtype, as
// PyTorch adds each micro-batch into .grad: float64 sums of a float32
// model took 8 bytes a parameter (1 GB at GPT-2 124M) beside its 4-byte
// gradients, for a precision the float32 gradients themselves lack.
func (s *Stepper) accumulate(k, accum int) {
	for i, g := range s.Prog.Grads {
		s.grads[i] = g.Value().Data()
	}
	s.sums = addGrads(s.sums, s.grads, k, accum)
}

// addGrads is addGrad for every gradient of grads (each a []float32 or
// []float64) and its sum in sums (nil before the first step).
func addGrads(sums, grads []any, k, accum int) []any {
	if sums == nil {
		sums = make([]any, len(grads))
	}
	for i, g := range grads {
		switch d := g.(type) {
		case []float64:
			sums[i] = addGrad(sums[i], d, k, accum)
		case []float32:
			sums[i] = addGrad(sums[i], d, k, accum)
		}
	}
	return sums
}

// addGrad adds g, batch k's gradient, to sum (a []F, nil before the first
// step) and returns it; after the last batch it leaves the mean in g.
func addGrad[F float32 | float64](sum any, g []F, k, accum int) any {
	s, _ := sum.([]F)
	if s == nil {
		s = make([]F, len(g))
	}
	s = s[:len(g)]
	foldShard(s, g, g, k, accum)
	return s
}

// foldShard folds g, the gradient of shard k of a step's accum shards (its
// batches), into sum, in F and in shard order: shard 0 sets sum, the others
// add to it, and the last is added on the way to the mean, which it leaves
// in mean (it may be g) rather than in sum. It is the one rule of a step's
// sum, so that one process (addGrad) and the ranks of a distributed run
// (chain.exchange, each rank folding its shards into the sums it received)
// give the same bits. graph/tape's sumShards, the mean of one batch's graph
// shards, is another sum: it scales by 1/S where this divides by accum.
func foldShard[F float32 | float64](sum, g, mean []F, k, accum int) {
	switch {
	case accum == 1:
		copy(mean, g)
	case k == accum-1:
		n := F(accum)
		sum, mean = sum[:len(g)], mean[:len(g)]
		for j, v := range g {
			mean[j] = (sum[j] + v) / n
		}
	case k == 0:
		copy(sum, g)
	default:
		for j, v := range g {
			sum[j] += v
		}
	}
}

// paramGrad presents a parameter node and its gradient node as the
// G.ValueGrad a Solver takes, without binding dual values (those would
// accumulate gradients across runs).
type paramGrad struct{ param, grad *G.Node }

func (p paramGrad) Value() G.Value         { return p.param.Value() }
func (p paramGrad) Grad() (G.Value, error) { return p.grad.Value(), nil }
