package graph

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The fused path: what a graph compiler would emit for the layers of
// model.go. Each layer is one node (a fusedOp running one kernel of
// kernels.go) instead of a dozen primitive ones, and its backward is a
// few more, emitted by its SymDiff: no transposes, no broadcast copies, no
// reshapes, and no allocation after the first run. The graph is still one
// static Gorgonia graph differentiated by gorgonia.Grad; Options.Unfused
// emits the composition from primitives instead, and the tests check both
// against the reference and each fused layer against its composition.
//
// Parameters are created by the shared code in model.go and ops.go before
// either path is chosen, so both paths draw the same initial values.

// newOp makes a forward op; wrt says which inputs it is differentiable
// with respect to (the caller sets its grad).
func (b *builder) newOp(kind string, p opParams, k kernel, ins []argKind, shape tensor.Shape, wrt ...bool) *fusedOp {
	return &fusedOp{kind: kind, p: p, ins: ins, shape: shape, dt: b.dt, ws: b.ws, run: k, wrt: wrt}
}

// rank lists the dimensions of float inputs as their kinds.
func rank(dims ...int) []argKind {
	k := make([]argKind, len(dims))
	for i, d := range dims {
		k[i] = argKind(d)
	}
	return k
}

// fusedEmbedding: rows (B·T, C) = tok[tokens] + pos[0..T).
func (b *builder) fusedEmbedding(tokens, tok, pos *G.Node) *G.Node {
	p := b.opParams()
	shape := tensor.Shape{p.Rows, p.Width}
	op := b.newOp("Embedding", p, kernelOf(embedForward[float32], embedForward[float64]),
		[]argKind{2, 2, intVector}, shape, true, true, false)
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		dTok, err := op.derive("EmbeddingTokGrad", kernelOf(embedTokGrad[float32], embedTokGrad[float64]),
			[]argKind{2, intVector}, in[0].Shape().Clone(), dy, in[2])
		if err != nil {
			return nil, err
		}
		dPos, err := op.derive("EmbeddingPosGrad", kernelOf(embedPosGrad[float32], embedPosGrad[float64]),
			rank(2), in[1].Shape().Clone(), dy)
		return G.Nodes{dTok, dPos, nil}, err
	}
	return G.Must(G.ApplyOp(op, tok, pos, tokens))
}

// fusedLinear: y = x·Wᵀ + b on rows, W stored [out, in].
func (b *builder) fusedLinear(x, w, bias *G.Node, in, out int) *G.Node {
	p := b.opParams()
	p.In, p.Out = in, out
	op := b.newOp("Linear", p, kernelOf(linearForward[float32], linearForward[float64]),
		rank(2, 2, 1), tensor.Shape{p.Rows, out}, true, true, true)
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		x, w := in[0], in[1]
		dx, err := op.derive("LinearGradX", kernelOf(linearGradX[float32], linearGradX[float64]),
			rank(2, 2), x.Shape().Clone(), dy, w)
		if err != nil {
			return nil, err
		}
		dw, err := op.derive("LinearGradW", kernelOf(linearGradW[float32], linearGradW[float64]),
			rank(2, 2), w.Shape().Clone(), dy, x)
		if err != nil {
			return nil, err
		}
		db, err := op.biasGrad(in[2], dy)
		return G.Nodes{dx, dw, db}, err
	}
	return G.Must(G.ApplyOp(op, x, w, bias))
}

// fusedAttention: the weights w = softmax(q·kᵀ·scale + mask), (B·H, T, T),
// one node so that Model.Attention can read them, and y = w·v, rows
// (B·T, C) with the heads side by side, as mergeHeads leaves them.
func (b *builder) fusedAttention(q, k, v *G.Node, scale float64) (y, w *G.Node) {
	p := b.opParams()
	p.Scale, p.Mask = scale, b.spec.Mask
	T := p.Seq
	weights := tensor.Shape{p.Batch * p.Heads, T, T}
	rows := tensor.Shape{p.Rows, p.Width}

	wOp := b.newOp("AttentionWeights", p, kernelOf(attnWeights[float32], attnWeights[float64]),
		rank(2, 2), weights, true, true)
	wOp.grad = func(op *fusedOp, in G.Nodes, w, dw *G.Node) (G.Nodes, error) {
		ds, err := op.derive("AttentionScoreGrad", kernelOf(attnScoreGrad[float32], attnScoreGrad[float64]),
			rank(3, 3), weights.Clone(), w, dw)
		if err != nil {
			return nil, err
		}
		dq, err := op.derive("AttentionQGrad", kernelOf(attnQGrad[float32], attnQGrad[float64]),
			rank(3, 2), rows.Clone(), ds, in[1])
		if err != nil {
			return nil, err
		}
		dk, err := op.derive("AttentionKGrad", kernelOf(attnKGrad[float32], attnKGrad[float64]),
			rank(3, 2), rows.Clone(), ds, in[0])
		return G.Nodes{dq, dk}, err
	}
	w = G.Must(G.ApplyOp(wOp, q, k))

	yOp := b.newOp("AttentionMix", p, kernelOf(attnMix[float32], attnMix[float64]),
		rank(3, 2), rows, true, true)
	yOp.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		dw, err := op.derive("AttentionMixGradW", kernelOf(attnMixGradW[float32], attnMixGradW[float64]),
			rank(2, 2), weights.Clone(), dy, in[1])
		if err != nil {
			return nil, err
		}
		dv, err := op.derive("AttentionMixGradV", kernelOf(attnMixGradV[float32], attnMixGradV[float64]),
			rank(3, 2), rows.Clone(), in[0], dy)
		return G.Nodes{dw, dv}, err
	}
	y = G.Must(G.ApplyOp(yOp, w, v))
	return y, w
}

