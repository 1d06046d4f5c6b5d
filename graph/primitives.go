package graph

import (
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// primitives is the emitter that composes every layer from Gorgonia's own
// operations, differentiated by Gorgonia: the readable specification of
// what the fused kernels compute (see emitter.go). The Gorgonia traps it
// steps around are listed in docs/architecture.md and explained in the
// comments below.
type primitives struct {
	g              *G.ExprGraph
	dt             tensor.Dtype
	batch, seqLen  int
	heads, context int
	consts         map[string]*G.Node
	// bf16: the layers' products round their operands and their
	// gradients to bfloat16 (model.dtype "bfloat16", bf16.go).
	bf16 bool
}

func (e *primitives) Embedding(tokens, tok, pos *G.Node) *G.Node {
	T, C := e.seqLen, tok.Shape()[1]
	if T < e.context {
		// A short graph uses the first T rows of the position table. Slice
		// drops an axis of length 1; the reshape puts it back.
		pos = G.Must(G.Reshape(G.Must(G.Slice(pos, G.S(0, T))), tensor.Shape{T, C}))
	}
	x := G.Must(G.ByIndices(tok, tokens, 0))
	x = G.Must(G.Reshape(x, tensor.Shape{e.batch, T, C}))
	x = G.Must(G.BroadcastAdd(x, pos, nil, []byte{0}))
	return G.Must(G.Reshape(x, tensor.Shape{e.batch * T, C}))
}

func (e *primitives) Linear(x, w, bias *G.Node) *G.Node {
	y := e.product(G.Mul, x, G.Must(G.Transpose(w)))
	if bias == nil {
		return y
	}
	return G.Must(G.BroadcastAdd(y, bias, nil, []byte{0}))
}

func (e *primitives) Attention(q, k, v *G.Node, scale float64, causal bool, drop *G.Node) (y, w *G.Node) {
	C := q.Shape()[1]
	q, k, v = e.splitHeads(q), e.splitHeads(k), e.splitHeads(v) // (B·H, T, C/H)
	scores := e.product(batched(false, true), q, k)
	scores = G.Must(G.Mul(scores, e.scalar("attention.scale", scale)))
	if causal {
		scores = G.Must(G.BroadcastAdd(scores, e.causalMask(), nil, []byte{0}))
	}
	w = e.softmax(scores)
	mixed := w
	if drop != nil {
		mixed = e.Dropout(w, drop)
	}
	return e.mergeHeads(e.product(batched(false, false), mixed, v), C), w
}

// ScaledEmbedding gathers the token rows and scales them before adding
// the positions: a learned table has MaxLen rows, of which the graph's
// first T are read; a sinusoidal one is T rows already.
func (e *primitives) ScaledEmbedding(tokens, tok, pos *G.Node, scale float64, learnedPos bool) *G.Node {
	T, C := e.seqLen, tok.Shape()[1]
	if learnedPos {
		pos = G.Must(G.Reshape(G.Must(G.Slice(pos, G.S(0, T))), tensor.Shape{T, C}))
	}
	x := G.Must(G.ByIndices(tok, tokens, 0))
	x = G.Must(G.Mul(x, e.scalar("embedding.scale", scale)))
	x = G.Must(G.Reshape(x, tensor.Shape{e.batch, T, C}))
	x = G.Must(G.BroadcastAdd(x, pos, nil, []byte{0}))
	return G.Must(G.Reshape(x, tensor.Shape{e.batch * T, C}))
}

// MaskedAttention adds the key mask (B, T_k) to the scores
// (B·H, T_q, T_k), broadcast over the heads and the queries.
func (e *primitives) MaskedAttention(q, k, v, keyMask *G.Node, scale float64) (y, w *G.Node) {
	C := q.Shape()[1]
	q, k, v = e.splitHeads(q), e.splitHeads(k), e.splitHeads(v) // (B·H, T, C/H)
	scores := e.product(batched(false, true), q, k)
	scores = G.Must(G.Mul(scores, e.scalar("attention.scale", scale)))
	BH, Tq, Tk := scores.Shape()[0], scores.Shape()[1], scores.Shape()[2]
	s4 := G.Must(G.Reshape(scores, tensor.Shape{e.batch, BH / e.batch, Tq, Tk}))
	s4 = G.Must(G.BroadcastAdd(s4, keyMask, nil, []byte{1, 2}))
	scores = G.Must(G.Reshape(s4, tensor.Shape{BH, Tq, Tk}))
	w = e.softmax(scores)
	return e.mergeHeads(e.product(batched(false, false), w, v), C), w
}

// embeddingAt gathers one row of each table; ByIndices keeps the axis of
// length 1, (1, C).
func (e *primitives) EmbeddingAt(token, position, tok, pos *G.Node) *G.Node {
	return G.Must(G.Add(G.Must(G.ByIndices(tok, token, 0)), G.Must(G.ByIndices(pos, position, 0))))
}

// ScaledEmbeddingAt gathers one row of each table per row of tokens;
// ByIndices keeps the axis of length 1 of a single row, (1, C).
func (e *primitives) ScaledEmbeddingAt(tokens, positions, tok, pos *G.Node, scale float64) *G.Node {
	x := G.Must(G.ByIndices(tok, tokens, 0))
	x = G.Must(G.Mul(x, e.scalar("embedding.scale", scale)))
	return G.Must(G.Add(x, G.Must(G.ByIndices(pos, positions, 0))))
}

// cachedAttention appends the new key and value to the caches as their
// last row and masks the invalid cached rows with the additive mask row,
// so the cache rows past the count take no weight (their content is
// whatever an earlier run left there, always finite).
// With a batch of B sequences each sequence's caches (context rows) get
// its own new row.
func (e *primitives) CachedAttention(q, k, v, keys, values, _, mask *G.Node, scale float64) *G.Node {
	B, C := q.Shape()[0], q.Shape()[1]
	T := keys.Shape()[0] / B
	appendRow := func(cache, row *G.Node) *G.Node {
		if B == 1 {
			return G.Must(G.Concat(0, cache, row)) // (context+1, C)
		}
		cache = G.Must(G.Reshape(cache, tensor.Shape{B, T, C}))
		row = G.Must(G.Reshape(row, tensor.Shape{B, 1, C}))
		return G.Must(G.Reshape(G.Must(G.Concat(1, cache, row)), tensor.Shape{B * (T + 1), C}))
	}
	keys, values = appendRow(keys, k), appendRow(values, v)
	q, keys, values = e.splitHeads(q), e.splitHeads(keys), e.splitHeads(values) // (B·H, ·, C/H)
	scores := e.product(batched(false, true), q, keys)                          // (B·H, 1, context+1)
	scores = G.Must(G.Mul(scores, e.scalar("attention.scale", scale)))
	scores = G.Must(G.BroadcastAdd(scores, mask, nil, []byte{0}))
	return e.mergeHeads(e.product(batched(false, false), e.softmax(scores), values), C)
}

func (e *primitives) Activation(x *G.Node, kind string) *G.Node {
	switch kind {
	case "relu":
		return G.Must(G.Rectify(x))
	case "gelu_exact":
		return e.geluExact(x)
	}
	return e.gelu(x)
}

func (e *primitives) Dropout(x, mask *G.Node) *G.Node {
	return G.Must(G.HadamardProd(x, mask))
}

// layerNorm is built from Sqrt and a divide because InverseSqrt's gradient
// is wrong in Gorgonia v0.9.18.
func (e *primitives) LayerNorm(x, w, bias *G.Node, eps float64) *G.Node {
	mean := G.Must(G.Mean(x, 1))
	xc := G.Must(G.BroadcastSub(x, mean, nil, []byte{1}))
	variance := G.Must(G.Mean(G.Must(G.Square(xc)), 1))
	std := G.Must(G.Sqrt(G.Must(G.Add(variance, e.scalar("layernorm.eps", eps)))))
	xn := G.Must(G.BroadcastHadamardDiv(xc, std, nil, []byte{1}))
	y := G.Must(G.BroadcastHadamardProd(xn, w, nil, []byte{0}))
	if bias == nil {
		return y
	}
	return G.Must(G.BroadcastAdd(y, bias, nil, []byte{0}))
}

// CrossEntropy gathers each row's log-probability of its target from the
// log-probabilities flattened to one column (N·V, 1), at r·V + target
// (targetIndex): ByIndices along the last axis differentiates wrongly
// (a Gorgonia v0.9.18 trap, docs/architecture.md), along the first it is
// right.
func (e *primitives) CrossEntropy(logits, targets *G.Node) *G.Node {
	N, V := logits.Shape()[0], logits.Shape()[1]
	logp := G.Must(G.LogSoftMax(e.subtractRowMax(logits)))
	column := G.Must(G.Reshape(logp, tensor.Shape{N * V, 1}))
	index := G.Must(G.ApplyOp(targetIndex{vocab: V}, targets))
	picked := G.Must(G.Sum(G.Must(G.ByIndices(column, index, 0))))
	return G.Must(G.Mul(picked, e.scalar("loss.scale", -1/float64(N))))
}

// OutputLoss is the output layer, then the label-smoothed cross-entropy
// averaged over the targets that are not ignore, PyTorch's
// cross_entropy(ignore_index=ignore, label_smoothing=ε): per target
// (1−ε)·(−log p[target]) + ε·mean over the vocabulary of (−log p[v]),
// weighted by 1/(number of counted targets) (targetWeights). The target's
// log-probability is gathered as CrossEntropy gathers it.
func (e *primitives) OutputLoss(y, w, bias, targets *G.Node, eps float64, ignore int) *G.Node {
	logits := e.Linear(y, w, bias)
	N, V := logits.Shape()[0], logits.Shape()[1]
	index := G.Must(G.ApplyOp(targetIndex{vocab: V}, targets))
	weight := G.Must(G.ApplyOp(targetWeights{ignore: ignore, dt: e.dt}, targets))
	logp := G.Must(G.LogSoftMax(e.subtractRowMax(logits)))
	column := G.Must(G.Reshape(logp, tensor.Shape{N * V, 1}))
	picked := G.Must(G.Reshape(G.Must(G.ByIndices(column, index, 0)), tensor.Shape{N}))
	perRow := G.Must(G.Mul(picked, e.scalar("loss.target", 1-eps)))
	if eps > 0 {
		mean := G.Must(G.Mul(G.Must(G.Sum(logp, 1)), e.scalar("loss.smooth", eps/float64(V))))
		perRow = G.Must(G.Add(perRow, mean))
	}
	total := G.Must(G.Sum(G.Must(G.HadamardProd(perRow, weight))))
	return G.Must(G.Neg(total))
}

// splitHeads turns rows (B·T, C) into per-head sequences (B·H, T, C/H).
//
// It transposes even for one head, where a reshape alone would do: Gorgonia's
// Reshape returns a view sharing its input's memory, which the register
// allocator does not know about. When the input has another consumer that
// works in place (the residual Add of qkv = false) it overwrites the memory
// the view still needs in the backward pass, and the gradients come out
// silently wrong (TestFiniteDifferences catches it). Transpose copies.
func (e *primitives) splitHeads(x *G.Node) *G.Node {
	B, C, H := e.batch, x.Shape()[1], e.heads
	T := x.Shape()[0] / B
	x = G.Must(G.Reshape(x, tensor.Shape{B, T, H, C / H}))
	x = G.Must(G.Transpose(x, 0, 2, 1, 3))
	return G.Must(G.Reshape(x, tensor.Shape{B * H, T, C / H}))
}

// mergeHeads is splitHeads backwards: (B·H, T, C/H) to rows (B·T, C).
func (e *primitives) mergeHeads(y *G.Node, C int) *G.Node {
	B, T, H := e.batch, y.Shape()[1], e.heads
	y = G.Must(G.Reshape(y, tensor.Shape{B, H, T, C / H}))
	y = G.Must(G.Transpose(y, 0, 2, 1, 3))
	return G.Must(G.Reshape(y, tensor.Shape{B * T, C}))
}

// scalar is a named constant. Gorgonia merges constants that share a name
// (and names unnamed ones by their printed value), so every distinct
// constant gets its own name and repeated requests reuse the node.
func (e *primitives) scalar(name string, v float64) *G.Node {
	if n, ok := e.consts[name]; ok {
		return n
	}
	var n *G.Node
	if e.dt == tensor.Float64 {
		n = G.NewConstant(v, G.WithName(name))
	} else {
		n = G.NewConstant(float32(v), G.WithName(name))
	}
	e.consts[name] = n
	return n
}

// causalMask is the (T, T) constant added to the scores: 0 where a position
// may look (itself and earlier), −1e9 above the diagonal. Adding −1e9 rather
// than multiplying by 0/1 keeps exp() of masked scores at 0; −Inf would give NaN.
func (e *primitives) causalMask() *G.Node {
	if n, ok := e.consts["mask"]; ok {
		return n
	}
	T := e.seqLen
	data := make([]float64, T*T)
	for i := 0; i < T; i++ {
		for j := i + 1; j < T; j++ {
			data[i*T+j] = -1e9
		}
	}
	// A graph-owned matrix rather than a constant: broadcasting reshapes its
	// operand inside the graph, which a graph-less constant cannot do.
	n := G.NewMatrix(e.g, e.dt, G.WithShape(T, T), G.WithName("causal_mask"), G.WithValue(dense(e.dt, data, T, T)))
	e.consts["mask"] = n
	return n
}

// subtractRowMax shifts every row so its largest entry is 0. Gorgonia's
// SoftMax seeds each row's running max with the tensor's first element, which
// overflows float32 when rows differ by ~88 (a masked −1e9 row does): after
// the shift that seed can no longer exceed the true row max. The shift
// changes no softmax value and, in exact arithmetic, no gradient.
func (e *primitives) subtractRowMax(x *G.Node) *G.Node {
	last := x.Dims() - 1
	m := G.Must(G.Max(x, last))
	return G.Must(G.BroadcastSub(x, m, nil, []byte{byte(last)}))
}

// softmax over the last axis.
func (e *primitives) softmax(x *G.Node) *G.Node {
	return G.Must(G.SoftMax(e.subtractRowMax(x)))
}

// gelu is GELU in its tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func (e *primitives) gelu(x *G.Node) *G.Node {
	inner := G.Must(G.Add(x, G.Must(G.Mul(G.Must(G.Cube(x)), e.scalar("gelu.a", 0.044715)))))
	t := G.Must(G.Tanh(G.Must(G.Mul(inner, e.scalar("gelu.c", math.Sqrt(2/math.Pi))))))
	onePlus := G.Must(G.Add(t, e.scalar("gelu.one", 1)))
	return G.Must(G.Mul(G.Must(G.HadamardProd(x, onePlus)), e.scalar("gelu.half", 0.5)))
}
