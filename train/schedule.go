package train

import (
	"math"

	"github.com/gptg/gptg/config"
)

// Schedule is the learning rate per step. Steps count from 0.
//
// The default (Kind "" or "cosine") is a linear warmup over Warmup steps,
// then a cosine from LR down to MinLR at step Total: lr_at in the reference
// (gptref.py).
//
// Kind "noam" is "Attention is all you need", eq. 3, with the paper's step
// counting from 1: Dim^-0.5 · min(n^-0.5, n · Warmup^-1.5) at n = step+1.
// It rises linearly to its peak Dim^-0.5 · Warmup^-0.5 at n = Warmup and
// decays as n^-0.5 after; LR, MinLR and Total do not enter it.
type Schedule struct {
	Kind          string // "cosine" (or "") or "noam"
	LR, MinLR     float64
	Warmup, Total int
	Dim           int // the model width d of the noam schedule
}

// At is the learning rate of the given 0-based step.
func (s Schedule) At(step int) float64 {
	if s.Kind == "noam" {
		n := float64(step + 1)
		return math.Pow(float64(s.Dim), -0.5) * math.Min(math.Pow(n, -0.5), n*math.Pow(float64(s.Warmup), -1.5))
	}
	if step < s.Warmup {
		return s.LR * float64(step+1) / float64(s.Warmup)
	}
	p := math.Min(1, float64(step-s.Warmup)/float64(max(1, s.Total-s.Warmup)))
	return s.MinLR + 0.5*(s.LR-s.MinLR)*(1+math.Cos(math.Pi*p))
}

// RunLength is the number of steps a run takes: train.max_steps when it is
// set, as nanoGPT's max_iters (the epochs then only say how the data is
// ordered), else train.epochs passes of perEpoch steps.
func RunLength(tr config.Train, perEpoch int) int {
	if tr.MaxSteps > 0 {
		return tr.MaxSteps
	}
	return int(float64(perEpoch) * tr.Epochs)
}
