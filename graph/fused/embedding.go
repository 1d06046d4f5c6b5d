package fused

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// embedding: rows (B·T, C) = tok[tokens] + pos[0..T), one node; its
// backward scatters the rows of ∂x into ∂tok and sums them into ∂pos.
func (f *Emitter) Embedding(tokens, tok, pos *G.Node) *G.Node {
	p := f.dims
	shape := tensor.Shape{p.Rows, p.Width}
	op := f.newOp("Embedding", p, kernelOf(embeddingForward[float32], embeddingForward[float64]),
		[]argKind{2, 2, intVector}, shape, true, true, false)
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		dTok, err := op.derive("EmbeddingTokGrad", kernelOf(embeddingBackwardTok[float32], embeddingBackwardTok[float64]),
			[]argKind{2, intVector}, in[0].Shape().Clone(), dy, in[2])
		if err != nil {
			return nil, err
		}
		dPos, err := op.derive("EmbeddingPosGrad", kernelOf(embeddingBackwardPos[float32], embeddingBackwardPos[float64]),
			rank(2), in[1].Shape().Clone(), dy)
		return G.Nodes{dTok, dPos, nil}, err
	}
	return G.Must(G.ApplyOp(op, tok, pos, tokens))
}

// ScaledEmbedding: rows (B·T, C) = tok[tokens]·scale + pos[0..T), one
// node: the encoder–decoder's embedding (scale √C, the paper's 3.4) with
// the arithmetic of its primitive form, the product rounded before the
// sum. learnedPos says whether pos is a parameter (a learned table, whose
// gradient is emitted) or a constant (the sinusoidal table, whose is not).
// Gorgonia's gather (ByIndices) that the primitive form uses allocates
// its output and its (V, C) gradient on every run: 6 MB of garbage per
// en-es step, which the collector let grow the heap by half.
func (f *Emitter) ScaledEmbedding(tokens, tok, pos *G.Node, scale float64, learnedPos bool) *G.Node {
	p := f.dims
	p.Scale = scale
	shape := tensor.Shape{p.Rows, p.Width}
	op := f.newOp("ScaledEmbedding", p, kernelOf(embeddingForward[float32], embeddingForward[float64]),
		[]argKind{2, 2, intVector}, shape, true, learnedPos, false)
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		dTok, err := op.derive("ScaledEmbeddingTokGrad", kernelOf(embeddingBackwardTok[float32], embeddingBackwardTok[float64]),
			[]argKind{2, intVector}, in[0].Shape().Clone(), dy, in[2])
		if err != nil || !learnedPos {
			return G.Nodes{dTok, nil, nil}, err
		}
		dPos, err := op.derive("EmbeddingPosGrad", kernelOf(embeddingBackwardPos[float32], embeddingBackwardPos[float64]),
			rank(2), in[1].Shape().Clone(), dy)
		return G.Nodes{dTok, dPos, nil}, err
	}
	return G.Must(G.ApplyOp(op, tok, pos, tokens))
}

// embeddingForward: x[r] = tok[ids[r]] + pos[r mod T], or with a scale
// (ScaledEmbedding) tok[ids[r]]·scale + pos[r mod T]. in: tok (V, C), pos
// (Context, C).
func embeddingForward[F gemm.Float](a *args[F]) {
	tok, pos, C, T := a.in[0], a.in[1], a.p.Width, a.p.Seq
	scaled, s := a.p.Scale != 0, F(a.p.Scale)
	rows(a, len(a.ids), len(a.out), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			id, t := a.ids[r], r%T
			dst, tr, pr := a.out[r*C:(r+1)*C], tok[id*C:(id+1)*C], pos[t*C:(t+1)*C]
			if scaled {
				for j := range dst {
					dst[j] = F(tr[j]*s) + pr[j] // F(…): rounded, never fused into an FMA
				}
				continue
			}
			for j := range dst {
				dst[j] = tr[j] + pr[j]
			}
		}
	})
}

// embeddingBackwardTok: ∂tok[v] = Σ over rows r with ids[r] = v of dy[r]
// (of dy[r]·scale, each product rounded, with a scale). in: dy.
// Rows of one id land on one row of ∂tok, so the team splits the columns:
// each sum still runs over the rows in order.
func embeddingBackwardTok[F gemm.Float](a *args[F]) {
	dy, C := a.in[0], a.p.Width
	scaled, s := a.p.Scale != 0, F(a.p.Scale)
	clear(a.out)
	rows(a, C, len(dy), func(lo, hi int) {
		for r, id := range a.ids {
			if scaled {
				dst, src := a.out[id*C+lo:id*C+hi], dy[r*C+lo:r*C+hi]
				for j, v := range src {
					dst[j] += F(v * s)
				}
				continue
			}
			addTo(a.out[id*C+lo:id*C+hi], dy[r*C+lo:r*C+hi])
		}
	})
}

// embeddingBackwardPos: ∂pos[t] = Σ_b dy[b·T + t]; rows past T (a short
// graph) get 0. in: dy. Split by columns as embeddingBackwardTok.
func embeddingBackwardPos[F gemm.Float](a *args[F]) {
	dy, C, T := a.in[0], a.p.Width, a.p.Seq
	clear(a.out)
	rows(a, C, len(dy), func(lo, hi int) {
		for r := 0; r < a.p.Rows; r++ {
			t := r % T
			addTo(a.out[t*C+lo:t*C+hi], dy[r*C+lo:r*C+hi])
		}
	})
}

// addTo adds src to dst element by element.
func addTo[F gemm.Float](dst, src []F) {
	src = src[:len(dst)]
	for j, v := range src {
		dst[j] += v
	}
}
