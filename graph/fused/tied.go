package fused

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// A tied embedding's table feeds two ops, the lookup and the output layer,
// and G.Grad sums their two contributions to its gradient with Gorgonia's
// addition: two (V, C) buffers, where the output layer's ∂W could take the
// lookup's in place (GPT-2 124M: 147 MiB more per training graph).
//
// TiedEmbedding is the lookup without a gradient for the table, so that
// G.Grad gives the output layer's ∂W alone; TieGradient then adds the
// lookup's contribution into that ∂W in place, with the bits of the sum it
// replaces: each row's sum over its positions in order (as
// embeddingBackwardTok), then one addition per entry, and a row no
// position reads gets + 0 (which turns −0 into +0, as the sum did).

// tiedState is what the lookup and the gradient's sum share: the lookup's
// output gradient (set when G.Grad differentiates the lookup) and its ids,
// and the sum kernel's buffers.
type tiedState struct {
	dy, tokens *G.Node
	slot       []int // per vocabulary id: its row in sums, or −1
	order      []int // the ids of this run, in order of first appearance
	sums       any   // []F (rows, C): each id's sum of its rows of dy
}

// TiedEmbedding is Embedding whose gradient leaves out the token table:
// the table's gradient is TieGradient's. One per graph.
func (f *Emitter) TiedEmbedding(tokens, tok, pos *G.Node) *G.Node {
	p := f.dims
	shape := tensor.Shape{p.Rows, p.Width}
	op := f.newOp("Embedding", p, kernelOf(embeddingForward[float32], embeddingForward[float64]),
		[]argKind{2, 2, intVector}, shape, false, true, false)
	f.tied = &tiedState{tokens: tokens}
	op.tied = f.tied
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		op.tied.dy = dy
		dPos, err := op.derive("EmbeddingPosGrad", kernelOf(embeddingBackwardPos[float32], embeddingBackwardPos[float64]),
			rank(2), in[1].Shape().Clone(), dy)
		return G.Nodes{nil, dPos, nil}, err
	}
	return G.Must(G.ApplyOp(op, tok, pos, tokens))
}

// TieGradient returns the token table's whole gradient: grad, the output
// layer's ∂W as G.Grad gave it, with the lookup's contribution added in
// place. Without a TiedEmbedding in the graph it returns grad.
func (f *Emitter) TieGradient(grad *G.Node) (*G.Node, error) {
	if f.tied == nil {
		return grad, nil
	}
	if f.tied.dy == nil {
		return nil, fmt.Errorf("tied embedding: the gradient does not reach the lookup")
	}
	op := f.newOp("TiedEmbeddingGrad", f.dims, kernelOf(tiedEmbeddingGrad[float32], tiedEmbeddingGrad[float64]),
		[]argKind{2, 2, intVector}, grad.Shape().Clone())
	op.tied, op.inPlace = f.tied, true
	return G.ApplyOp(op, grad, f.tied.dy, f.tied.tokens)
}

// tiedEmbeddingGrad: out (= in[0], the output layer's ∂W, (V, C)) +=
// Σ over rows r with ids[r] = v of dy[r], row v. in: ∂W, dy (rows, C).
// The team splits the columns, as embeddingBackwardTok.
func tiedEmbeddingGrad[F gemm.Float](a *args[F]) {
	st, dy, C := a.tied, a.in[1], a.p.Width
	V := len(a.out) / C
	if len(st.slot) != V {
		st.slot = make([]int, V)
		for i := range st.slot {
			st.slot[i] = -1
		}
	}
	st.order = st.order[:0]
	for _, id := range a.ids {
		if st.slot[id] < 0 {
			st.slot[id] = len(st.order)
			st.order = append(st.order, id)
		}
	}
	sums := bufferOf[F](&st.sums, len(a.ids)*C)
	rows(a, C, len(dy)+len(a.out), func(lo, hi int) {
		for s := range st.order {
			clear(sums[s*C+lo : s*C+hi])
		}
		for r, id := range a.ids {
			s := st.slot[id]
			addTo(sums[s*C+lo:s*C+hi], dy[r*C+lo:r*C+hi])
		}
		for v := range V {
			row := a.out[v*C+lo : v*C+hi]
			if s := st.slot[v]; s >= 0 {
				addTo(row, sums[s*C+lo:s*C+hi])
				continue
			}
			for j, x := range row {
				if x == 0 {
					row[j] = 0 // x + 0
				}
			}
		}
	})
	for _, id := range st.order {
		st.slot[id] = -1
	}
}
