package graph

import (
	"fmt"
	"math"
	"math/rand"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph/fused"
)

// This file is the encoder–decoder Transformer of "Attention is all you
// need", layer by layer, as model.go is the GPT: source and target
// embeddings, encoder blocks, decoder blocks, output layer and the
// label-smoothed loss. Its golden files come from PyTorch's own
// nn.Transformer (testdata/translate/mkgolden.py).

// TranslationSpec is the encoder–decoder's shape and switches.
type TranslationSpec struct {
	SrcVocab int `json:"src_vocab"`
	TgtVocab int `json:"tgt_vocab"`
	// MaxLen is the number of rows of each learned position table: the
	// longest source or target sequence (with SOS/EOS) a graph may have.
	MaxLen        int    `json:"max_len"`
	Embedding     int    `json:"embedding"`
	Heads         int    `json:"heads"`
	EncoderBlocks int    `json:"encoder_blocks"`
	DecoderBlocks int    `json:"decoder_blocks"`
	FFHidden      int    `json:"ff_hidden"`
	Norm          string `json:"norm"`       // "post" (the paper's) | "pre"
	Positions     string `json:"positions"`  // "sinusoidal" (the paper's) | "learned"
	Activation    string `json:"activation"` // "relu" (the paper's) | "gelu" (tanh form) | "gelu_exact"
	// TieEmbeddings makes the output layer the target embedding read
	// backwards (y·tgt_tokᵀ, no bias); the file then has no out.*.
	TieEmbeddings  bool    `json:"tie_embeddings"`
	LabelSmoothing float64 `json:"label_smoothing"`
	Dropout        float64 `json:"dropout"`
	Dtype          string  `json:"dtype"`
}

// Check rejects a spec the builder cannot emit, naming the field.
func (s TranslationSpec) Check() error {
	switch {
	case s.SrcVocab < 4 || s.TgtVocab < 4:
		return fmt.Errorf("model: vocabularies %d and %d must hold at least PAD, SOS, EOS and UNK", s.SrcVocab, s.TgtVocab)
	case s.MaxLen < 1:
		return fmt.Errorf("model: max_len %d must be at least 1", s.MaxLen)
	case s.Embedding < 2 || s.Embedding%2 != 0:
		return fmt.Errorf("model: embedding %d must be even and at least 2", s.Embedding)
	case s.Heads < 1 || s.Embedding%s.Heads != 0:
		return fmt.Errorf("model: heads %d must divide embedding %d", s.Heads, s.Embedding)
	case s.EncoderBlocks < 1 || s.DecoderBlocks < 1:
		return fmt.Errorf("model: encoder_blocks %d and decoder_blocks %d must be at least 1", s.EncoderBlocks, s.DecoderBlocks)
	case s.FFHidden < 1:
		return fmt.Errorf("model: ff_hidden %d must be at least 1", s.FFHidden)
	case s.Norm != "pre" && s.Norm != "post":
		return fmt.Errorf("model: norm %q must be post or pre", s.Norm)
	case s.Positions != "sinusoidal" && s.Positions != "learned":
		return fmt.Errorf("model: positions %q must be sinusoidal or learned", s.Positions)
	case s.Activation != "relu" && s.Activation != "gelu" && s.Activation != "gelu_exact":
		return fmt.Errorf("model: activation %q must be relu, gelu or gelu_exact", s.Activation)
	case !(s.LabelSmoothing >= 0 && s.LabelSmoothing < 1):
		return fmt.Errorf("model: label_smoothing %v must be in [0, 1)", s.LabelSmoothing)
	case !(s.Dropout >= 0 && s.Dropout < 1):
		return fmt.Errorf("model: dropout %v must be in [0, 1)", s.Dropout)
	case s.Dtype != "float32" && s.Dtype != "float64":
		return fmt.Errorf("model: dtype %q must be float32 or float64", s.Dtype)
	}
	return nil
}

// PAD is the padding id of both vocabularies; its targets carry no loss
// and its source positions take no attention.
const PAD = 0

