package graph

import (
	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph/fused"
)

// An Emitter turns one layer, given its inputs and its parameters, into
// nodes of the graph. The layers (layers.go) and the two models built
// from them (model.go, translate.go) say what is computed and create the
// parameters; an emitter decides how the graph computes it. Every layer
// of either model goes through these methods. There are
// two, and they compute the same function and the same gradients (the
// golden, finite-difference and fused-vs-unfused tests hold both to that):
//
//   - fused.Emitter (package graph/fused): each layer is one node running
//     a hand-written kernel, with hand-written backward kernels beside it,
//     llm.c style. This is the fast path and the default.
//   - primitives (primitives.go): each layer composed from Gorgonia's own
//     operations (MatMul, SoftMax, BroadcastAdd, …), differentiated by
//     Gorgonia. Slow, but every step is visible; Backend.Unfused
//     (GPTG_UNFUSED=1 on the command line) selects it.
//
// A new layer is a method here, its composition in primitives.go, its
// kernels in package fused, and a fused-vs-unfused test (fused_test.go).
//
// Activations are rows (B·T, C): one row per position of every sequence.
type Emitter interface {
	// Embedding: row r is tok[tokens[r]] + pos[r mod T].
	Embedding(tokens, tok, pos *G.Node) *G.Node
	// ScaledEmbedding: the encoder–decoder's, row r tok[tokens[r]]·scale +
	// pos[r mod T], the product rounded before the sum. learnedPos says
	// whether pos is a parameter (a learned table, of which the first T
	// rows are read) or a constant (the sinusoidal table, T rows).
	ScaledEmbedding(tokens, tok, pos *G.Node, scale float64, learnedPos bool) *G.Node
	// Linear: x·Wᵀ + bias on rows, W stored [out, in] as nn.Linear's;
	// bias nil: none.
	Linear(x, w, bias *G.Node) *G.Node
	// Attention: weights = softmax(q·kᵀ·scale, causally masked when
	// causal), per sequence and head, (B·heads, T, T); y = weights·v as
	// rows with the heads side by side. A non-nil drop is a dropout mask
	// of the weights' shape: y = (weights⊙drop)·v, weights returned undropped.
	Attention(q, k, v *G.Node, scale float64, causal bool, drop *G.Node) (y, weights *G.Node)
	// MaskedAttention: the encoder–decoder's attention over a padded
	// source, q rows (B·T_q, C), k and v rows (B·T_k, C): weights =
	// softmax(q·kᵀ·scale + keyMask[b]) per sequence b and head, keyMask
	// (B, T_k) holding 0 at a word and MaskValue at PAD; (B·heads, T_q,
	// T_k). y = weights·v as rows (B·T_q, C). The encoder's
	// self-attention (T_q = T_k) and the decoder's cross-attention.
	MaskedAttention(q, k, v, keyMask *G.Node, scale float64) (y, weights *G.Node)
	// Activation: "gelu" (tanh form), "gelu_exact" (erf) or "relu",
	// element by element.
	Activation(x *G.Node, kind string) *G.Node
	// LayerNorm: (x − mean)/√(var + eps)·w + bias per row; bias nil: none.
	LayerNorm(x, w, bias *G.Node, eps float64) *G.Node
	// Dropout: x⊙mask, the mask an input of x's shape filled before each
	// run with 0 or 1/(1 − p).
	Dropout(x, mask *G.Node) *G.Node
	// CrossEntropy: the mean over rows of −log softmax(logits)[target],
	// targets the (rows) target ids, a tensor.Int vector.
	CrossEntropy(logits, targets *G.Node) *G.Node
	// OutputLoss: the encoder–decoder's output layer and loss in one,
	// logits = y·Wᵀ + bias (bias nil: none), then their label-smoothed
	// cross-entropy averaged over the targets other than ignore (PAD):
	// per target (1−ε)·(−log p[target]) + ε·mean over the vocabulary of
	// (−log p[v]). A loss graph needs no logits of its own: the fused
	// emitter computes those of the counted targets only.
	OutputLoss(y, w, bias, targets *G.Node, eps float64, ignore int) *G.Node

	// The cached graphs (cached.go, translatestep.go) run one position
	// per sequence at a time, forward only; these layers differ from the
	// window's.

	// EmbeddingAt: the row (1, C) tok[token] + pos[position]; token and
	// position are one-element tensor.Int vectors.
	EmbeddingAt(token, position, tok, pos *G.Node) *G.Node
	// ScaledEmbeddingAt: the translation decoder's step graph, one
	// position per sequence: rows (R, C), row r tok[tokens[r]]·scale +
	// pos[positions[r]], the product rounded before the sum; tokens and
	// positions are R-element tensor.Int vectors.
	ScaledEmbeddingAt(tokens, positions, tok, pos *G.Node, scale float64) *G.Node
	// CachedAttention: the attention of one new position (q, k, v rows
	// (1, C)) over itself and the positions before it, whose keys and
	// values are the first rows of keys and values (context, C). Which rows
	// are valid is given twice, for each emitter to read what suits it:
	// position (one-element tensor.Int) counts them, and mask (1,
	// context+1) is the additive row over [cached rows…, the new
	// position]: 0 for the valid rows and the new position, −1e9 for the
	// others. Returns y (1, C), the heads side by side. The translation
	// decoder's step graph runs B sequences at once: q, k, v (B, C),
	// caches (B·context, C), y (B, C), every sequence at the same position.
	CachedAttention(q, k, v, keys, values, position, mask *G.Node, scale float64) *G.Node
}

// Both emitters implement Emitter.
var (
	_ Emitter = (*fused.Emitter)(nil)
	_ Emitter = (*primitives)(nil)
)
