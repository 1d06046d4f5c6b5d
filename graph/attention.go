package graph

import (
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/expf"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// attention: the weights w = softmax(q·kᵀ·scale + mask), (B·H, T, T),
// one node so that Model.Attention can read them, and y = w·v, rows
// (B·T, C) with the heads side by side, as mergeHeads leaves them.
func (f *fused) attention(q, k, v *G.Node, scale float64, causal bool, drop *G.Node) (y, w *G.Node) {
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
	mixed := w
	if drop != nil {
		mixed = f.dropout(w, drop)
	}
	y = G.Must(G.ApplyOp(yOp, mixed, v))
	return y, w
}

// dropout: y = x⊙mask, mask holding 0 or 1/(1 − p) (filled before each
// run, see Model.SetDropout); ∂x = ∂y⊙mask.
func (f *fused) dropout(x, mask *G.Node) *G.Node {
	dims := argKind(x.Dims())
	op := f.newOp("Dropout", f.dims, kernelOf(multiply[float32], multiply[float64]),
		[]argKind{dims, dims}, x.Shape().Clone(), true, false)
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		dx, err := op.derive("DropoutGrad", kernelOf(multiply[float32], multiply[float64]),
			[]argKind{dims, dims}, in[0].Shape().Clone(), dy, in[1])
		return G.Nodes{dx, nil}, err
	}
	return G.Must(G.ApplyOp(op, x, mask))
}

// multiply: out = a⊙b element by element. in: a, b of one shape.
func multiply[F gemm.Float](a *args[F]) {
	x, m := a.in[0], a.in[1]
	for i, v := range x {
		a.out[i] = v * m[i]
	}
}

// The attention kernels run one (sequence, head) pair at a time, the pairs
// split over the team. With the causal mask they skip the upper triangle
// of the (T, T) weights: row i of the scores needs keys 0…i only. The
// scores q·kᵀ and dy·vᵀ skip it tile by tile (gemm.MulLower, see scores);
// the products that read w or ∂s go in blocks of causalBlock rows, a block
// of rows i0…i1−1 being one product against the first i1 keys (or, for
// the transposed ones, the rows from i0 on). The skipped entries are
// exact zeros of w, so every computed number is the same as without
// skipping; at T = 256 it saves 44 % of the flops.
const causalBlock = 32

// pairs runs f for every (sequence, head) pair, the pairs split over the
// team, each worker with its own gemm workspace; flops estimates one pair.
func pairs[F gemm.Float](a *args[F], flops int, f func(ws *gemm.Workspace, b, h int)) {
	p := a.p
	a.t.split(p.Batch*p.Heads, flops*p.Batch*p.Heads, func(ws *gemm.Workspace, lo, hi int) {
		for i := lo; i < hi; i++ {
			f(ws, i/p.Heads, i%p.Heads)
		}
	})
}

// rowBlocks calls f with the row blocks [i0, i1) of a (T, T) attention
// matrix: one block of all T rows without the mask, causalBlock rows at a
// time with it.
func rowBlocks(p *opParams, f func(i0, i1 int)) {
	step := p.Seq
	if p.Mask {
		step = causalBlock
	}
	for i0 := 0; i0 < p.Seq; i0 += step {
		f(i0, min(i0+step, p.Seq))
	}
}

// attentionWeightsForward: w = softmax(q·kᵀ·scale + mask) per sequence and head.
// in: q, k (rows, C). Out: (B·H, T, T). A masked score is never computed
// into the sum: exp(−1e9 − max) of the composed graph is exactly 0 too.
func attentionWeightsForward[F gemm.Float](a *args[F]) {
	q, k, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	pairs(a, T*T*hs, func(ws *gemm.Workspace, b, h int) {
		w := a.out[(b*p.Heads+h)*T*T : (b*p.Heads+h+1)*T*T]
		qh, kh := head(q, p, b, h), head(k, p, b, h)
		scores(ws, p.Mask, T, hs, qh, kh, C, w)
		for i := 0; i < T; i++ {
			row := w[i*T : (i+1)*T]
			n := T
			if p.Mask {
				n = i + 1
			}
			softmaxScaled(row[:n], p.Scale)
			clear(row[n:])
		}
	})
}

// scores sets the (T, T) matrix s = x·yᵀ of one sequence and head (x, y
// rows C apart, hs columns: q·kᵀ, or dy·vᵀ in the backward pass). Under
// the mask only the entries j ≤ i are needed: gemm.MulLower skips the
// tiles above the diagonal, with yᵀ packed once for the whole square
// (blocks of causalBlock rows packed the keys of each block again: 67
// against ≈ 100 GFLOP/s of needed work, bench/NOTES.md A1). The rest of
// each row is left for the caller to clear or ignore.
func scores[F gemm.Float](ws *gemm.Workspace, mask bool, T, hs int, x, y []F, C int, s []F) {
	if mask {
		gemm.MulLower(ws, false, true, T, T, hs, x, C, y, C, s, T)
		return
	}
	gemm.Mul(ws, false, true, T, T, hs, x, C, y, C, s, T, false)
}