// MaskValue is added to a score that must take no weight: exp(−1e9 − max)
// is exactly 0 in float32 and float64, and −Inf would give NaN.
const MaskValue = -1e9

// Translation is a built encoder–decoder graph for batches of Batch
// sentence pairs, sources padded to SrcLen and targets to TgtLen.
type Translation struct {
	Spec                  TranslationSpec
	Batch, SrcLen, TgtLen int

	G *G.ExprGraph
	// Src and DecIn are the B·S source ids and the B·T decoder input ids
	// (SOS, then the target shifted right), row after row (tensor.Int).
	Src, DecIn *G.Node
	// SrcMask is (B, S): 0 at a source token, −1e9 at PAD; added to the
	// scores of the encoder's self-attention and of cross-attention.
	SrcMask *G.Node
	// Targets holds the B·T target ids (dec_tgt, PAD after the end); nil
	// without the loss. The unfused loss reads them as TargetIndex (B·T,
	// tensor.Int), r·V + dec_tgt[r], where row r of the flattened
	// log-probabilities holds its target, and TargetWeight (B·T),
	// 1/(number of non-PAD targets) at a non-PAD target, else 0.
	Targets, TargetIndex, TargetWeight *G.Node
	Memory                             *G.Node // the encoder's output, rows (B·S, C)
	// Logits are (B·T, V); nil in a fused graph with the loss unless
	// TranslationOptions.Logits asks for them (its loss computes the
	// logits of the non-PAD targets only, inside fused.OutputLoss).
	Logits *G.Node
	Loss   *G.Node // scalar; nil without the loss
	// CrossAttention holds each decoder block's cross-attention weights,
	// (B·heads, T, S); EncoderAttention each encoder block's
	// self-attention weights (B·heads, S, S) and DecoderAttention each
	// decoder block's (B·heads, T, T): what gptg attention draws.
	CrossAttention, EncoderAttention, DecoderAttention []*G.Node
	// CrossKeys and CrossValues are, in an encoder graph built with
	// TranslationOptions.CrossKeys, each decoder block's cross-attention
	// keys and values of the encoder's output, rows (B·S, C): what the
	// decoder's step graph (translatestep.go) reads for every word.
	CrossKeys, CrossValues []*G.Node
	Params                 []*Param
	Dropout                []*G.Node // masks filled by SetDropout; see Model.Dropout
	dropoutP               float64
	// Fused is the fused emitter of the decoder's rows, which a program
	// running the graph asks for its team and memory; nil unfused.
	Fused *fused.Emitter
}

// TranslationOptions say which graph of a model to emit.
type TranslationOptions struct {
	Batch, SrcLen, TgtLen int
	Loss                  bool // add the targets and the loss (training, evaluation)
	// Logits keeps the logits of every row in a graph with the loss
	// (tests): a fused loss graph computes only the rows it needs.
	Logits  bool
	Seed    int64
	Dropout bool // emit the model's dropout (training graphs only)
	// Part is "" for the whole model, "encoder" for the encoder alone
	// (Src → Memory) or "decoder" for the decoder alone, Memory an input
	// (B·S, C): translation runs the encoder once per sentence and the
	// decoder once per word.
	Part string
	// CrossKeys adds to an encoder graph each decoder block's
	// cross-attention keys and values of its output (Translation.CrossKeys).
	CrossKeys bool
	// Memory lends the fused ops' buffers (see Options.Memory).
	Memory *fused.Memory
	// Weights, when set, gives the parameters their values (shared, for
	// forward-only graphs) instead of a random start from Seed.
	Weights Weights
	Backend
}

