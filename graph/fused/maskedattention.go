package fused

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// MaskedAttention is the fused form of the primitive masked attention without
// the causal mask: the encoder's self-attention and the decoder's
// cross-attention. q rows (B·T_q, C), k and v rows (B·T_k, C), keyMask
// (B, T_k) added to every row of sequence b's scores. It returns y rows
// (B·T_q, C) and the weights (B·H, T_q, T_k).
//
// The ops are attention.go's, for a rectangular score matrix and a key
// mask: the weights op computes w and y in one kernel, the mix op's kernel
// does nothing, and one backward kernel computes ∂v, ∂q and ∂k, writing
// the last two into the outputs of two ops whose own kernels do nothing.
// In opParams, Seq is T_q and Context is T_k.
func (f *Emitter) MaskedAttention(q, k, v, keyMask *G.Node, scale float64) (y, w *G.Node) {
	p := f.dims
	p.Scale = scale
	p.Seq, p.Context = q.Shape()[0]/p.Batch, k.Shape()[0]/p.Batch
	weights := tensor.Shape{p.Batch * p.Heads, p.Seq, p.Context}
	qRows, kRows := q.Shape().Clone(), k.Shape().Clone()
	state := &attentionState{}

	wOp := f.newOp("MaskedAttentionWeights", p, kernelOf(maskedAttentionForward[float32], maskedAttentionForward[float64]),
		rank(2, 2, 2, 2), weights, true, true, true, false)
	wOp.grad = refuseWeightsGrad
	wOp.attn = state
	w = G.Must(G.ApplyOp(wOp, q, k, v, keyMask))

	yOp := f.newOp("MaskedAttentionMix", p, kernelOf(written[float32], written[float64]),
		rank(3, 2, 2, 2, 2), qRows, false, true, true, true, false)
	state.y = yOp
	yOp.attn = state
	yOp.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		// in: w, v, q, k, mask; the kernel's: w, dy, v, q, k.
		dv, err := op.derive("MaskedAttentionGrad", kernelOf(maskedAttentionBackward[float32], maskedAttentionBackward[float64]),
			rank(3, 2, 2, 2, 2), kRows.Clone(), in[0], dy, in[1], in[2], in[3])
		if err != nil {
			return nil, err
		}
		dq, dk, err := op.queryKeyGrads("MaskedAttention", qRows, kRows, dv)
		if err != nil {
			return nil, err
		}
		return G.Nodes{nil, dv, dq, dk, nil}, nil
	}
	y = G.Must(G.ApplyOp(yOp, w, v, q, k, keyMask))
	return y, w
}

// rectPairs runs f for every (sequence, head) pair, split over the team;
// flops estimates one pair.
func rectPairs[F gemm.Float](a *args[F], flops int, f func(ws *gemm.Workspace, b, h int)) {
	p := a.p
	a.t.split(p.Batch*p.Heads, flops*p.Batch*p.Heads, func(ws *gemm.Workspace, lo, hi int) {
		for i := lo; i < hi; i++ {
			f(ws, i/p.Heads, i%p.Heads)
		}
	})
}

// headOf returns rows (B·T, C) from sequence b's head h on: the head's
// rows are C apart.
func headOf[F gemm.Float](x []F, T, C, hs, b, h int) []F { return x[b*T*C+h*hs:] }

// maskedAttentionForward: per sequence and head, w = softmax(q·kᵀ·scale +
// mask) over the T_k keys and y = w·v. in: q (B·T_q, C), k, v (B·T_k, C),
// mask (B, T_k). Out: w; y goes to the mix op's output. Each row's
// softmax is taken in float64 over every key, a masked key's term
// exp(−1e9 − max) being exactly 0, as in the composed graph.
func maskedAttentionForward[F gemm.Float](a *args[F]) {
	q, k, v, mask, p := a.in[0], a.in[1], a.in[2], a.in[3], a.p
	Tq, Tk, C, hs := p.Seq, p.Context, p.Width, p.Width/p.Heads
	y := output[F](a.attn.y)
	rectPairs(a, 2*Tq*Tk*hs, func(ws *gemm.Workspace, b, h int) {
		at := (b*p.Heads + h) * Tq * Tk
		w := a.out[at : at+Tq*Tk]
		gemm.Mul(ws, false, true, Tq, Tk, hs, headOf(q, Tq, C, hs, b, h), C, headOf(k, Tk, C, hs, b, h), C, w, Tk, false)
		m := mask[b*Tk : (b+1)*Tk]
		for i := 0; i < Tq; i++ {
			row := w[i*Tk : (i+1)*Tk]
			// The masked scores, then the causal attention's softmax over
			// them (scale 1: they are scaled already).
			for j, s := range row {
				row[j] = s*F(p.Scale) + m[j]
			}
			softmaxScaled(row, 1)
		}
		gemm.Mul(ws, false, false, Tq, hs, Tk, w, Tk, headOf(v, Tk, C, hs, b, h), C, headOf(y, Tq, C, hs, b, h), C, false)
	})
}

// maskedAttentionBackward: per sequence and head,
//
//	∂w = ∂y·vᵀ    ∂v = wᵀ·∂y    ∂s = scale·w⊙(∂w − rowsum(w⊙∂w))
//	∂q = ∂s·k     ∂k = ∂sᵀ·q
//
// (the mask is a constant: a masked weight is 0, and so is its ∂s). in:
// w, ∂y, v, q, k. Out: ∂v; ∂q and ∂k go to the outputs of the GradQ and
// GradK ops.
func maskedAttentionBackward[F gemm.Float](a *args[F]) {
	w, dy, v, q, k, p := a.in[0], a.in[1], a.in[2], a.in[3], a.in[4], a.p
	Tq, Tk, C, hs := p.Seq, p.Context, p.Width, p.Width/p.Heads
	own := scratch(a, Tq*Tk)
	dq, dk := output[F](a.attn.dq), output[F](a.attn.dk)
	rectPairs(a, 5*Tq*Tk*hs, func(ws *gemm.Workspace, b, h int) {
		at := (b*p.Heads + h) * Tq * Tk
		wh, ds := w[at:at+Tq*Tk], own(ws)
		dyh := headOf(dy, Tq, C, hs, b, h)
		gemm.Mul(ws, false, true, Tq, Tk, hs, dyh, C, headOf(v, Tk, C, hs, b, h), C, ds, Tk, false)
		gemm.Mul(ws, true, false, Tk, hs, Tq, wh, Tk, dyh, C, headOf(a.out, Tk, C, hs, b, h), C, false)
		for i := 0; i < Tq; i++ {
			softmaxBackward(ds[i*Tk:(i+1)*Tk], wh[i*Tk:(i+1)*Tk], p.Scale)
		}
		gemm.Mul(ws, false, false, Tq, hs, Tk, ds, Tk, headOf(k, Tk, C, hs, b, h), C, headOf(dq, Tq, C, hs, b, h), C, false)
		gemm.Mul(ws, true, false, Tk, hs, Tq, ds, Tk, headOf(q, Tq, C, hs, b, h), C, headOf(dk, Tk, C, hs, b, h), C, false)
	})
}
