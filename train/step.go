package train

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph"
)

// Stepper does one training step on a compiled program: forward and
// backward, global-norm clipping, then AdamW at the scheduled rate.
type Stepper struct {
	Prog  *graph.Program
	Opt   *AdamW
	Sched Schedule
	Clip  float64

	pairs []G.ValueGrad
	grads []any
}

// StepResult is what one step measured.
type StepResult struct {
	LR, Loss, GradNorm float64
}

// NewStepper ties prog's parameters and gradients to opt.
func NewStepper(prog *graph.Program, opt *AdamW, sched Schedule, clip float64) *Stepper {
	s := &Stepper{Prog: prog, Opt: opt, Sched: sched, Clip: clip}
	for i, p := range prog.Params {
		s.pairs = append(s.pairs, paramGrad{p.Node, prog.Grads[i]})
	}
	s.grads = make([]any, len(prog.Grads))
	return s
}

// Step trains on one batch as step number step (0-based). A non-finite loss
// or gradient returns an error before any parameter changes.
func (s *Stepper) Step(step int, tokens, targets []int) (StepResult, error) {
	r := StepResult{LR: s.Sched.At(step)}
	if err := s.Prog.Run(tokens, targets); err != nil {
		return r, err
	}
	r.Loss = s.Prog.Loss()
	for i, g := range s.Prog.Grads {
		s.grads[i] = g.Value().Data()
	}
	r.GradNorm = ClipGlobalNorm(s.grads, s.Clip)
	if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) || math.IsNaN(r.GradNorm) || math.IsInf(r.GradNorm, 0) {
		return r, fmt.Errorf("step %d: loss %v, gradient norm %v: training diverged (try a lower lr)", step+1, r.Loss, r.GradNorm)
	}
	s.Opt.LR = r.LR
	if err := s.Opt.Step(s.pairs); err != nil {
		return r, err
	}
	return r, nil
}

// paramGrad presents a parameter node and its gradient node as the
// G.ValueGrad a Solver takes, without binding dual values (those would
// accumulate gradients across runs).
type paramGrad struct{ param, grad *G.Node }

func (p paramGrad) Value() G.Value         { return p.param.Value() }
func (p paramGrad) Grad() (G.Value, error) { return p.grad.Value(), nil }
