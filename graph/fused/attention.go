package fused

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/expf"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// attention: the weights w = softmax(q·kᵀ·scale + mask), (B·H, T, T),
// one node so that graph.Model.Attention can read them, and y = w·v (w⊙drop
// under attention dropout), rows (B·T, C) with the heads side by side, as
// mergeHeads leaves them.
//
// Each pass is one kernel per layer that takes a (sequence, head) pair
// through all of its steps while the pair's (T, T) matrices sit in the
// cache, instead of one op per step writing and reading (B·H, T, T)
// tensors of 24 MB per layer at nanoGPT's shape: the weights kernel also
// computes y (the mix op's kernel does nothing), and attentionBackward all
// three gradients. Gorgonia asks each op for the gradients of its own
// inputs, so the mix op takes q and k as inputs too and is differentiated
// with respect to v, q and k; the weights node is not differentiated on
// its own (the model reads w, but its loss reaches w only through y).
func (f *Emitter) Attention(q, k, v *G.Node, scale float64, causal bool, drop *G.Node) (y, w *G.Node) {
	p := f.dims
	p.Scale, p.Mask = scale, causal
	T := p.Seq
	weights := tensor.Shape{p.Batch * p.Heads, T, T}
	rows := tensor.Shape{p.Rows, p.Width}
	state := &attentionState{}

	wIns, wKinds := G.Nodes{q, k, v}, rank(2, 2, 2)
	ins, kinds, wrt := G.Nodes{nil, v, q, k}, rank(3, 2, 2, 2), []bool{false, true, true, true}
	if drop != nil {
		wIns, wKinds = append(wIns, drop), append(wKinds, 3)
		ins, kinds, wrt = append(ins, drop), append(kinds, 3), append(wrt, false)
	}
	// Differentiable in name only, so that a loss reading w directly fails
	// to differentiate instead of losing that part of its gradient.
	wOp := f.newOp("AttentionWeights", p, kernelOf(attentionForward[float32], attentionForward[float64]), wKinds, weights,
		[]bool{true, true, true, false}[:len(wIns)]...)
	wOp.grad = refuseWeightsGrad
	wOp.attn = state
	w = G.Must(G.ApplyOp(wOp, wIns...))
	ins[0] = w

	yOp := f.newOp("AttentionMix", p, kernelOf(written[float32], written[float64]), kinds, rows, wrt...)
	state.y = yOp
	yOp.attn = state
	yOp.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		// in: w, v, q, k[, drop]; the kernel's: w, dy, v, q, k[, drop].
		gradIns := append(G.Nodes{in[0], dy}, in[1:]...)
		dv, err := op.derive("AttentionGrad", kernelOf(attentionBackward[float32], attentionBackward[float64]),
			append(rank(3, 2), kinds[1:]...), rows.Clone(), gradIns...)
		if err != nil {
			return nil, err
		}
		dq, dk, err := op.queryKeyGrads("Attention", rows, rows, dv)
		if err != nil {
			return nil, err
		}
		grads := G.Nodes{nil, dv, dq, dk}
		if drop != nil {
			grads = append(grads, nil)
		}
		return grads, nil
	}
	y = G.Must(G.ApplyOp(yOp, ins...))
	return y, w
}

// refuseWeightsGrad is the weights op's gradient: the op is
// differentiable in name only, so that a loss reading w directly fails to
// differentiate instead of losing that part of its gradient.
func refuseWeightsGrad(*fusedOp, G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("attention weights: a loss may read them only through y = w·v")
}

// queryKeyGrads makes the two ops that hold ∂q (rows like q) and ∂k (rows
// like k), named after the layer's kind. The backward kernel writes both
// into their outputs, and their own kernels do nothing: taking dv, the
// backward op's output, as input orders them after it.
func (op *fusedOp) queryKeyGrads(kind string, qRows, kRows tensor.Shape, dv *G.Node) (dq, dk *G.Node, err error) {
	if dq, err = op.derive(kind+"GradQ", kernelOf(written[float32], written[float64]), rank(2), qRows.Clone(), dv); err != nil {
		return nil, nil, err
	}
	if dk, err = op.derive(kind+"GradK", kernelOf(written[float32], written[float64]), rank(2), kRows.Clone(), dv); err != nil {
		return nil, nil, err
	}
	op.attn.dq, op.attn.dk = dq.Op().(*fusedOp), dk.Op().(*fusedOp)
	return dq, dk, nil
}

