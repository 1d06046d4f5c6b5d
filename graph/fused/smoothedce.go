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
	op.stats = new([]float64) // each row's log-sum-exp, for the backward kernel
	op.grad = func(op *fusedOp, in G.Nodes, _, g *G.Node) (G.Nodes, error) {
		dx, err := op.derive("SmoothedCrossEntropyGrad", kernelOf(smoothedCEBackward[float32], smoothedCEBackward[float64]),
			[]argKind{2, intVector, 0}, in[0].Shape().Clone(), in[0], in[1], g)
		if err == nil {
			// It reads each logit once, then writes its gradient there:
			// lent logits are written over (fusedOp.takeLoan).
			dx.Op().(*fusedOp).mayTakeLoan = true
		}
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
	if len(*a.stats) != n {
		*a.stats = make([]float64, n)
	}
	lses := *a.stats
	rows(a, n, 3*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if tgt[r] == a.p.Ignore {
				a.scratch[r] = 0
				continue
			}
			xr := x[r*V : (r+1)*V]
			lse := logSumExp(xr)
			lses[r] = lse
			term := (1 - eps) * (lse - float64(xr[tgt[r]]))
			if eps > 0 {
				term += eps * (lse - rowSum(xr)/float64(V))
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
	lses := *a.stats // the forward kernel's, over the same logits
	rows(a, n, 2*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, out := x[r*V:(r+1)*V], a.out[r*V:(r+1)*V]
			if tgt[r] == a.p.Ignore {
				clear(out)
				continue
			}
			lse := lses[r]
			if out32, ok := any(out).([]float32); ok {
				// As crossEntropyBackward: p in float32 from lse rounded to float32.
				expf.Exps(out32, any(xr).([]float32), float32(lse))
				gs, off := float32(g), float32(g*eps/float64(V))
				for j, p := range out32 {
					out32[j] = p*gs - off
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

// rowSum is Σx in float64, in four partial sums added in a fixed order:
// four independent additions per round instead of one chain.
func rowSum[F gemm.Float](x []F) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}
