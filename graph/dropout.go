package graph

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// SetDropout fills the dropout masks for one training run: each entry 0
// with probability p (the model's dropout), else 1/(1 − p). The masks are
// drawn from (seed, run) alone, so a run resumed from a checkpoint draws
// exactly the masks the uninterrupted run would have: bit-identical
// training. run numbers every forward pass of the training (the step, or
// step·grad_accum + micro-batch).
func (m *Model) SetDropout(seed int64, run uint64) {
	if len(m.Dropout) == 0 {
		return
	}
	fillDropout(m.Dropout, m.dropoutP, rand.New(rand.NewPCG(uint64(seed), run)))
}

// fillDropout fills masks with 0 (probability p) or 1/(1 − p), drawn from rng.
func fillDropout(masks []*G.Node, p float64, rng *rand.Rand) {
	keep := 1 / (1 - p)
	for _, mask := range masks {
		switch d := mask.Value().Data().(type) {
		case []float64:
			for i := range d {
				d[i] = keep
				if rng.Float64() < p {
					d[i] = 0
				}
			}
		case []float32:
			for i := range d {
				d[i] = float32(keep)
				if rng.Float64() < p {
					d[i] = 0
				}
			}
		}
	}
}

// SetDropout fills the dropout masks for one training run, drawn from
// (seed, run) alone as Model.SetDropout's are.
func (m *Translation) SetDropout(seed int64, run uint64) {
	if len(m.Dropout) == 0 {
		return
	}
	fillDropout(m.Dropout, m.dropoutP, rand.New(rand.NewPCG(uint64(seed), run)))
}