// fusedLayerNorm: (x − mean)/√(var + eps)·w + b per row.
func (b *builder) fusedLayerNorm(x, w, bias *G.Node, eps float64) *G.Node {
	p := b.opParams()
	p.Eps = eps
	op := b.newOp("LayerNorm", p, kernelOf(layerNormForward[float32], layerNormForward[float64]),
		rank(2, 1, 1), x.Shape().Clone(), true, true, true)
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		x, w := in[0], in[1]
		dx, err := op.derive("LayerNormGradX", kernelOf(layerNormGradX[float32], layerNormGradX[float64]),
			rank(2, 1, 2), x.Shape().Clone(), x, w, dy)
		if err != nil {
			return nil, err
		}
		dw, err := op.derive("LayerNormGradW", kernelOf(layerNormGradW[float32], layerNormGradW[float64]),
			rank(2, 2), w.Shape().Clone(), x, dy)
		if err != nil {
			return nil, err
		}
		db, err := op.biasGrad(in[2], dy)
		return G.Nodes{dx, dw, db}, err
	}
	return G.Must(G.ApplyOp(op, x, w, bias))
}

// biasGrad is the gradient of a bias added to every row (Linear,
// LayerNorm): the rows of dy summed.
func (op *fusedOp) biasGrad(bias, dy *G.Node) (*G.Node, error) {
	return op.derive("ColumnSum", kernelOf(columnSum[float32], columnSum[float64]),
		rank(2), bias.Shape().Clone(), dy)
}

// fusedActivation: GELU (tanh form) or ReLU, element by element.
func (b *builder) fusedActivation(x *G.Node) *G.Node {
	fwd, grad, kind := kernelOf(geluForward32, geluForward64), kernelOf(geluGrad32, geluGrad64), "GELU"
	if b.spec.Activation == "relu" {
		fwd, grad, kind = kernelOf(reluForward[float32], reluForward[float64]), kernelOf(reluGrad[float32], reluGrad[float64]), "ReLU"
	}
	dims := argKind(x.Dims())
	op := b.newOp(kind, b.opParams(), fwd, []argKind{dims}, x.Shape().Clone(), true)
	op.grad = func(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		dx, err := op.derive(kind+"Grad", grad, []argKind{dims, dims}, in[0].Shape().Clone(), in[0], dy)
		return G.Nodes{dx}, err
	}
	return G.Must(G.ApplyOp(op, x))
}

// fusedCrossEntropy: the mean over rows of −Σ_j targets·log softmax(logits).
func (b *builder) fusedCrossEntropy(logits, targets *G.Node) *G.Node {
	p := b.opParams()
	op := b.newOp("CrossEntropy", p, kernelOf(crossEntropy[float32], crossEntropy[float64]),
		rank(2, 2), nil, true, false)
	op.grad = func(op *fusedOp, in G.Nodes, _, g *G.Node) (G.Nodes, error) {
		dx, err := op.derive("CrossEntropyGrad", kernelOf(crossEntropyGrad[float32], crossEntropyGrad[float64]),
			rank(2, 2, 0), in[0].Shape().Clone(), in[0], in[1], g)
		return G.Nodes{dx, nil}, err
	}
	return G.Must(G.ApplyOp(op, logits, targets))
}

// opParams are the sizes every fused op of this graph shares.
func (b *builder) opParams() opParams {
	s := b.spec
	return opParams{
		Rows: b.batch * b.seqLen, Batch: b.batch, Seq: b.seqLen, Width: s.Embedding,
		Heads: s.Heads, Vocab: s.Vocab, Context: s.Context,
	}
}