// attentionState is what the attention ops of one layer share.
type attentionState struct {
	// y is the op whose output attentionForward writes; dq and dk those
	// whose outputs attentionBackward writes.
	y, dq, dk *fusedOp
	// scratch holds one (T, T) matrix per worker of the team (two under
	// attention dropout), float32 or float64 as the graph.
	scratch32 []float32
	scratch64 []float64
}

// scratch returns worker ws's n numbers of the layer's scratch, growing
// it for every worker of the team (before the work is split: the
// workers only read the slice).
func scratch[F gemm.Float](a *args[F], n int) func(ws *gemm.Workspace) []F {
	st, workers := a.attn, len(a.t.own)
	var all []F
	switch any(F(0)).(type) {
	case float32:
		if len(st.scratch32) < workers*n {
			st.scratch32 = make([]float32, workers*n)
		}
		all = any(st.scratch32).([]F)
	default:
		if len(st.scratch64) < workers*n {
			st.scratch64 = make([]float64, workers*n)
		}
		all = any(st.scratch64).([]F)
	}
	return func(ws *gemm.Workspace) []F {
		i := a.t.index(ws)
		return all[i*n : (i+1)*n]
	}
}

// output returns op's output buffer for another kernel to write into
// before op runs: lent for this run (op's Do then keeps it), or op's own.
func output[F gemm.Float](op *fusedOp) []F {
	op.ensureOutput()
	out, _ := floatsOf[F](op.out.(*tensor.Dense))
	return out
}

// written is the kernel of an op whose output another kernel has written.
func written[F gemm.Float](*args[F]) {}

