// Package graph builds the GPT model as one static Gorgonia expression graph.
//
// This file is the whole model, layer by layer, in the order of the seed's
// classes and the reference (gptref.py): embedding, attention, feed-forward,
// transformer block, output and the loss. Everything else in the package is
// plumbing: parameters, constants and the small helpers in ops.go.
package graph

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
)

// Model is a built graph: its inputs, outputs and parameters.
type Model struct {
	Spec   config.Model // the [model] table, with Vocab filled in
	Batch  int
	SeqLen int // positions per sequence: Spec.Context unless built shorter

	G *G.ExprGraph
	// Tokens holds the B·T token ids of a batch, row after row (tensor.Int).
	Tokens *G.Node
	// Targets holds the next-token ids as a one-hot (B·T, V) matrix; nil
	// when the graph was built without the loss.
	Targets *G.Node
	Logits  *G.Node // (B·T, V)
	Loss    *G.Node // scalar mean cross-entropy; nil without the loss
	// Attention holds every block's attention weights, (B·heads, T, T):
	// the reference's (B, heads, T, T) with the first two axes flattened.
	Attention []*G.Node
	Params    []*Param
}

// Options say which graph of a model to emit.
type Options struct {
	Batch int // sequences per run
	// SeqLen is the number of positions per sequence, 0 for the model's
	// context. A shorter graph serves an unmasked model a short prompt: it
	// uses the first SeqLen rows of the position table.
	SeqLen int
	// Loss adds one-hot targets and the mean cross-entropy (training,
	// evaluation); without it the graph ends in the logits (sampling).
	Loss bool
	// Seed draws the initial parameters (PyTorch's default initialisation).
	Seed int64
	Backend
}

// Backend says how a graph computes, not what: the same model, the same
// function and gradients whatever it says. The command line sets it once
// (cmd/gptg) and passes it down to training, evaluation and sampling.
type Backend struct {
	// Unfused composes every layer from Gorgonia primitives (MatMul,
	// Transpose, BroadcastAdd, SoftMax, ...) instead of emitting the fused
	// ops. Both compute the same function and gradients (the tests check
	// both against the reference); the fused graph is several times faster
	// and allocates almost nothing per run. The unfused one stays as the
	// readable specification and for comparison (GPTG_UNFUSED=1).
	Unfused bool
}

// Build emits the graph of spec.
func Build(spec config.Model, o Options) (m *Model, err error) {
	if o.SeqLen == 0 {
		o.SeqLen = spec.Context
	}
	if err := checkSpec(spec, o.Batch); err != nil {
		return nil, err
	}
	if o.SeqLen < 1 || o.SeqLen > spec.Context {
		return nil, fmt.Errorf("sequence length %d outside 1..context %d", o.SeqLen, spec.Context)
	}
	// The Gorgonia API reports shape and type mistakes as errors on every
	// call; G.Must turns them into panics so the layers below read like the
	// reference. A panic here is a bug in this file, never bad user input
	// (checkSpec ran first), and still comes back as an error.
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("building the graph: %v", r)
		}
	}()
	b := newBuilder(spec, o.Batch, o.SeqLen, o.Seed, !o.Unfused)
	m = &Model{Spec: spec, Batch: o.Batch, SeqLen: o.SeqLen, G: b.g}
	batch, T := o.Batch, o.SeqLen

	m.Tokens = G.NewVector(b.g, tensor.Int, G.WithShape(batch*T), G.WithName("tokens"))
	x := b.embedding(m.Tokens)
	for i := 0; i < spec.Blocks; i++ {
		var att *G.Node
		x, att = b.block(fmt.Sprintf("blocks.%d", i), x)
		m.Attention = append(m.Attention, att)
	}
	m.Logits = b.linear("out", x, spec.Embedding, spec.Vocab)
	if o.Loss {
		m.Targets = G.NewMatrix(b.g, b.dt, G.WithShape(batch*T, spec.Vocab), G.WithName("targets"))
		m.Loss = b.crossEntropy(m.Logits, m.Targets)
	}
	m.Params = b.params
	return m, nil
}