// translator is the builder of an encoder–decoder graph: the GPT builder's
// parameters, dropout and layers (on the primitive emitter), with the
// translation spec beside it.
type translator struct {
	*builder
	ts TranslationSpec
	// enc and dec emit the layers on the encoder's rows (B·S) and on the
	// decoder's (B·T): fused ops are sized per graph. Unfused, both are e.
	enc, dec Emitter
	// e composes what has no fused kernel yet from primitives, in either
	// graph: the scaled embedding; unfused, everything.
	e       *primitives
	fused   *fused.Emitter // the decoder's fused emitter; nil unfused
	tgt     *G.Node        // the target embedding, which a tied output layer reads too
	srcRows int
	weights Weights // when set, the parameters' values (instead of the RNG's)
}

// Weights gives a forward-only graph its parameters' values instead of
// drawing them: the value of parameter name, of the given shape and the
// graph's dtype. The graph reads it and never writes it, so every graph
// built from one model file can share the file's one copy of the weights
// (a translator builds an encoder and a decoder per sentence length;
// copying the weights into each took a copy of the model per graph). It
// panics on a tensor it cannot give; the builder returns that as an error.
type Weights func(name string, shape []int) *tensor.Dense

// SharedZeros is a Weights for a graph that is never run (one that only
// lists a model's parameters): every parameter a view of one buffer of
// zeros of the dtype (float64 or else float32), grown to the largest
// asked for, so that the graph takes about one tensor's memory instead of
// the model's.
func SharedZeros(dtype string) Weights {
	var f32 []float32
	var f64 []float64
	return func(_ string, shape []int) *tensor.Dense {
		n := shapeSize(shape)
		if dtype == "float64" {
			if len(f64) < n {
				f64 = make([]float64, n)
			}
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f64[:n]))
		}
		if len(f32) < n {
			f32 = make([]float32, n)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f32[:n]))
	}
}

// param is the builder's param, or with Weights the given value.
func (t *translator) param(name string, init initializer, shape ...int) *G.Node {
	if t.weights == nil {
		return t.builder.param(name, init, shape...)
	}
	node := G.NewTensor(t.g, t.dt, len(shape), G.WithShape(shape...), G.WithName(name),
		G.WithValue(t.weights(name, shape)))
	t.params = append(t.params, &Param{Name: name, Shape: append([]int(nil), shape...), Node: node})
	return node
}