// softmaxScaled replaces the raw scores s by softmax(s·scale), shifted by
// the row max first (scale > 0, so the max of s is the max of s·scale).
// A float32 row is expf.Softmax's (eight at a time, sums in float64); a
// float64 row takes math.Exp.
func softmaxScaled[F gemm.Float](s []F, scale float64) {
	if s32, ok := any(s).([]float32); ok {
		expf.Softmax(s32, float32(scale))
		return
	}
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
	inv := 1 / sum // one division per row, not one per entry
	for i, v := range s {
		s[i] = F(float64(v) * inv)
	}
}

// attentionWeightsBackward is the softmax backward, times the scale: the
// gradient of the raw scores q·kᵀ. ∂s_ij = scale·w_ij·(∂w_ij − Σ_k w_ik·∂w_ik);
// a float32 row is expf.SoftmaxBackward's (eight at a time, in float64).
// in: w, ∂w (B·H, T, T). Masked entries have w = 0 and so ∂s = 0; they are
// written as zeros without reading ∂w there, which the causal kernels of
// attentionMixBackwardW leave unwritten.
func attentionWeightsBackward[F gemm.Float](a *args[F]) {
	w, dw, T, scale := a.in[0], a.in[1], a.p.Seq, a.p.Scale
	a.t.split(len(w)/T, 3*len(w), func(_ *gemm.Workspace, lo, hi int) {
		for r := lo; r < hi; r++ {
			n := T
			if a.p.Mask {
				n = r%T + 1
			}
			wr, dr, out := w[r*T:r*T+n], dw[r*T:r*T+n], a.out[r*T:(r+1)*T]
			if out32, ok := any(out).([]float32); ok {
				expf.SoftmaxBackward(out32[:n], any(wr).([]float32), any(dr).([]float32), scale)
				clear(out[n:])
				continue
			}
			dot := 0.0
			for j, v := range wr {
				dot += float64(v) * float64(dr[j])
			}
			for j, v := range wr {
				out[j] = F(scale * float64(v) * (float64(dr[j]) - dot))
			}
			clear(out[n:])
		}
	})
}

// attentionBackwardQ: ∂q = ∂s·k per sequence and head. in: ∂s (B·H, T, T), k (rows, C).
func attentionBackwardQ[F gemm.Float](a *args[F]) { squareTimesHeads(a, a.in[0], a.in[1], false) }

// attentionBackwardK: ∂k = ∂sᵀ·q per sequence and head. in: ∂s (B·H, T, T), q (rows, C).
func attentionBackwardK[F gemm.Float](a *args[F]) { squareTimesHeads(a, a.in[0], a.in[1], true) }

// attentionMixForward: y = w·v per sequence and head, heads side by side in y's rows.
// in: w (B·H, T, T), v (rows, C).
func attentionMixForward[F gemm.Float](a *args[F]) { squareTimesHeads(a, a.in[0], a.in[1], false) }

// attentionMixBackwardV: ∂v = wᵀ·dy per sequence and head. in: w (B·H, T, T), dy (rows, C).
func attentionMixBackwardV[F gemm.Float](a *args[F]) { squareTimesHeads(a, a.in[0], a.in[1], true) }

// squareTimesHeads sets each head of a.out to m·x (or mᵀ·x when
// transposed), m one (T, T) matrix per sequence and head, x rows (B·T, C)
// read head by head. Under the mask m is zero above its diagonal: a block
// of rows i0…i1−1 of m needs columns (and rows of x) up to i1 only, and a
// block of columns j0…j1−1 of m, as mᵀ uses them, rows from j0 only.
func squareTimesHeads[F gemm.Float](a *args[F], m, x []F, transposed bool) {
	p := a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	pairs(a, T*T*hs, func(ws *gemm.Workspace, b, h int) {
		mh, xh, out := m[(b*p.Heads+h)*T*T:], head(x, p, b, h), head(a.out, p, b, h)
		rowBlocks(p, func(i0, i1 int) {
			if !transposed {
				gemm.Mul(ws, false, false, i1-i0, hs, i1, mh[i0*T:], T, xh, C, out[i0*C:], C, false)
				return
			}
			from := 0
			if p.Mask {
				from = i0
			}
			gemm.Mul(ws, true, false, i1-i0, hs, T-from, mh[from*T+i0:], T, xh[from*C:], C, out[i0*C:], C, false)
		})
	})
}

// attentionMixBackwardW: ∂w = dy·vᵀ per sequence and head. in: dy (rows, C), v (rows, C).
// Under the mask only the entries j ≤ i are used (attentionWeightsBackward
// multiplies the rest by w = 0 without reading them), so only the causal
// blocks are computed.
func attentionMixBackwardW[F gemm.Float](a *args[F]) {
	dy, v, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	pairs(a, T*T*hs, func(ws *gemm.Workspace, b, h int) {
		dw, dyh, vh := a.out[(b*p.Heads+h)*T*T:], head(dy, p, b, h), head(v, p, b, h)
		scores(ws, p.Mask, T, hs, dyh, vh, C, dw)
	})
}

// head returns rows (B·T, C) from the first element of sequence b's head h
// on; the head's rows are C apart, the stride to give gemm.Mul.
func head[F gemm.Float](x []F, p *opParams, b, h int) []F {
	return x[b*p.Seq*p.Width+h*(p.Width/p.Heads):]
}
