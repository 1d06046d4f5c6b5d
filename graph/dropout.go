package graph

import (
	"math"
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
	fillDropout(m.Dropout, m.dropoutP, rand.NewPCG(uint64(seed), run))
}

// fillDropout fills masks with 0 (probability p) or 1/(1 − p), drawn from
// src: an entry is dropped when rand.New(src).Float64() < p would say so,
// decided on the integer draw itself (dropThreshold) without a branch, so
// that the masks are the ones the Float64 test gave, without its conversion
// and its branch per entry (dropout was 5 % of an en-es training step).
func fillDropout(masks []*G.Node, p float64, src *rand.PCG) {
	keep := 1 / (1 - p)
	thr := dropThreshold(p)
	for _, mask := range masks {
		switch d := mask.Value().Data().(type) {
		case []float64:
			k := math.Float64bits(keep)
			for i := range d {
				m := uint64(0)
				if src.Uint64()&(1<<53-1) >= thr {
					m = ^uint64(0)
				}
				d[i] = math.Float64frombits(k & m)
			}
		case []float32:
			k := uint32(math.Float32bits(float32(keep)))
			for i := range d {
				m := uint32(0)
				if src.Uint64()&(1<<53-1) >= thr {
					m = ^uint32(0)
				}
				d[i] = math.Float32frombits(k & m)
			}
		}
	}
}

// dropThreshold is the integer form of the test Float64() < p: Float64 is
// x/2⁵³ for x the low 53 bits of a draw, and x/2⁵³ < p exactly when the
// integer x < ⌈p·2⁵³⌉ (p·2⁵³ is exact: a power-of-two scaling).
func dropThreshold(p float64) uint64 {
	return uint64(math.Ceil(p * (1 << 53)))
}

// SetDropout fills the dropout masks for one training run, drawn from
// (seed, run) alone as Model.SetDropout's are.
func (m *Translation) SetDropout(seed int64, run uint64) {
	if len(m.Dropout) == 0 {
		return
	}
	fillDropout(m.Dropout, m.dropoutP, rand.NewPCG(uint64(seed), run))
}