// BuildTranslation emits the encoder–decoder graph of spec.
func BuildTranslation(spec TranslationSpec, o TranslationOptions) (m *Translation, err error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if o.Part != "" && o.Part != "encoder" && o.Part != "decoder" || o.Part == "encoder" && o.Loss {
		return nil, fmt.Errorf("graph part %q (loss %v): want \"\", \"encoder\" or \"decoder\", and the loss only with a decoder", o.Part, o.Loss)
	}
	if o.Batch < 1 || o.SrcLen < 1 || o.TgtLen < 1 {
		return nil, fmt.Errorf("batch %d, source length %d and target length %d must be at least 1", o.Batch, o.SrcLen, o.TgtLen)
	}
	if spec.Positions == "learned" && (o.SrcLen > spec.MaxLen || o.TgtLen > spec.MaxLen) {
		return nil, fmt.Errorf("source length %d or target length %d beyond max_len %d", o.SrcLen, o.TgtLen, spec.MaxLen)
	}
	defer func() { // see Build
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("building the graph: %v", r)
		}
	}()
	dt := tensor.Float32
	if spec.Dtype == "float64" {
		dt = tensor.Float64
	}
	g := G.NewGraph()
	e := &primitives{g: g, dt: dt, batch: o.Batch, seqLen: o.TgtLen, heads: spec.Heads,
		context: o.TgtLen, consts: map[string]*G.Node{}}
	b := &builder{g: g, dt: dt, batch: o.Batch, seqLen: o.TgtLen, op: e,
		spec: config.Model{Embedding: spec.Embedding, Heads: spec.Heads, Bias: true},
		rng:  rand.New(rand.NewSource(o.Seed))}
	if o.Dropout {
		b.dropoutP = spec.Dropout
	}
	t := &translator{builder: b, ts: spec, e: e, enc: e, dec: e, srcRows: o.Batch * o.SrcLen, weights: o.Weights}
	if !o.Unfused {
		// One team and one Memory for both sides: the larger sizes the team.
		sizes := func(T int) fused.Sizes {
			return fused.Sizes{Batch: o.Batch, Seq: T, Width: spec.Embedding,
				Heads: spec.Heads, Vocab: spec.TgtVocab, Context: T}
		}
		both := fused.New(dt, sizes(max(o.SrcLen, o.TgtLen)), o.Threads, o.Memory)
		t.fused = both.Sized(sizes(o.TgtLen))
		t.enc, t.dec = both.Sized(sizes(o.SrcLen)), t.fused
	}
	m = &Translation{Spec: spec, Batch: o.Batch, SrcLen: o.SrcLen, TgtLen: o.TgtLen, G: g}
	B, S, T := o.Batch, o.SrcLen, o.TgtLen

	m.SrcMask = G.NewMatrix(g, dt, G.WithShape(B, S), G.WithName("src_mask"),
		G.WithValue(dense(dt, make([]float64, B*S), B, S)))
	m.Fused = t.fused
	m.Dropout = b.masks
	m.dropoutP = b.dropoutP

	// Parameters are created in this order (the encoder's before the
	// decoder's), whichever graph is built, so a seed gives one model.
	if o.Part == "decoder" {
		m.Memory = G.NewMatrix(g, dt, G.WithShape(B*S, spec.Embedding), G.WithName("memory"),
			G.WithValue(dense(dt, make([]float64, B*S*spec.Embedding), B*S, spec.Embedding)))
	} else {
		m.Src = G.NewVector(g, tensor.Int, G.WithShape(B*S), G.WithName("src"))
		x := t.dropout(t.embedding("src", m.Src, S))
		for i := 0; i < spec.EncoderBlocks; i++ {
			var w *G.Node
			x, w = t.encoderBlock(fmt.Sprintf("encoder.%d", i), x, m.SrcMask)
			m.EncoderAttention = append(m.EncoderAttention, w)
		}
		m.Memory = t.layerNorm("encoder.norm", x)
	}
	if o.Part == "encoder" {
		if o.CrossKeys {
			C := spec.Embedding
			for i := 0; i < spec.DecoderBlocks; i++ {
				name := fmt.Sprintf("decoder.%d.cross", i)
				m.CrossKeys = append(m.CrossKeys, t.linear(name+".k", m.Memory, C, C))
				m.CrossValues = append(m.CrossValues, t.linear(name+".v", m.Memory, C, C))
			}
		}
		m.Params, m.Dropout = b.params, b.masks
		return m, nil
	}

	m.DecIn = G.NewVector(g, tensor.Int, G.WithShape(B*T), G.WithName("dec_in"))
	y := t.dropout(t.embedding("tgt", m.DecIn, T))
	for i := 0; i < spec.DecoderBlocks; i++ {
		var self, cross *G.Node
		y, self, cross = t.decoderBlock(fmt.Sprintf("decoder.%d", i), y, m.Memory, m.SrcMask)
		m.DecoderAttention = append(m.DecoderAttention, self)
		m.CrossAttention = append(m.CrossAttention, cross)
	}
	y = t.layerNorm("decoder.norm", y)
	switch {
	case o.Loss && t.fused != nil:
		// The output layer inside the loss, on the rows whose target is
		// not PAD only (fused.OutputLoss); the logits of every row only
		// when asked.
		m.Targets = G.NewVector(g, tensor.Int, G.WithShape(B*T), G.WithName("dec_tgt"))
		w, bias := t.outputLayer()
		m.Loss = t.fused.OutputLoss(y, w, bias, m.Targets, spec.LabelSmoothing, PAD)
		if o.Logits {
			m.Logits = t.dec.Linear(y, w, bias)
		}
	case o.Loss:
		m.Logits = t.output(y)
		m.Targets = G.NewVector(g, tensor.Int, G.WithShape(B*T), G.WithName("dec_tgt"))
		m.TargetIndex = G.NewVector(g, tensor.Int, G.WithShape(B*T), G.WithName("target_index"))
		m.TargetWeight = G.NewVector(g, dt, G.WithShape(B*T), G.WithName("target_weight"))
		m.Loss = t.loss(m.Logits, m.TargetIndex, m.TargetWeight)
	default:
		m.Logits = t.output(y)
	}
	m.Params = b.params
	m.Dropout = b.masks
	return m, nil
}

