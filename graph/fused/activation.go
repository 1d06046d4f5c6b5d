package fused

import (
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph/internal/gelu"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// activation: GELU (tanh form), exact GELU or ReLU, element by element.
func (f *Emitter) Activation(x *G.Node, kind string) *G.Node {
	fwd, grad, name := kernelOf(geluForward32, geluForward64), kernelOf(geluBackward32, geluBackward64), "GELU"
	switch kind {
	case "relu":
		fwd, grad, name = kernelOf(reluForward[float32], reluForward[float64]), kernelOf(reluBackward[float32], reluBackward[float64]), "ReLU"
	case "gelu_exact":
		fwd, grad, name = kernelOf(geluExactForward32, geluExactForward64), kernelOf(geluExactBackward32, geluExactBackward64), "GELUExact"
	}
	dims := argKind(x.Dims())
	op := f.newOp(name, f.dims, fwd, []argKind{dims}, x.Shape().Clone(), true)
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		dx, err := op.derive(name+"Grad", grad, []argKind{dims, dims}, in[0].Shape().Clone(), in[0], dy)
		return G.Nodes{dx}, err
	}
	return G.Must(G.ApplyOp(op, x))
}

// GELU in its tanh form: gelu(x) = ½x(1 + tanh(c(x + 0.044715x³))), c = √(2/π).
const (
	geluA = 0.044715
	geluC = 0.7978845608028654 // √(2/π)
)

func geluForward64(a *args[float64]) {
	elements(a, len(a.out), 20*len(a.out), func(lo, hi int) {
		for i, x := range a.in[0][lo:hi] {
			a.out[lo+i] = 0.5 * x * (1 + math.Tanh(geluC*(x+geluA*x*x*x)))
		}
	})
}

// geluBackward64: ∂x = dy·(½(1 + t) + ½x(1 − t²)·c(1 + 3·0.044715x²)), t the tanh above. in: x, dy.
func geluBackward64(a *args[float64]) {
	dy := a.in[1]
	elements(a, len(a.out), 30*len(a.out), func(lo, hi int) {
		for i, x := range a.in[0][lo:hi] {
			t := math.Tanh(geluC * (x + geluA*x*x*x))
			a.out[lo+i] = dy[lo+i] * (0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*geluA*x*x))
		}
	})
}

// The float32 GELU runs eight elements at a time (package gelu): one
// element at a time it costs more than all the matrix products.
func geluForward32(a *args[float32]) {
	elements(a, len(a.out), 4*len(a.out), func(lo, hi int) { gelu.Forward(a.out[lo:hi], a.in[0][lo:hi]) })
}

func geluBackward32(a *args[float32]) {
	elements(a, len(a.out), 6*len(a.out), func(lo, hi int) {
		gelu.Backward(a.out[lo:hi], a.in[0][lo:hi], a.in[1][lo:hi])
	})
}

// geluExactForward64: gelu(x) = x·Φ(x) = ½x(1 + erf(x/√2)), PyTorch's
// nn.GELU(), with math.Erf: the float64 golden tests compare at 1e-9.
func geluExactForward64(a *args[float64]) {
	elements(a, len(a.out), 30*len(a.out), func(lo, hi int) {
		for i, x := range a.in[0][lo:hi] {
			a.out[lo+i] = 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
		}
	})
}

// geluExactBackward64: ∂x = dy·(Φ(x) + x·φ(x)), φ the normal density. in: x, dy.
func geluExactBackward64(a *args[float64]) {
	dy := a.in[1]
	const invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
	elements(a, len(a.out), 50*len(a.out), func(lo, hi int) {
		for i, x := range a.in[0][lo:hi] {
			cdf := 0.5 * (1 + math.Erf(x/math.Sqrt2))
			a.out[lo+i] = dy[lo+i] * (cdf + x*invSqrt2Pi*math.Exp(-0.5*x*x))
		}
	})
}

// The float32 exact GELU runs eight elements at a time (package gelu),
// with float32 erf and exp: with float64 math.Erf, one element at a time,
// it halved the training speed of nanoGPT's configs.
func geluExactForward32(a *args[float32]) {
	elements(a, len(a.out), 4*len(a.out), func(lo, hi int) { gelu.ExactForward(a.out[lo:hi], a.in[0][lo:hi]) })
}

func geluExactBackward32(a *args[float32]) {
	elements(a, len(a.out), 8*len(a.out), func(lo, hi int) {
		gelu.ExactBackward(a.out[lo:hi], a.in[0][lo:hi], a.in[1][lo:hi])
	})
}

func reluForward[F gemm.Float](a *args[F]) {
	elements(a, len(a.out), len(a.out), func(lo, hi int) {
		for i, v := range a.in[0][lo:hi] {
			a.out[lo+i] = max(v, 0)
		}
	})
}

// reluBackward passes dy where x > 0 (0 at x = 0, as PyTorch). in: x, dy.
// The choice is made with a bit mask, not a branch: a ReLU's input is
// positive about half of the time at random, and the branch, mispredicted
// that often, made this pass cost 6 % of an en-es training step.
func reluBackward[F gemm.Float](a *args[F]) {
	elements(a, len(a.out), len(a.out), func(lo, hi int) {
		switch out := any(a.out[lo:hi]).(type) {
		case []float32:
			reluMask32(out, any(a.in[0][lo:hi]).([]float32), any(a.in[1][lo:hi]).([]float32))
		case []float64:
			reluMask64(out, any(a.in[0][lo:hi]).([]float64), any(a.in[1][lo:hi]).([]float64))
		}
	})
}

// reluMask32 sets out[i] = dy[i] where x[i] > 0, else +0: the same bits as
// the branch.
func reluMask32(out, x, dy []float32) {
	out, dy = out[:len(x)], dy[:len(x)]
	for i, v := range x {
		m := uint32(0)
		if v > 0 { // compiled to a conditional move
			m = ^uint32(0)
		}
		out[i] = math.Float32frombits(math.Float32bits(dy[i]) & m)
	}
}

func reluMask64(out, x, dy []float64) {
	out, dy = out[:len(x)], dy[:len(x)]
	for i, v := range x {
		m := uint64(0)
		if v > 0 {
			m = ^uint64(0)
		}
		out[i] = math.Float64frombits(math.Float64bits(dy[i]) & m)
	}
}
