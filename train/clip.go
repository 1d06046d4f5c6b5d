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
	var c clipper
	return c.clip(grads, clip)
}

// clipChunk is the number of entries whose squares are summed as one
// piece: the norm is the sum of the pieces' sums in order, so its bits do
// not depend on which goroutine summed which piece.
const clipChunk = 1 << 14

// clipper is ClipGlobalNorm with its two passes over every gradient entry
// split over several goroutines (split, a graph.Program's Split: Stepper
// sets it; nil runs them in the caller). Its buffers are kept from step to
// step, so that a step allocates nothing for them.
type clipper struct {
	split func(n, work int, f func(lo, hi int))

	chunks  []gradChunk // the gradients cut into pieces of ≤ clipChunk entries
	partial []float64   // partial[i] = Σ g² over chunks[i]
	coef    float64     // the scale of this step's second pass

	sumRange, scaleRange func(lo, hi int) // method values, made once
}

// gradChunk is a piece of one gradient, of either dtype.
type gradChunk struct {
	f32 []float32
	f64 []float64
}

func (c *clipper) clip(grads []any, clip float64) float64 {
	if c.sumRange == nil {
		c.sumRange, c.scaleRange = c.sumSquares, c.scale
	}
	c.chunks = c.chunks[:0]
	entries := 0
	for _, g := range grads {
		switch d := g.(type) {
		case []float64:
			for lo := 0; lo < len(d); lo += clipChunk {
				c.chunks = append(c.chunks, gradChunk{f64: d[lo:min(lo+clipChunk, len(d))]})
			}
			entries += len(d)
		case []float32:
			for lo := 0; lo < len(d); lo += clipChunk {
				c.chunks = append(c.chunks, gradChunk{f32: d[lo:min(lo+clipChunk, len(d))]})
			}
			entries += len(d)
		}
	}
	if cap(c.partial) < len(c.chunks) {
		c.partial = make([]float64, len(c.chunks))
	}
	c.partial = c.partial[:len(c.chunks)]
	splitOrRun(c.split, len(c.chunks), entries, c.sumRange)
	sum := 0.0
	for _, s := range c.partial {
		sum += s
	}
	norm := math.Sqrt(sum)
	if clip > 0 {
		if c.coef = clip / (norm + 1e-6); c.coef < 1 {
			splitOrRun(c.split, len(c.chunks), entries, c.scaleRange)
		}
	}
	clear(c.chunks) // drop the references to this step's gradients
	return norm
}

// sumSquares sets partial[i] for the chunks [lo, hi).
func (c *clipper) sumSquares(lo, hi int) {
	for i := lo; i < hi; i++ {
		if d := c.chunks[i].f32; d != nil {
			c.partial[i] = adamw.SumSquares(d) // eight at a time; sums in float64
		} else {
			c.partial[i] = sumSquares(c.chunks[i].f64)
		}
	}
}

// scale multiplies the chunks [lo, hi) by coef.
func (c *clipper) scale(lo, hi int) {
	for i := lo; i < hi; i++ {
		if d := c.chunks[i].f32; d != nil {
			adamw.Scale(d, c.coef)
		} else {
			scale(c.chunks[i].f64, c.coef)
		}
	}
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
