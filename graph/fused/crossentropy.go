package fused

import (
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph/internal/expf"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// crossEntropy: the mean over rows of −Σ_j targets·log softmax(logits).
func (f *Emitter) CrossEntropy(logits, targets *G.Node) *G.Node {
	p := f.dims
	op := f.newOp("CrossEntropy", p, kernelOf(crossEntropyForward[float32], crossEntropyForward[float64]),
		rank(2, 2), nil, true, false)
	op.grad = func(op *fusedOp, in G.Nodes, _, g *G.Node) (G.Nodes, error) {
		dx, err := op.derive("CrossEntropyGrad", kernelOf(crossEntropyBackward[float32], crossEntropyBackward[float64]),
			rank(2, 2, 0), in[0].Shape().Clone(), in[0], in[1], g)
		return G.Nodes{dx, nil}, err
	}
	return G.Must(G.ApplyOp(op, logits, targets))
}

// logSumExp of a row, shifted by its max; a float32 row is
// expf.LogSumExp's (float32 exps eight at a time, summed in float64).
func logSumExp[F gemm.Float](x []F) float64 {
	if x32, ok := any(x).([]float32); ok {
		return expf.LogSumExp(x32)
	}
	maxv := math.Inf(-1)
	for _, v := range x {
		maxv = max(maxv, float64(v)) // the builtin is inlined; math.Max is a call
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(float64(v) - maxv)
	}
	return maxv + math.Log(sum)
}

// crossEntropyForward: loss = −(1/rows) Σ_ij t_ij·log softmax(x_i)_j, the mean over
// rows of the cross-entropy against target rows t (one-hot: −log p of the
// target). in: logits, targets (rows, V). Out: a scalar.
func crossEntropyForward[F gemm.Float](a *args[F]) {
	x, tgt, V, n := a.in[0], a.in[1], a.p.Vocab, a.p.Rows
	if len(a.scratch) != n {
		a.scratch = make([]float64, n)
	}
	// Each row's term first, split over the team; then their sum, in row
	// order, so the loss has the same bits for every thread count.
	rows(a, n, 3*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, tr := x[r*V:(r+1)*V], tgt[r*V:(r+1)*V]
			lse := logSumExp(xr)
			term := 0.0
			for j, t := range tr {
				if t != 0 {
					term += float64(t) * (float64(xr[j]) - lse)
				}
			}
			a.scratch[r] = term
		}
	})
	total := 0.0
	for _, term := range a.scratch {
		total += term
	}
	a.out[0] = F(-total / float64(n))
}

// crossEntropyBackward: ∂x_ij = g/rows·(p_ij·Σ_k t_ik − t_ij), p = softmax(x_i),
// g the loss's incoming gradient. in: logits, targets, g (scalar).
func crossEntropyBackward[F gemm.Float](a *args[F]) {
	x, tgt, V, n := a.in[0], a.in[1], a.p.Vocab, a.p.Rows
	g := float64(a.in[2][0]) / float64(n)
	rows(a, n, 4*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, tr, out := x[r*V:(r+1)*V], tgt[r*V:(r+1)*V], a.out[r*V:(r+1)*V]
			lse := logSumExp(xr)
			tsum := 0.0
			for _, t := range tr {
				tsum += float64(t)
			}
			if out32, ok := any(out).([]float32); ok {
				// p = e^(x − lse) in float32, lse rounded to float32 as in
				// PyTorch's float32 log-softmax: a factor e^δ common to the
				// row, |δ| ≤ half a float32 ulp of lse (4.8e-7 while lse < 16).
				expf.Exps(out32, any(xr).([]float32), float32(lse))
				for j, p := range out {
					out[j] = F(g * (float64(p)*tsum - float64(tr[j])))
				}
				continue
			}
			for j, v := range xr {
				out[j] = F(g * (math.Exp(float64(v)-lse)*tsum - float64(tr[j])))
			}
		}
	})
}