// dropout: y = x⊙mask, mask holding 0 or 1/(1 − p) (filled before each
// run, see graph.Model.SetDropout); ∂x = ∂y⊙mask.
func (f *Emitter) Dropout(x, mask *G.Node) *G.Node {
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
func multiply[F gemm.Float](a *args[F]) { product(a.out, a.in[0], a.in[1]) }

// product sets dst[i] = x[i]·m[i].
func product[F gemm.Float](dst, x, m []F) {
	for i, v := range x {
		dst[i] = v * m[i]
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

// attentionForward: w = softmax(q·kᵀ·scale + mask) and y = w·v (w⊙drop
// under attention dropout, made in the worker's scratch) per sequence and
// head. in: q, k, v (rows, C) and drop (B·H, T, T) when there is one.
// Out: w (B·H, T, T); y goes to the output of the AttentionMix op. A
// masked score is never computed into the sum: exp(−1e9 − max) of the
// composed graph is exactly 0 too.
func attentionForward[F gemm.Float](a *args[F]) {
	q, k, v, p := a.in[0], a.in[1], a.in[2], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	y := output[F](a.attn.y)
	var drop []F
	var own func(*gemm.Workspace) []F
	if len(a.in) > 3 {
		drop, own = a.in[3], scratch(a, T*T)
	}
	pairs(a, 2*T*T*hs, func(ws *gemm.Workspace, b, h int) {
		at := (b*p.Heads + h) * T * T
		w := a.out[at : at+T*T]
		scores(ws, p.Mask, T, hs, head(q, p, b, h), head(k, p, b, h), C, w)
		for i := 0; i < T; i++ {
			row := w[i*T : (i+1)*T]
			n := T
			if p.Mask {
				n = i + 1
			}
			softmaxScaled(row[:n], p.Scale)
			clear(row[n:])
		}
		mixed := w
		if drop != nil {
			mixed = own(ws)
			product(mixed, w, drop[at:at+T*T])
		}
		timesHead(ws, p, mixed, head(v, p, b, h), head(y, p, b, h), false)
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

// attentionBackward computes the gradients of y = w·v, w = softmax(q·kᵀ·
// scale + mask), per sequence and head:
//
//	∂w = ∂y·vᵀ (⊙drop)     ∂v = wᵀ·∂y (w⊙drop under dropout)
//	∂s = scale·w⊙(∂w − rowsum(w⊙∂w))     the softmax backward
//	∂q = ∂s·k              ∂k = ∂sᵀ·q
//
// ∂w and ∂s share one (T, T) matrix in the worker's scratch, and w is read
// while it is in the cache. in: w, ∂y, v, q, k and drop when there is one.
// Out: ∂v; ∂q and ∂k go to the outputs of the AttentionGradQ and
// AttentionGradK ops. Under the mask ∂w is computed where j ≤ i only
// (gemm.MulLower's tiles), and ∂s is zero above the diagonal, which the
// products of ∂s read in their diagonal blocks.
func attentionBackward[F gemm.Float](a *args[F]) {
	w, dy, v, q, k, p := a.in[0], a.in[1], a.in[2], a.in[3], a.in[4], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	var drop []F
	n := T * T
	if len(a.in) > 5 {
		drop, n = a.in[5], 2*T*T
	}
	own := scratch(a, n)
	dq, dk := output[F](a.attn.dq), output[F](a.attn.dk)
	pairs(a, 5*T*T*hs, func(ws *gemm.Workspace, b, h int) {
		at := (b*p.Heads + h) * T * T
		buf := own(ws)
		wh, ds := w[at:at+T*T], buf[:T*T]
		dyh := head(dy, p, b, h)
		scores(ws, p.Mask, T, hs, dyh, head(v, p, b, h), C, ds)
		mixed := wh
		if drop != nil {
			mixed = buf[T*T:]
			product(mixed, wh, drop[at:at+T*T])
		}
		timesHead(ws, p, mixed, dyh, head(a.out, p, b, h), true)
		for i := 0; i < T; i++ {
			cols := T
			if p.Mask {
				cols = i + 1
			}
			row := ds[i*T : (i+1)*T]
			if drop != nil {
				for j, m := range drop[at+i*T : at+i*T+cols] {
					row[j] *= m
				}
			}
			softmaxBackward(row[:cols], wh[i*T:i*T+cols], p.Scale)
			clear(row[cols:])
		}
		timesHead(ws, p, ds, head(k, p, b, h), head(dq, p, b, h), false)
		timesHead(ws, p, ds, head(q, p, b, h), head(dk, p, b, h), true)
	})
}

// softmaxBackward replaces ∂w by ∂s = scale·w⊙(∂w − Σ_j w_j·∂w_j) along one
// row; a float32 row is expf.SoftmaxBackward's (eight at a time, in float64).
func softmaxBackward[F gemm.Float](dw, w []F, scale float64) {
	if d32, ok := any(dw).([]float32); ok {
		expf.SoftmaxBackward(d32, any(w).([]float32), d32, scale)
		return
	}
	dot := 0.0
	for j, v := range w {
		dot += float64(v) * float64(dw[j])
	}
	for j, v := range w {
		dw[j] = F(scale * float64(v) * (float64(dw[j]) - dot))
	}
}

// timesHead sets out to m·x (or mᵀ·x when transposed) for one sequence and
// head: m its (T, T) matrix, x and out its rows of (B·T, C). Under the mask
// m is zero above its diagonal: a block of rows i0…i1−1 of m needs columns
// (and rows of x) up to i1 only, and a block of columns j0…j1−1 of m, as mᵀ
// uses them, rows from j0 only.
func timesHead[F gemm.Float](ws *gemm.Workspace, p *opParams, m, x, out []F, transposed bool) {
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	rowBlocks(p, func(i0, i1 int) {
		if !transposed {
			gemm.Mul(ws, false, false, i1-i0, hs, i1, m[i0*T:], T, x, C, out[i0*C:], C, false)
			return
		}
		from := 0
		if p.Mask {
			from = i0
		}
		gemm.Mul(ws, true, false, i1-i0, hs, T-from, m[from*T+i0:], T, x[from*C:], C, out[i0*C:], C, false)
	})
}

// head returns rows (B·T, C) from the first element of sequence b's head h
// on; the head's rows are C apart, the stride to give gemm.Mul.
func head[F gemm.Float](x []F, p *opParams, b, h int) []F {
	return x[b*p.Seq*p.Width+h*(p.Width/p.Heads):]
}
