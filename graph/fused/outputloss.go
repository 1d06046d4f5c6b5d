package fused

import (
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/expf"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// OutputLoss is the output layer and SmoothedCrossEntropy in one node, for
// a training or evaluation graph that needs the loss and not the logits:
// logits = y·Wᵀ + b (no bias: nil), then the label-smoothed loss averaged
// over the targets other than ignore (graph.PAD).
//
// Why one node: a row whose target is PAD takes no part in the loss, so
// its logits are never needed and its gradient is 0. In a batch padded to
// a fixed target length that is a third to a half of the rows (45 % at
// en-es.toml's shape), and the output layer over a vocabulary of
// thousands is the largest product of the model. This node gathers the
// counted rows of y, computes their logits only, and its backward nodes
// work on those rows only: ∂y (0 on the PAD rows), ∂W and ∂b. The logits
// and then their gradient live in one buffer, written over in place and
// shared by every graph of the Memory (memory.go's shared): one (rows, V)
// buffer instead of the logits, their gradient, and an evaluation graph's
// logits.
//
// The loss is SmoothedCrossEntropy's to the bit (the same terms, summed in
// row order: the PAD rows added 0); the gradients are the composed layers'
// up to the order of ∂W's and ∂b's sums, which skip the zero rows.
func (f *Emitter) OutputLoss(y, w, bias, targets *G.Node, eps float64, ignore int) *G.Node {
	p := f.dims
	p.Rows, p.In, p.Out = y.Shape()[0], w.Shape()[1], w.Shape()[0]
	p.Vocab = p.Out
	p.Scale = eps // as SmoothedCrossEntropy's
	p.Ignore = ignore
	ins, nodes, wrt := rank(2, 2), []*G.Node{y, w}, []bool{true, true}
	if bias != nil {
		ins, nodes, wrt = append(ins, 1), append(nodes, bias), append(wrt, true)
	}
	ins, nodes, wrt = append(ins, intVector), append(nodes, targets), append(wrt, false)
	op := f.newOp("OutputLoss", p, kernelOf(outputLossForward[float32], outputLossForward[float64]),
		ins, tensor.Shape{}, wrt...)
	op.outLoss = &outputLossState{mem: f.mem}
	op.grad = func(op *fusedOp, in G.Nodes, out, g *G.Node) (G.Nodes, error) {
		w, tgt := in[1], in[len(in)-1]
		// ∂y's node turns the logits into their gradient; it reads the
		// loss (out) so that it runs after the forward kernel, and ∂W's
		// and ∂b's nodes read ∂y so that they run after it.
		dy, err := op.derive("OutputLossGradX", kernelOf(outputLossBackwardX[float32], outputLossBackwardX[float64]),
			[]argKind{0, 2, intVector, 0}, in[0].Shape().Clone(), out, w, tgt, g)
		if err != nil {
			return nil, err
		}
		dw, err := op.derive("OutputLossGradW", kernelOf(outputLossBackwardW[float32], outputLossBackwardW[float64]),
			rank(2), w.Shape().Clone(), dy)
		if err != nil {
			return nil, err
		}
		grads := G.Nodes{dy, dw}
		if len(in) == 4 {
			db, err := op.derive("OutputLossGradB", kernelOf(outputLossBackwardB[float32], outputLossBackwardB[float64]),
				rank(2), in[2].Shape().Clone(), dy)
			if err != nil {
				return nil, err
			}
			grads = append(grads, db)
		}
		return append(grads, nil), nil
	}
	return G.Must(G.ApplyOp(op, nodes...))
}

// outputLossState is what the kernels of one OutputLoss share in a run.
type outputLossState struct {
	mem     *Memory
	live    []int     // the counted rows, in order
	lse     []float64 // each counted row's log-sum-exp
	terms   []float64 // each counted row's term of the loss
	ys, dys any       // []F (rows, C): the counted rows of y, then of ∂y
	logits  any       // []F (rows, V), the Memory's shared buffer: logits, then ∂logits
}

// bufferOf returns *buf as []F of n entries, made on first use.
func bufferOf[F gemm.Float](buf *any, n int) []F {
	if b, ok := (*buf).([]F); ok && len(b) == n {
		return b
	}
	b := make([]F, n)
	*buf = b
	return b
}

// outputLossForward: in: y (rows, C), W (V, C), b (V) if the layer has
// one; ids the targets. Out: the loss.
func outputLossForward[F gemm.Float](a *args[F]) {
	st, y, w := a.outLoss, a.in[0], a.in[1]
	rowsN, C, V, eps := a.p.Rows, a.p.In, a.p.Out, a.p.Scale
	st.live = st.live[:0]
	for r, t := range a.ids {
		if t != a.p.Ignore {
			st.live = append(st.live, r)
		}
	}
	k := len(st.live)
	ys := bufferOf[F](&st.ys, rowsN*C)
	for i, r := range st.live {
		copy(ys[i*C:(i+1)*C], y[r*C:(r+1)*C])
	}
	logits := sharedBuffer[F](st.mem, "OutputLoss", rowsN*V)[:k*V]
	st.logits = logits
	if k == 0 {
		a.out[0] = 0
		return
	}
	if len(a.in) > 2 {
		gemm.MulBias(a.ws, false, true, k, V, C, ys, C, w, C, a.in[2], logits, V)
	} else {
		gemm.Mul(a.ws, false, true, k, V, C, ys, C, w, C, logits, V, false)
	}
	if len(st.lse) < rowsN {
		st.lse, st.terms = make([]float64, rowsN), make([]float64, rowsN)
	}
	rows(a, k, 3*len(logits), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xr := logits[i*V : (i+1)*V]
			lse := logSumExp(xr)
			st.lse[i] = lse
			term := (1 - eps) * (lse - float64(xr[a.ids[st.live[i]]]))
			if eps > 0 {
				term += eps * (lse - rowSum(xr)/float64(V))
			}
			st.terms[i] = term
		}
	})
	total := 0.0
	for _, term := range st.terms[:k] {
		total += term
	}
	a.out[0] = F(total / float64(k))
}

