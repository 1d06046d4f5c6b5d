package fused

import (
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/expf"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// SmoothedCrossEntropy: the translation loss in one node, from the logits
// (rows, V) and the integer targets (rows): per target other than ignore
// (graph.PAD) (1−ε)·(−log p[target]) + ε·mean_v(−log p[v]), averaged over
// those targets; ignored rows take no part. The same function as graph's translator.loss
// composes from primitives (PyTorch's cross_entropy with ignore_index and
// label_smoothing), without the (rows·V) column its gather goes through.
func (f *Emitter) SmoothedCrossEntropy(logits, targets *G.Node, eps float64, ignore int) *G.Node {
	p := f.dims
	p.Rows, p.Vocab = logits.Shape()[0], logits.Shape()[1]
	p.Scale = eps // ε rides in Scale, which attention alone reads otherwise
	p.Ignore = ignore
	op := f.newOp("SmoothedCrossEntropy", p, kernelOf(smoothedCEForward[float32], smoothedCEForward[float64]),
		[]argKind{2, intVector}, tensor.Shape{}, true, false)
	op.grad = func(op *fusedOp, in G.Nodes, _, g *G.Node) (G.Nodes, error) {
		dx, err := op.derive("SmoothedCrossEntropyGrad", kernelOf(smoothedCEBackward[float32], smoothedCEBackward[float64]),
			[]argKind{2, intVector, 0}, in[0].Shape().Clone(), in[0], in[1], g)
		return G.Nodes{dx, nil}, err
	}
	return G.Must(G.ApplyOp(op, logits, targets))
}

// counted is the number of targets that are not ignore.
func counted(targets []int, ignore int) int {
	n := 0
	for _, t := range targets {
		if t != ignore {
			n++
		}
	}
	return n
}

// smoothedCEForward: in: logits (rows, V), targets. Out: a scalar. Each
// row's term is computed on the team, then the terms are summed in row
// order, so the loss has the same bits for every thread count.
func smoothedCEForward[F gemm.Float](a *args[F]) {
	x, tgt, V, n := a.in[0], a.ids, a.p.Vocab, a.p.Rows
	eps := a.p.Scale
	if len(a.scratch) != n {
		a.scratch = make([]float64, n)
	}
	rows(a, n, 3*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if tgt[r] == a.p.Ignore {
				a.scratch[r] = 0
				continue
			}
			xr := x[r*V : (r+1)*V]
			lse := logSumExp(xr)
			term := (1 - eps) * (lse - float64(xr[tgt[r]]))
			if eps > 0 {
				sum := 0.0
				for _, v := range xr {
					sum += float64(v)
				}
				term += eps * (lse - sum/float64(V))
			}
			a.scratch[r] = term
		}
	})
	total := 0.0
	for _, term := range a.scratch {
		total += term
	}
	a.out[0] = F(total / float64(max(1, counted(tgt, a.p.Ignore))))
}

// smoothedCEBackward: ∂x_rj = g/n·(p_rj − (1−ε)·[j = target_r] − ε/V) on
// a counted row, 0 on an ignored row; n is the number of counted targets, g the
// loss's incoming gradient. in: logits, targets, g (scalar).
func smoothedCEBackward[F gemm.Float](a *args[F]) {
	x, tgt, V, n := a.in[0], a.ids, a.p.Vocab, a.p.Rows
	eps := a.p.Scale
	g := float64(a.in[1][0]) / float64(max(1, counted(tgt, a.p.Ignore)))
	rows(a, n, 4*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, out := x[r*V:(r+1)*V], a.out[r*V:(r+1)*V]
			if tgt[r] == a.p.Ignore {
				clear(out)
				continue
			}
			lse := logSumExp(xr)
			if out32, ok := any(out).([]float32); ok {
				// As crossEntropyBackward: p in float32 from lse rounded to float32.
				expf.Exps(out32, any(xr).([]float32), float32(lse))
				for j, p := range out {
					out[j] = F(g * (float64(p) - eps/float64(V)))
				}
			} else {
				for j, v := range xr {
					out[j] = F(g * (math.Exp(float64(v)-lse) - eps/float64(V)))
				}
			}
			out[tgt[r]] -= F(g * (1 - eps))
		}
	})
}