// embedding: tok[ids]·√C + pos[0..T), as rows (B·T, C). The paper scales
// the token embedding by √C (section 3.4) so that it is not drowned by the
// positions; its table starts N(0, 1/C), so the scaled rows are N(0, 1).
// side is "src" or "tgt": each has its token table and, when learned, its
// position table.
func (t *translator) embedding(side string, ids *G.Node, T int) *G.Node {
	C := t.ts.Embedding
	V := t.ts.SrcVocab
	if side == "tgt" {
		V = t.ts.TgtVocab
	}
	tok := t.param(side+"_tok.weight", gaussian(1/math.Sqrt(float64(C))), V, C)
	if side == "tgt" {
		t.tgt = tok
	}
	learned := t.ts.Positions == "learned"
	var pos *G.Node // the learned table (MaxLen, C), or the sinusoidal one (T, C)
	if learned {
		pos = t.param(side+"_pos.weight", normal, t.ts.MaxLen, C)
	} else {
		pos = G.NewMatrix(t.g, t.dt, G.WithShape(T, C), G.WithName(side+"_sinusoidal"),
			G.WithValue(dense(t.dt, Sinusoidal(T, C), T, C)))
	}
	scale := math.Sqrt(float64(C))
	if t.fused != nil {
		f, _ := t.on(ids).(*fused.Emitter) // ids has the rows' count: the encoder's or the decoder's
		return f.ScaledEmbedding(ids, tok, pos, scale, learned)
	}
	if learned {
		pos = G.Must(G.Reshape(G.Must(G.Slice(pos, G.S(0, T))), tensor.Shape{T, C}))
	}
	x := G.Must(G.ByIndices(tok, ids, 0))
	x = G.Must(G.Mul(x, t.e.scalar("embedding.scale", scale)))
	x = G.Must(G.Reshape(x, tensor.Shape{t.batch, T, C}))
	x = G.Must(G.BroadcastAdd(x, pos, nil, []byte{0}))
	return G.Must(G.Reshape(x, tensor.Shape{t.batch * T, C}))
}

// Sinusoidal is the paper's position table, (T, C) row-major:
// PE(p, 2i) = sin(p / 10000^(2i/C)), PE(p, 2i+1) = cos(p / 10000^(2i/C)).
func Sinusoidal(T, C int) []float64 {
	pe := make([]float64, T*C)
	for p := 0; p < T; p++ {
		for i := 0; i < C; i += 2 {
			a := float64(p) / math.Pow(10000, float64(i)/float64(C))
			pe[p*C+i] = math.Sin(a)
			pe[p*C+i+1] = math.Cos(a)
		}
	}
	return pe
}

// encoderBlock: self-attention over the source (PAD keys masked), then
// the feed-forward layer, each wrapped by sub. It returns the block's
// output and the self-attention weights.
func (t *translator) encoderBlock(name string, x, srcMask *G.Node) (out, self *G.Node) {
	x = t.sub(name+".norm1", x, func(in *G.Node) *G.Node {
		var y *G.Node
		y, self = t.attention(name+".att", in, in, srcMask)
		return y
	})
	return t.sub(name+".norm2", x, func(in *G.Node) *G.Node { return t.feedForward(name+".ff", in) }), self
}

