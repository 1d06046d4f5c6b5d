package train

import (
	"math"

	"github.com/gptg/gptg/train/internal/adamw"
)

// ClipGlobalNorm scales every gradient by clip/(norm + 1e-6) when that is
// below 1, where norm is the Euclidean norm over all gradient entries
// together (PyTorch's clip_grad_norm_). It returns the norm before
// clipping; clip ≤ 0 only measures.
func ClipGlobalNorm(grads []any, clip float64) float64 {
	sum := 0.0
	for _, g := range grads {
		switch d := g.(type) {
		case []float64:
			sum += sumSquares(d)
		case []float32:
			sum += adamw.SumSquares(d) // eight at a time; sums in float64
		}
	}
	norm := math.Sqrt(sum)
	if clip <= 0 {
		return norm
	}
	coef := clip / (norm + 1e-6)
	if coef >= 1 {
		return norm
	}
	for _, g := range grads {
		switch d := g.(type) {
		case []float64:
			scale(d, coef)
		case []float32:
			adamw.Scale(d, coef)
		}
	}
	return norm
}

func sumSquares(d []float64) float64 {
	s := 0.0
	for _, v := range d {
		s += float64(v) * float64(v)
	}
	return s
}

func scale(d []float64, c float64) {
	for i := range d {
		d[i] *= c
	}
}
