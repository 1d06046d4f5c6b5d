package graph

import (
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// attention: the weights w = softmax(q·kᵀ·scale + mask), (B·H, T, T),
// one node so that Model.Attention can read them, and y = w·v, rows
// (B·T, C) with the heads side by side, as mergeHeads leaves them.
func (f *fused) attention(q, k, v *G.Node, scale float64, causal bool) (y, w *G.Node) {
	p := f.dims
	p.Scale, p.Mask = scale, causal
	T := p.Seq
	weights := tensor.Shape{p.Batch * p.Heads, T, T}
	rows := tensor.Shape{p.Rows, p.Width}

	wOp := f.newOp("AttentionWeights", p, kernelOf(attentionWeightsForward[float32], attentionWeightsForward[float64]),
		rank(2, 2), weights, true, true)
	wOp.grad = func(op *fusedOp, in G.Nodes, w, dw *G.Node) (G.Nodes, error) {
		ds, err := op.derive("AttentionScoreGrad", kernelOf(attentionWeightsBackward[float32], attentionWeightsBackward[float64]),
			rank(3, 3), weights.Clone(), w, dw)
		if err != nil {
			return nil, err
		}
		dq, err := op.derive("AttentionQGrad", kernelOf(attentionBackwardQ[float32], attentionBackwardQ[float64]),
			rank(3, 2), rows.Clone(), ds, in[1])
		if err != nil {
			return nil, err
		}
		dk, err := op.derive("AttentionKGrad", kernelOf(attentionBackwardK[float32], attentionBackwardK[float64]),
			rank(3, 2), rows.Clone(), ds, in[0])
		return G.Nodes{dq, dk}, err
	}
	w = G.Must(G.ApplyOp(wOp, q, k))

	yOp := f.newOp("AttentionMix", p, kernelOf(attentionMixForward[float32], attentionMixForward[float64]),
		rank(3, 2), rows, true, true)
	yOp.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		dw, err := op.derive("AttentionMixGradW", kernelOf(attentionMixBackwardW[float32], attentionMixBackwardW[float64]),
			rank(2, 2), weights.Clone(), dy, in[1])
		if err != nil {
			return nil, err
		}
		dv, err := op.derive("AttentionMixGradV", kernelOf(attentionMixBackwardV[float32], attentionMixBackwardV[float64]),
			rank(3, 2), rows.Clone(), in[0], dy)
		return G.Nodes{dw, dv}, err
	}
	y = G.Must(G.ApplyOp(yOp, w, v))
	return y, w
}

// attentionWeightsForward: w = softmax(q·kᵀ·scale + mask) per sequence and head.
// in: q, k (rows, C). Out: (B·H, T, T). A masked score is never computed
// into the sum: exp(−1e9 − max) of the composed graph is exactly 0 too.
func attentionWeightsForward[F gemm.Float](a *args[F]) {
	q, k, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	for b := 0; b < p.Batch; b++ {
		for h := 0; h < p.Heads; h++ {
			w := a.out[(b*p.Heads+h)*T*T : (b*p.Heads+h+1)*T*T]
			gemm.Mul(a.ws, false, true, T, T, hs, head(q, p, b, h), C, head(k, p, b, h), C, w, T, false)
			for i := 0; i < T; i++ {
				row := w[i*T : (i+1)*T]
				n := T
				if p.Mask {
					n = i + 1
				}
				softmaxScaled(row[:n], p.Scale)
				clear(row[n:])
			}
		}
	}
}

// softmaxScaled replaces the raw scores s by softmax(s·scale), shifted by
// the row max first (scale > 0, so the max of s is the max of s·scale).
func softmaxScaled[F gemm.Float](s []F, scale float64) {
	maxv := math.Inf(-1)
	for _, v := range s {
		maxv = max(maxv, float64(v))
	}
	sum := 0.0
	for i, v := range s {
		e := math.Exp((float64(v) - maxv) * scale)
		s[i] = F(e)
		sum += e
	}
	for i, v := range s {
		s[i] = F(float64(v) / sum)
	}
}

// attentionWeightsBackward is the softmax backward, times the scale: the gradient of
// the raw scores q·kᵀ. ∂s_ij = scale·w_ij·(∂w_ij − Σ_k w_ik·∂w_ik).
// in: w, ∂w (B·H, T, T). Masked entries have w = 0 and so ∂s = 0.
func attentionWeightsBackward[F gemm.Float](a *args[F]) {
	w, dw, T, scale := a.in[0], a.in[1], a.p.Seq, a.p.Scale
	for r := 0; r+T <= len(w); r += T {
		wr, dr, out := w[r:r+T], dw[r:r+T], a.out[r:r+T]
		dot := 0.0
		for j, v := range wr {
			dot += float64(v) * float64(dr[j])
		}
		for j, v := range wr {
			out[j] = F(scale * float64(v) * (float64(dr[j]) - dot))
		}
	}
}

// attentionBackwardQ: ∂q = ∂s·k per sequence and head. in: ∂s (B·H, T, T), k (rows, C).
func attentionBackwardQ[F gemm.Float](a *args[F]) {
	ds, k, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		dh := ds[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, false, false, T, hs, T, dh, T, head(k, p, b, h), C, head(a.out, p, b, h), C, false)
	})
}

// attentionBackwardK: ∂k = ∂sᵀ·q per sequence and head. in: ∂s (B·H, T, T), q (rows, C).
func attentionBackwardK[F gemm.Float](a *args[F]) {
	ds, q, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		dh := ds[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, true, false, T, hs, T, dh, T, head(q, p, b, h), C, head(a.out, p, b, h), C, false)
	})
}

// attentionMixForward: y = w·v per sequence and head, heads side by side in y's rows.
// in: w (B·H, T, T), v (rows, C).
func attentionMixForward[F gemm.Float](a *args[F]) {
	w, v, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		wh := w[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, false, false, T, hs, T, wh, T, head(v, p, b, h), C, head(a.out, p, b, h), C, false)
	})
}

// attentionMixBackwardW: ∂w = dy·vᵀ per sequence and head. in: dy (rows, C), v (rows, C).
func attentionMixBackwardW[F gemm.Float](a *args[F]) {
	dy, v, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		dw := a.out[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, false, true, T, T, hs, head(dy, p, b, h), C, head(v, p, b, h), C, dw, T, false)
	})
}

// attentionMixBackwardV: ∂v = wᵀ·dy per sequence and head. in: w (B·H, T, T), dy (rows, C).
func attentionMixBackwardV[F gemm.Float](a *args[F]) {
	w, dy, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		wh := w[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, true, false, T, hs, T, wh, T, head(dy, p, b, h), C, head(a.out, p, b, h), C, false)
	})
}

// eachHead calls f for every head h of every sequence b of a batch.
func eachHead(p *opParams, f func(b, h int)) {
	for b := 0; b < p.Batch; b++ {
		for h := 0; h < p.Heads; h++ {
			f(b, h)
		}
	}
}

// head returns rows (B·T, C) from the first element of sequence b's head h
// on; the head's rows are C apart, the stride to give gemm.Mul.
func head[F gemm.Float](x []F, p *opParams, b, h int) []F {
	return x[b*p.Seq*p.Width+h*(p.Width/p.Heads):]
}
