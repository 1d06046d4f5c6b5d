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
// The moments are kept in each parameter's dtype, as PyTorch keeps them;
// each update is computed in float64 (package adamw).
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	// SkipDecay[i] exempts parameter i from weight decay (train.decay =
	// "matrices": nanoGPT's configure_optimizers decays only parameters of
	// two or more dimensions). Nil decays every parameter.
	SkipDecay []bool

	// Steps taken so far; the next Step uses t = Steps + 1.
	Steps int
	// M and V are the first and second moments, one per parameter, in the
	// order Step receives them; allocated on the first Step.
	M, V []Moment

	// Split, when set, runs the update over ranges of entries on several
	// goroutines (tape.Program.Split, set by NewStepper); nil runs it in
	// the caller. Every entry's update reads only that entry, and the
	// assembly and Go paths of package adamw give the same bits, so the
	// weights do not depend on how the entries are split.
	Split func(n, work int, f func(lo, hi int))

	// One step's work: every parameter's slices and constants, by dtype,
	// kept from step to step; updateRange is the method value made once,
	// so that a step allocates nothing for the split.
	seg32       []segment[float32]
	seg64       []segment[float64]
	entries     int
	updateRange func(lo, hi int)
}

// Moment is one parameter's first or second moment, in the parameter's
// dtype: one of the two slices is set.
type Moment struct {
	F32 []float32
	F64 []float64
}

// newMoment is a zero moment for the parameter whose values are data.
func newMoment(data any) (Moment, error) {
	switch d := data.(type) {
	case []float32:
		return Moment{F32: make([]float32, len(d))}, nil
	case []float64:
		return Moment{F64: make([]float64, len(d))}, nil
	}
	return Moment{}, fmt.Errorf("unsupported dtype %T", data)
}

// segment is one parameter's share of a step: its weights, gradient,
// moments and constants, and where its entries start among all of the step's.
type segment[F float32 | float64] struct {
	w, g  []F
	m, v  []F
	c     adamw.Coefs
	first int
}

// unit is the number of entries the update is split by: a range of Split
// is a range of units (many parameters are smaller than a unit, the
// largest hold thousands).
const unit = 256

var _ G.Solver = (*AdamW)(nil)

// Step applies one update to every parameter from its current gradient.
func (o *AdamW) Step(params []G.ValueGrad) error {
	if o.M == nil {
		o.M, o.V = make([]Moment, len(params)), make([]Moment, len(params))
		for i, p := range params {
			var err error
			if o.M[i], err = newMoment(p.Value().Data()); err != nil {
				return fmt.Errorf("adamw: parameter %d: %w", i, err)
			}
			o.V[i], _ = newMoment(p.Value().Data())
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
	o.seg32, o.seg64, o.entries = o.seg32[:0], o.seg64[:0], 0
	for i, p := range params {
		g, err := p.Grad()
		if err != nil {
			return fmt.Errorf("adamw: gradient of parameter %d: %w", i, err)
		}
		c := c
		if i < len(o.SkipDecay) && o.SkipDecay[i] {
			c.Decay = 1
		}
		var n int
		switch w := p.Value().Data().(type) {
		case []float64:
			o.seg64, n, err = appendSegment(o.seg64, w, g.Data(), o.M[i].F64, o.V[i].F64, c, o.entries)
		case []float32:
			o.seg32, n, err = appendSegment(o.seg32, w, g.Data(), o.M[i].F32, o.V[i].F32, c, o.entries)
		default:
			err = fmt.Errorf("unsupported dtype %T", w)
		}
		if err != nil {
			return fmt.Errorf("adamw: parameter %d: %w", i, err)
		}
		o.entries += n
	}
	if o.updateRange == nil {
		o.updateRange = o.update
	}
	units := (o.entries + unit - 1) / unit
	splitOrRun(o.Split, units, 4*o.entries, o.updateRange) // ~4 cycles an entry with AVX2
	// Drop the references to this step's tensors.
	clear(o.seg32)
	clear(o.seg64)
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

// splitOrRun runs f over [0, n) through split (a tape.Program's Split,
// work the job's estimate), or in the calling goroutine when split is nil:
// the optimizer's and the clipper's passes over every entry.
func splitOrRun(split func(n, work int, f func(lo, hi int)), n, work int, f func(lo, hi int)) {
	if split == nil {
		f(0, n)
		return
	}
	split(n, work, f)
}

// appendSegment adds a parameter's share of the step to segs, checking
// that its gradient and moments match its weights.
func appendSegment[F float32 | float64](segs []segment[F], w []F, grad any, m, v []F, c adamw.Coefs, first int) ([]segment[F], int, error) {
	g, ok := grad.([]F)
	if !ok {
		return segs, 0, fmt.Errorf("gradient holds %T, weights %T", grad, w)
	}
	if len(g) != len(w) || len(m) != len(w) || len(v) != len(w) {
		return segs, 0, fmt.Errorf("%d weights, %d gradients, %d moments", len(w), len(g), len(m))
	}
	return append(segs, segment[F]{w: w, g: g, m: m, v: v, c: c, first: first}), len(w), nil
}

// update applies the step to the entries of units [lo, hi): the formula
// above, four entries at a time where the CPU can (package adamw).
func (o *AdamW) update(lo, hi int) {
	from, to := lo*unit, min(hi*unit, o.entries)
	updateSegments(o.seg32, from, to)
	updateSegments(o.seg64, from, to)
}

// updateSegments updates the entries [from, to) of the step that lie in segs.
func updateSegments[F float32 | float64](segs []segment[F], from, to int) {
	for _, s := range segs {
		a, b := max(from-s.first, 0), min(to-s.first, len(s.w))
		if a < b {
			adamw.Update(s.w[a:b], s.g[a:b], s.m[a:b], s.v[a:b], s.c)
		}
	}
}
