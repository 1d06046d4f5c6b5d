package train

import "math"

// Schedule is the learning rate per step: a linear warmup over Warmup steps,
// then a cosine from LR down to MinLR at step Total. It is lr_at in the
// reference (gptref.py); steps count from 0.
type Schedule struct {
	LR, MinLR     float64
	Warmup, Total int
}

// At is the learning rate of the given 0-based step.
func (s Schedule) At(step int) float64 {
	if step < s.Warmup {
		return s.LR * float64(step+1) / float64(s.Warmup)
	}
	p := math.Min(1, float64(step-s.Warmup)/float64(max(1, s.Total-s.Warmup)))
	return s.MinLR + 0.5*(s.LR-s.MinLR)*(1+math.Cos(math.Pi*p))
}
