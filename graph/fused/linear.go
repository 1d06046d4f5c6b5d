package fused

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// linear: y = x·Wᵀ + b on rows, W stored [out, in]; Wᵀ is never formed.
// Without a bias (nil) the op has two inputs and y = x·Wᵀ.
func (f *Emitter) Linear(x, w, bias *G.Node) *G.Node {
	out, in := w.Shape()[0], w.Shape()[1]
	p := f.dims
	p.In, p.Out = in, out
	if bias == nil {
		op := f.newOp("LinearNoBias", p, kernelOf(linearForward[float32], linearForward[float64]),
			rank(2, 2), tensor.Shape{p.Rows, out}, true, true)
		op.grad = linearGrad
		return G.Must(G.ApplyOp(op, x, w))
	}
	op := f.newOp("Linear", p, kernelOf(linearForward[float32], linearForward[float64]),
		rank(2, 2, 1), tensor.Shape{p.Rows, out}, true, true, true)
	op.grad = linearGrad
	return G.Must(G.ApplyOp(op, x, w, bias))
}

// linearGrad emits ∂x, ∂W and, when the op has a bias, ∂b.
func linearGrad(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
	x, w := in[0], in[1]
	dx, err := op.derive("LinearGradX", kernelOf(linearBackwardX[float32], linearBackwardX[float64]),
		rank(2, 2), x.Shape().Clone(), dy, w)
	if err != nil {
		return nil, err
	}
	dw, err := op.derive("LinearGradW", kernelOf(linearBackwardW[float32], linearBackwardW[float64]),
		rank(2, 2), w.Shape().Clone(), dy, x)
	if err != nil {
		return nil, err
	}
	if len(in) == 2 {
		return G.Nodes{dx, dw}, nil
	}
	db, err := op.biasGrad(in[2], dy)
	return G.Nodes{dx, dw, db}, err
}

// biasGrad is the gradient of a bias added to every row (Linear,
// LayerNorm): the rows of dy summed.
func (op *fusedOp) biasGrad(bias, dy *G.Node) (*G.Node, error) {
	return op.derive("ColumnSum", kernelOf(biasBackward[float32], biasBackward[float64]),
		rank(2), bias.Shape().Clone(), dy)
}

// linearForward: y = x·Wᵀ + b. in: x (rows, In), W (Out, In), b (Out) if
// the layer has one. Wᵀ is never formed: the product reads W's rows as columns.
func linearForward[F gemm.Float](a *args[F]) {
	x, w, n, in, out := a.in[0], a.in[1], a.p.Rows, a.p.In, a.p.Out
	if len(a.in) > 2 {
		gemm.MulBias(a.ws, false, true, n, out, in, x, in, w, in, a.in[2], a.out, out)
		return
	}
	gemm.Mul(a.ws, false, true, n, out, in, x, in, w, in, a.out, out, false)
}

// linearBackwardX: ∂x = dy·W. in: dy (rows, Out), W (Out, In).
func linearBackwardX[F gemm.Float](a *args[F]) {
	dy, w, n, in, out := a.in[0], a.in[1], a.p.Rows, a.p.In, a.p.Out
	gemm.Mul(a.ws, false, false, n, in, out, dy, out, w, in, a.out, in, false)
}

// linearBackwardW: ∂W = dyᵀ·x. in: dy (rows, Out), x (rows, In).
func linearBackwardW[F gemm.Float](a *args[F]) {
	dy, x, n, in, out := a.in[0], a.in[1], a.p.Rows, a.p.In, a.p.Out
	gemm.Mul(a.ws, true, false, out, in, n, dy, out, x, in, a.out, in, false)
}

// biasBackward: ∂b = Σ_rows dy, the gradient of a bias added to every row.
// in: dy. The columns are split over the team in bands (gemm.SumRows runs
// in one goroutine): gemm.SumRows sums each column in an order that
// depends on the number of rows only, so a column's sum is the same
// whatever band it falls in.
func biasBackward[F gemm.Float](a *args[F]) {
	dy, w := a.in[0], len(a.out)
	const band = 64 // columns: a multiple of every vector width
	a.t.split((w+band-1)/band, len(dy), func(ws *gemm.Workspace, lo, hi int) {
		c0, c1 := lo*band, min(hi*band, w)
		gemm.SumRows(ws, len(dy)/w, c1-c0, dy[c0:], w, a.out[c0:c1])
	})
}
