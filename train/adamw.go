package train

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/train/internal/adamw"
)

// AdamW is Adam with decoupled weight decay, step for step PyTorch's
// torch.optim.AdamW. Gorgonia ships one, but its update never reaches the
// weights and its moment coefficients are wrong, so gptg has its own.
//
// With t = step + 1, for every parameter p and its gradient g:
//
//	p ← p·(1 − lr·wd)
//	m ← β1·m + (1 − β1)·g
//	v ← β2·v + (1 − β2)·g²
//	p ← p − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + eps)
//
// The moments are kept in float64 whatever the parameters' dtype.
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	// SkipDecay[i] exempts parameter i from weight decay (train.decay =
	// "matrices": nanoGPT's configure_optimizers decays only parameters of
	// two or more dimensions). Nil decays every parameter.
	SkipDecay []bool

	// Steps taken so far; the next Step uses t = Steps + 1.
	Steps int
	// M and V are the first and second moments, one slice per parameter,
	// in the order Step receives them; allocated on the first Step.
	M, V [][]float64
}

var _ G.Solver = (*AdamW)(nil)

// Step applies one update to every parameter from its current gradient.
func (o *AdamW) Step(params []G.ValueGrad) error {
	if o.M == nil {
		o.M = make([][]float64, len(params))
		o.V = make([][]float64, len(params))
		for i, p := range params {
			n := p.Value().Shape().TotalSize()
			o.M[i], o.V[i] = make([]float64, n), make([]float64, n)
		}
	}
	if len(params) != len(o.M) {
		return fmt.Errorf("adamw: %d parameters, moments for %d", len(params), len(o.M))
	}
	t := float64(o.Steps + 1)
	c := adamw.Coefs{
		Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps,
		Decay:        1 - o.LR*o.WeightDecay,
		StepSize:     o.LR / (1 - math.Pow(o.Beta1, t)),
		InvSqrtBias2: 1 / math.Sqrt(1-math.Pow(o.Beta2, t)),
	}
	for i, p := range params {
		g, err := p.Grad()
		if err != nil {
			return fmt.Errorf("adamw: gradient of parameter %d: %w", i, err)
		}
		m, v := o.M[i], o.V[i]
		c := c
		if i < len(o.SkipDecay) && o.SkipDecay[i] {
			c.Decay = 1
		}
		switch w := p.Value().Data().(type) {
		case []float64:
			err = update(w, g.Data().([]float64), m, v, c)
		case []float32:
			err = update(w, g.Data().([]float32), m, v, c)
		default:
			err = fmt.Errorf("unsupported dtype %T", w)
		}
		if err != nil {
			return fmt.Errorf("adamw: parameter %d: %w", i, err)
		}
	}
	o.Steps++
	return nil
}

// SkipDecayBelow2D marks the parameters of fewer than two dimensions
// (biases, LayerNorm weights), the ones nanoGPT does not decay.
func SkipDecayBelow2D(params []*graph.Param) []bool {
	skip := make([]bool, len(params))
	for i, p := range params {
		skip[i] = len(p.Shape) < 2
	}
	return skip
}

func update[F float32 | float64](w, g []F, m, v []float64, c adamw.Coefs) error {
	if len(g) != len(w) || len(m) != len(w) || len(v) != len(w) {
		return fmt.Errorf("%d weights, %d gradients, %d moments", len(w), len(g), len(m))
	}
	adamw.Update(w, g, m, v, c) // the formula above, four entries at a time where the CPU can
	return nil
}