// embedding: x = tok[tokens] + pos[0..T), as rows (B·T, C).
func (b *builder) embedding(tokens *G.Node) *G.Node {
	V, T, C := b.spec.Vocab, b.seqLen, b.spec.Embedding
	tok := b.param("tok.weight", normal, V, C)
	pos := b.param("pos.weight", normal, b.spec.Context, C)
	if b.fused {
		return b.fusedEmbedding(tokens, tok, pos) // reads the first T rows of pos itself
	}
	if T < b.spec.Context {
		// Slice drops an axis of length 1; the reshape puts it back.
		pos = G.Must(G.Reshape(G.Must(G.Slice(pos, G.S(0, T))), tensor.Shape{T, C}))
	}
	x := G.Must(G.ByIndices(tok, tokens, 0))
	x = G.Must(G.Reshape(x, tensor.Shape{b.batch, T, C}))
	x = G.Must(G.BroadcastAdd(x, pos, nil, []byte{0}))
	return G.Must(G.Reshape(x, tensor.Shape{b.batch * T, C}))
}

// attention is scaled dot-product self-attention over rows (B·T, C):
// w = softmax(q kᵀ / sqrt(C/heads) + mask), y = w v, then the output
// projection. It returns y and the weights w, (B·heads, T, T).
func (b *builder) attention(name string, x *G.Node) (y, w *G.Node) {
	s := b.spec
	B, T, C, H := b.batch, b.seqLen, s.Embedding, s.Heads
	q, k, v := x, x, x
	if s.QKV {
		q = b.linear(name+".q", x, C, C)
		k = b.linear(name+".k", x, C, C)
		v = b.linear(name+".v", x, C, C)
	}
	scale := 1 / math.Sqrt(float64(C/H))
	if b.fused {
		y, w = b.fusedAttention(q, k, v, scale) // the lines below in one kernel, heads never split
	} else {
		q, k, v = b.splitHeads(q), b.splitHeads(k), b.splitHeads(v) // (B·H, T, C/H)
		scores := G.Must(G.BatchedMatMul(q, k, false, true))
		scores = G.Must(G.Mul(scores, b.scalar(name+".scale", scale)))
		if s.Mask {
			scores = G.Must(G.BroadcastAdd(scores, b.causalMask(name+".mask"), nil, []byte{0}))
		}
		w = b.softmax(scores)
		y = b.mergeHeads(G.Must(G.BatchedMatMul(w, v)), B, T, C)
	}
	if s.OutProj {
		y = b.linear(name+".o", y, C, C)
	}
	return y, w
}

// feedForward: down(act(up(x))), the hidden layer ff_mult times wider.
func (b *builder) feedForward(name string, x *G.Node) *G.Node {
	C, hidden := b.spec.Embedding, b.spec.FFMult*b.spec.Embedding
	h := b.linear(name+".up", x, C, hidden)
	if b.fused {
		return b.linear(name+".down", b.fusedActivation(h), hidden, C)
	}
	if b.spec.Activation == "relu" {
		h = G.Must(G.Rectify(h))
	} else {
		h = b.gelu(name+".gelu", h)
	}
	return b.linear(name+".down", h, hidden, C)
}

// block is one transformer block: attention, then feed-forward, each wrapped
// as the reference's Block.sub wraps it. norm "pre": x + f(norm(x)); "post":
// norm(x + f(x)); without residual the sum is f's output alone.
func (b *builder) block(name string, x *G.Node) (out, att *G.Node) {
	sub := func(x *G.Node, normName string, f func(*G.Node) *G.Node) *G.Node {
		in := x
		if b.spec.Norm == "pre" {
			in = b.layerNorm(normName, x)
		}
		h := f(in)
		if b.spec.Residual {
			h = G.Must(G.Add(x, h))
		}
		if b.spec.Norm == "post" {
			h = b.layerNorm(normName, h)
		}
		return h
	}
	x = sub(x, name+".norm1", func(in *G.Node) *G.Node {
		var y *G.Node
		y, att = b.attention(name+".att", in)
		return y
	})
	x = sub(x, name+".norm2", func(in *G.Node) *G.Node { return b.feedForward(name+".ff", in) })
	return x, att
}

// crossEntropy is the mean over all B·T positions of −log softmax(logits)[target].
func (b *builder) crossEntropy(logits, onehot *G.Node) *G.Node {
	if b.fused {
		return b.fusedCrossEntropy(logits, onehot)
	}
	logp := G.Must(G.LogSoftMax(b.subtractRowMax(logits)))
	picked := G.Must(G.Sum(G.Must(G.HadamardProd(logp, onehot))))
	n := float64(logits.Shape()[0])
	return G.Must(G.Mul(picked, b.scalar("loss.scale", -1/n)))
}
