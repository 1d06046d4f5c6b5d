package graph

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the layers both models are built from: the GPT
// (model.go) and the encoder–decoder (translate.go) call the same
// functions, each with its own settings (layers). What each layer
// computes, operation by operation, is its emitter's (emitter.go;
// primitives.go spells the maths out in Gorgonia's own operations).

// layers are a model's settings of the shared layers. The GPT takes them
// from its [model] table; the encoder–decoder has the paper's residual
// connections, biases, Q/K/V and output projections, with its own norm,
// activation and sizes.
type layers struct {
	width, heads int // C, and H heads of C/H
	ffHidden     int // the feed-forward layer's hidden width
	activation   string
	norm         string // where a sublayer's layer norm goes: "pre", "post" or "none"
	residual     bool   // a sublayer adds its input to its output
	bias         bool   // every linear layer and layer norm has a bias
	// init is the linear layers' initialisation: "torch" (nn.Linear's),
	// "gpt2" (nanoGPT's, which reads blocks) or "xavier" (nn.Transformer's).
	init        string
	blocks      int
	qkv         bool // attention projects its queries, keys and values (else it reads x itself)
	outProj     bool // attention ends in an output projection
	dropWeights bool // dropout on the attention weights (nanoGPT's attn_dropout)
}

// linear is nn.Linear on rows: y = x·Wᵀ + b, W stored [out, in], no b
// without biases.
func (b *builder) linear(name string, x *G.Node, in, out int, endsBranch bool) *G.Node {
	w, bias := b.linearParams(name, in, out, endsBranch)
	return b.op.Linear(x, w, bias)
}

// linearParams creates a linear layer's weight (out, in) and bias (nil
// without biases). init "torch" draws both U(±1/√in), nn.Linear's;
// "gpt2" the weight N(0, 0.02), or N(0, 0.02/√(2·blocks)) for a
// projection that ends a residual branch (endsBranch), and the bias 0;
// "xavier" the weight U(±√(6/(in+out))) and the bias 0.
func (b *builder) linearParams(name string, in, out int, endsBranch bool) (w, bias *G.Node) {
	wInit, bInit := uniform(in), uniform(in)
	switch b.init {
	case "gpt2":
		std := 0.02
		if endsBranch {
			std = 0.02 / math.Sqrt(float64(2*b.blocks))
		}
		wInit, bInit = gaussian(std), zeros
	case "xavier":
		wInit, bInit = xavier(in, out), zeros
	}
	w = b.param(name+".weight", wInit, out, in)
	if b.bias {
		bias = b.param(name+".bias", bInit, out)
	}
	return w, bias
}

// layerNorm is nn.LayerNorm over each row: mean 0, variance 1 (biased, eps
// 1e-5), then a scale and (with biases) a shift per channel.
func (b *builder) layerNorm(name string, x *G.Node) *G.Node {
	w := b.param(name+".weight", ones, b.width)
	var bias *G.Node
	if b.bias {
		bias = b.param(name+".bias", zeros, b.width)
	}
	return b.op.LayerNorm(x, w, bias, 1e-5)
}

// feedForward: down(act(up(x))), the hidden layer ffHidden wide.
func (b *builder) feedForward(name string, x *G.Node) *G.Node {
	C, hidden := b.width, b.ffHidden
	h := b.linear(name+".up", x, C, hidden, false)
	h = b.op.Activation(h, b.activation)
	return b.linear(name+".down", h, hidden, C, true)
}

// dropout zeroes each entry of x with probability p, where nanoGPT and
// the paper do: after the embedding sum, at the end of each residual
// branch and (GPT) on the attention weights. The survivors are scaled by
// 1/(1 − p) so the expected value is unchanged (nn.Dropout). Off, it
// returns x.
func (b *builder) dropout(x *G.Node) *G.Node {
	if mask := b.dropoutMask(x.Shape()); mask != nil {
		return b.op.Dropout(x, mask)
	}
	return x
}

// dropoutMask adds a mask input of the given shape, or returns nil when
// this graph has no dropout.
func (b *builder) dropoutMask(shape tensor.Shape) *G.Node {
	if b.dropoutP == 0 {
		return nil
	}
	name := fmt.Sprintf("dropout.%d", len(b.masks))
	ones := make([]float64, shape.TotalSize())
	for i := range ones {
		ones[i] = 1
	}
	mask := G.NewTensor(b.g, b.dt, len(shape), G.WithShape(shape...), G.WithName(name),
		G.WithValue(dense(b.dt, ones, shape...)))
	b.masks = append(b.masks, mask)
	return mask
}

// sublayer wraps a sublayer f (attention, feed-forward) with its residual
// connection, its layer norm and dropout at the end of the branch: norm
// "pre" x + drop(f(norm(x))) (GPT-2's), "post" norm(x + drop(f(x))) (the
// paper's), "none" x + drop(f(x)); without residual the sum is the
// branch alone. normName names the layer norm's parameters.
func (b *builder) sublayer(normName string, x *G.Node, f func(*G.Node) *G.Node) *G.Node {
	in := x
	if b.norm == "pre" {
		in = b.layerNorm(normName, x)
	}
	h := b.dropout(f(in)) // the end of the branch
	if b.residual {
		// h + x, not x + h: Gorgonia may add in place into its first
		// operand, and only h is dead after the sum (x is read again by
		// the backward pass). In this order the step allocates nothing;
		// in the other, a new (B·T, C) matrix per block.
		h = G.Must(G.Add(h, x))
	}
	if b.norm == "post" {
		h = b.layerNorm(normName, h)
	}
	return h
}