// decoderBlock: causal self-attention over the target, cross-attention
// from the target to the encoder's output (PAD sources masked), then the
// feed-forward layer. It returns the block's output and the self- and
// cross-attention weights.
func (t *translator) decoderBlock(name string, y, memory, srcMask *G.Node) (out, self, cross *G.Node) {
	y = t.sub(name+".norm1", y, func(in *G.Node) *G.Node {
		var a *G.Node
		a, self = t.attention(name+".att", in, in, nil)
		return a
	})
	y = t.sub(name+".norm2", y, func(in *G.Node) *G.Node {
		var a *G.Node
		a, cross = t.attention(name+".cross", in, memory, srcMask)
		return a
	})
	return t.sub(name+".norm3", y, func(in *G.Node) *G.Node { return t.feedForward(name+".ff", in) }), self, cross
}

// sub wraps a sub-layer f with its residual connection, its LayerNorm
// and the paper's dropout on f's output: post (the paper's)
// norm(x + drop(f(x))), pre x + drop(f(norm(x))).
func (t *translator) sub(normName string, x *G.Node, f func(*G.Node) *G.Node) *G.Node {
	in := x
	if t.ts.Norm == "pre" {
		in = t.layerNorm(normName, x)
	}
	h := G.Must(G.Add(t.dropout(f(in)), x)) // h + x: see block in model.go
	if t.ts.Norm == "post" {
		h = t.layerNorm(normName, h)
	}
	return h
}

// attention is multi-head attention of the rows x (queries) over the rows
// kv (keys and values): q, k, v projections with biases,
// softmax(q·kᵀ/√(C/heads) + mask)·v, then the output projection. With a
// keyMask (B, S) the keys are the source's, PAD masked (the encoder's
// self-attention, cross-attention); without, it is the decoder's causal
// self-attention. It returns the output rows and the weights (B·heads,
// T_q, T_kv).
func (t *translator) attention(name string, x, kv, keyMask *G.Node) (y, w *G.Node) {
	C := t.ts.Embedding
	scale := 1 / math.Sqrt(float64(C/t.ts.Heads))
	q := t.linear(name+".q", x, C, C)
	k := t.linear(name+".k", kv, C, C)
	v := t.linear(name+".v", kv, C, C)
	switch f, isFused := t.on(x).(*fused.Emitter); {
	case keyMask == nil:
		y, w = t.dec.Attention(q, k, v, scale, true, nil)
	case isFused:
		y, w = f.MaskedAttention(q, k, v, keyMask, scale)
	default:
		y, w = t.e.maskedAttention(q, k, v, scale, keyMask, false)
	}
	return t.linear(name+".o", y, C, C), w
}

// on is the emitter of x's rows: the encoder's or the decoder's.
func (t *translator) on(x *G.Node) Emitter {
	if x.Shape()[0] == t.srcRows {
		return t.enc
	}
	return t.dec
}

// layerNorm is nn.LayerNorm (eps 1e-5) with its weight and bias.
func (t *translator) layerNorm(name string, x *G.Node) *G.Node {
	w := t.param(name+".weight", ones, t.ts.Embedding)
	bias := t.param(name+".bias", zeros, t.ts.Embedding)
	return t.on(x).LayerNorm(x, w, bias, 1e-5)
}

// dropout: see builder.dropout.
func (t *translator) dropout(x *G.Node) *G.Node {
	if mask := t.dropoutMask(x.Shape()); mask != nil {
		return t.on(x).Dropout(x, mask)
	}
	return x
}

// feedForward: down(act(up(x))), ff_hidden wide.
func (t *translator) feedForward(name string, x *G.Node) *G.Node {
	C, H := t.ts.Embedding, t.ts.FFHidden
	h := t.on(x).Activation(t.linear(name+".up", x, C, H), t.ts.Activation)
	return t.linear(name+".down", h, H, C)
}

// linear is nn.Linear with nn.Transformer's initialisation: Xavier-uniform
// weights U(±√(6/(in+out))), zero biases.
func (t *translator) linear(name string, x *G.Node, in, out int) *G.Node {
	w := t.param(name+".weight", xavier(in, out), out, in)
	bias := t.param(name+".bias", zeros, out)
	return t.on(x).Linear(x, w, bias)
}