// outputLossBackwardX turns the counted rows' logits into their gradient,
// in place — ∂x_ij = g/n·(p_ij − (1−ε)·[j = target_i] − ε/V), as
// smoothedCEBackward — then ∂y = ∂logits·W on the counted rows and 0 on
// the others. in: the loss (read for the order only), W, g; ids the targets.
func outputLossBackwardX[F gemm.Float](a *args[F]) {
	st, w := a.outLoss, a.in[1]
	C, V, eps, k := a.p.In, a.p.Out, a.p.Scale, len(st.live)
	clear(a.out)
	if k == 0 {
		return
	}
	g := float64(a.in[2][0]) / float64(k)
	logits := st.logits.([]F)
	rows(a, k, 2*len(logits), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xr, lse := logits[i*V:(i+1)*V], st.lse[i]
			if x32, ok := any(xr).([]float32); ok {
				// As smoothedCEBackward: p in float32 from lse rounded to float32.
				expf.Exps(x32, x32, float32(lse))
				gs, off := float32(g), float32(g*eps/float64(V))
				for j, p := range x32 {
					x32[j] = p*gs - off
				}
			} else {
				for j, v := range xr {
					xr[j] = F(g * (math.Exp(float64(v)-lse) - eps/float64(V)))
				}
			}
			xr[a.ids[st.live[i]]] -= F(g * (1 - eps))
		}
	})
	dys := bufferOf[F](&st.dys, a.p.Rows*C)[:k*C]
	gemm.Mul(a.ws, false, false, k, C, V, logits, V, w, C, dys, C, false)
	for i, r := range st.live {
		copy(a.out[r*C:(r+1)*C], dys[i*C:(i+1)*C])
	}
}

// outputLossBackwardW: ∂W = ∂logitsᵀ·y over the counted rows. in: ∂y
// (read for the order only).
func outputLossBackwardW[F gemm.Float](a *args[F]) {
	st, C, V, k := a.outLoss, a.p.In, a.p.Out, len(a.outLoss.live)
	if k == 0 {
		clear(a.out)
		return
	}
	gemm.Mul(a.ws, true, false, V, C, k, st.logits.([]F), V, st.ys.([]F), C, a.out, C, false)
}

// outputLossBackwardB: ∂b = the counted rows of ∂logits summed, split by
// columns as biasBackward. in: ∂y (read for the order only).
func outputLossBackwardB[F gemm.Float](a *args[F]) {
	st, V, k := a.outLoss, a.p.Out, len(a.outLoss.live)
	if k == 0 {
		clear(a.out)
		return
	}
	logits := st.logits.([]F)
	const band = 64
	a.t.split((V+band-1)/band, k*V, func(ws *gemm.Workspace, lo, hi int) {
		c0, c1 := lo*band, min(hi*band, V)
		gemm.SumRows(ws, k, c1-c0, logits[c0:], V, a.out[c0:c1])
	})
}