// block is a transformer block, the GPT's and the encoder's: attention,
// then feed-forward, each a sublayer. attend is the attention layer (its
// parameters named name+".att"): causal self-attention over the window,
// one position against a key/value cache (cached.go), or the encoder's
// self-attention over a padded source.
func (b *builder) block(name string, x *G.Node, attend func(name string, x *G.Node) *G.Node) *G.Node {
	x = b.sublayer(name+".norm1", x, func(h *G.Node) *G.Node { return attend(name+".att", h) })
	return b.sublayer(name+".norm2", x, func(h *G.Node) *G.Node { return b.feedForward(name+".ff", h) })
}

// Attention, in its three uses. Each is multi-head scaled dot-product
// attention, w = softmax(q·kᵀ/√(C/H) + mask) per sequence and head, y =
// w·v, then the output projection; they differ in where the keys and
// values come from and in what the mask hides.

// selfAttention: every row of x looks at the rows of its own sequence.
// causal: at itself and the positions before it (the GPT's, the
// decoder's); with a padding mask (B, T), at every position but the
// padding (the encoder's); neither: at every position (a GPT with mask =
// false). It returns y and the weights w, (B·heads, T, T).
func (b *builder) selfAttention(name string, x *G.Node, causal bool, padding *G.Node) (y, w *G.Node) {
	q, k, v := b.projections(name, x)
	if padding != nil {
		y, w = b.op.MaskedAttention(q, k, v, padding, b.attentionScale())
	} else {
		var drop *G.Node
		if b.dropWeights {
			drop = b.dropoutMask(tensor.Shape{b.batch * b.heads, b.seqLen, b.seqLen})
		}
		y, w = b.op.Attention(q, k, v, b.attentionScale(), causal, drop)
	}
	return b.outProjection(name, y), w
}

// cachedSelfAttention is causal self-attention for one new position per
// sequence: its query against the keys of the earlier positions, which
// earlier runs computed and c caches, and its own key; its weights over
// their values and its own. count holds the number of cached positions and
// mask hides the cache rows past it (Emitter.CachedAttention). The new
// key and value are copied into c for the next position.
func (b *builder) cachedSelfAttention(name string, x *G.Node, c *BlockCache, count, mask *G.Node) *G.Node {
	q, k, v := b.projections(name, x)
	G.Read(k, &c.NewKey)
	G.Read(v, &c.NewValue)
	y := b.op.CachedAttention(q, k, v, c.Keys, c.Values, count, mask, b.attentionScale())
	return b.outProjection(name, y)
}

// source is what cross-attention reads: the encoder's output, padded.
type source struct {
	memory *G.Node  // the encoder's output, rows (B·S, C)
	enc    *builder // the encoder's side, whose emitter is sized for those rows
	// keys and values, when set, are one decoder block's projections of
	// memory, computed already (the step graph's); memory is then unused.
	keys, values *G.Node
	padding      *G.Node // (B, S): 0 at a word, MaskValue at PAD
}

// crossAttention: every row of x (the decoder's) looks at the source's
// words, never at its padding. It returns y and the weights w,
// (B·heads, T, S).
func (b *builder) crossAttention(name string, x *G.Node, src source) (y, w *G.Node) {
	C := b.width
	q := b.linear(name+".q", x, C, C, false)
	k, v := src.keys, src.values
	if k == nil {
		k, v = src.enc.crossKeys(name, src.memory)
	}
	y, w = b.op.MaskedAttention(q, k, v, src.padding, b.attentionScale())
	return b.outProjection(name, y), w
}

// crossKeys projects the encoder's output (rows of this builder's) to the
// keys and values of one decoder block's cross-attention.
func (b *builder) crossKeys(name string, memory *G.Node) (k, v *G.Node) {
	C := b.width
	k = b.linear(name+".k", memory, C, C, false)
	v = b.linear(name+".v", memory, C, C, false)
	return k, v
}

// projections are the queries, keys and values of rows x: three linear
// layers, or x itself for all three without qkv.
func (b *builder) projections(name string, x *G.Node) (q, k, v *G.Node) {
	if !b.qkv {
		return x, x, x
	}
	C := b.width
	q = b.linear(name+".q", x, C, C, false)
	k = b.linear(name+".k", x, C, C, false)
	v = b.linear(name+".v", x, C, C, false)
	return q, k, v
}

// outProjection is the linear layer after attention, when the model has
// one; it ends a residual branch.
func (b *builder) outProjection(name string, y *G.Node) *G.Node {
	if !b.outProj {
		return y
	}
	C := b.width
	return b.linear(name+".o", y, C, C, true)
}

// attentionScale is 1/√(C/heads), the inverse square root of a head's width.
func (b *builder) attentionScale() float64 {
	return 1 / math.Sqrt(float64(b.width/b.heads))
}