// xavier is U(±√(6/(in+out))), torch.nn.init.xavier_uniform_.
func xavier(in, out int) initializer {
	bound := math.Sqrt(6 / float64(in+out))
	return func(r *rand.Rand) float64 { return (2*r.Float64() - 1) * bound }
}

// output: logits (B·T, V) from the decoder's rows, through the output
// layer or, tied, the target embedding read backwards.
func (t *translator) output(y *G.Node) *G.Node {
	w, bias := t.outputLayer()
	return t.dec.Linear(y, w, bias)
}

// outputLayer returns the output layer's weight (V, C) and bias, or, tied,
// the target embedding and no bias (nil).
func (t *translator) outputLayer() (w, bias *G.Node) {
	if t.ts.TieEmbeddings {
		return t.tgt, nil
	}
	w = t.param("out.weight", xavier(t.ts.Embedding, t.ts.TgtVocab), t.ts.TgtVocab, t.ts.Embedding)
	bias = t.param("out.bias", zeros, t.ts.TgtVocab)
	return w, bias
}

// loss is the label-smoothed cross-entropy averaged over non-PAD targets,
// PyTorch's cross_entropy(ignore_index=PAD, label_smoothing=ε): per target
// (1−ε)·(−log p[target]) + ε·mean over the vocabulary of (−log p[v]).
// The target's log-probability is gathered by its flat index (r·V +
// target) from the log-probabilities as one column: ByIndices along a
// non-last axis, whose gradient Gorgonia gets right.
func (t *translator) loss(logits, index, weight *G.Node) *G.Node {
	N, V := logits.Shape()[0], logits.Shape()[1]
	eps := t.ts.LabelSmoothing
	logp := G.Must(G.LogSoftMax(t.e.subtractRowMax(logits)))
	column := G.Must(G.Reshape(logp, tensor.Shape{N * V, 1}))
	picked := G.Must(G.Reshape(G.Must(G.ByIndices(column, index, 0)), tensor.Shape{N}))
	perRow := G.Must(G.Mul(picked, t.e.scalar("loss.target", 1-eps)))
	if eps > 0 {
		mean := G.Must(G.Mul(G.Must(G.Sum(logp, 1)), t.e.scalar("loss.smooth", eps/float64(V))))
		perRow = G.Must(G.Add(perRow, mean))
	}
	total := G.Must(G.Sum(G.Must(G.HadamardProd(perRow, weight))))
	return G.Must(G.Neg(total))
}

// maskedAttention is attention with the encoder–decoder's masks, q rows
// (B·T_q, C), k and v rows (B·T_k, C): scores (B·H, T_q, T_k), plus the
// key mask (B, T_k) broadcast over heads and queries, plus the causal mask
// (T_q = T_k) when causal. Returns y rows (B·T_q, C) and the weights.
func (e *primitives) maskedAttention(q, k, v *G.Node, scale float64, keyMask *G.Node, causal bool) (y, w *G.Node) {
	C := q.Shape()[1]
	q, k, v = e.splitHeads(q), e.splitHeads(k), e.splitHeads(v) // (B·H, T, C/H)
	scores := G.Must(G.BatchedMatMul(q, k, false, true))
	scores = G.Must(G.Mul(scores, e.scalar("attention.scale", scale)))
	if causal {
		scores = G.Must(G.BroadcastAdd(scores, e.causalMask(), nil, []byte{0}))
	}
	if keyMask != nil {
		BH, Tq, Tk := scores.Shape()[0], scores.Shape()[1], scores.Shape()[2]
		s4 := G.Must(G.Reshape(scores, tensor.Shape{e.batch, BH / e.batch, Tq, Tk}))
		s4 = G.Must(G.BroadcastAdd(s4, keyMask, nil, []byte{1, 2}))
		scores = G.Must(G.Reshape(s4, tensor.Shape{BH, Tq, Tk}))
	}
	w = e.softmax(scores)
	return e.mergeHeads(G.Must(G.BatchedMatMul(w, v)), C), w
}
