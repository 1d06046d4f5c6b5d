package graph

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/fused"
)

// This file is the encoder–decoder Transformer of "Attention is all you
// need", top to bottom, as model.go is the GPT: source and target
// embeddings, encoder blocks, decoder blocks, output layer and the
// label-smoothed loss, built from the layers the GPT is built from
// (layers.go). Its golden files come from PyTorch's own nn.Transformer
// (testdata/translate/mkgolden.py).

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
	// without the loss.
	Targets *G.Node
	Memory  *G.Node // the encoder's output, rows (B·S, C)
	// Logits are (B·T, V); nil in a graph with the loss unless
	// TranslationOptions.Logits asks for them (the loss computes the
	// logits it needs inside Emitter.OutputLoss).
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

// BuildTranslation emits the encoder–decoder graph of spec.
func BuildTranslation(spec TranslationSpec, o TranslationOptions) (m *Translation, err error) {
	if err := checkTranslation(spec, o); err != nil {
		return nil, err
	}
	defer func() { // see Build
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("building the graph: %v", r)
		}
	}()
	t := newTranslator(spec, o)
	enc, dec := t.enc, t.dec
	g, dt := enc.g, enc.dt
	B, S, T, C := o.Batch, o.SrcLen, o.TgtLen, spec.Embedding
	m = &Translation{Spec: spec, Batch: B, SrcLen: S, TgtLen: T, G: g, Fused: dec.fused}
	m.SrcMask = G.NewMatrix(g, dt, G.WithShape(B, S), G.WithName("src_mask"),
		G.WithValue(dense(dt, make([]float64, B*S), B, S)))

	// The encoder. Parameters are created in this order (the encoder's
	// before the decoder's), whichever graph is built, so a seed gives one
	// model.
	if o.Part == "decoder" {
		m.Memory = G.NewMatrix(g, dt, G.WithShape(B*S, C), G.WithName("memory"),
			G.WithValue(dense(dt, make([]float64, B*S*C), B*S, C)))
	} else {
		m.Src = G.NewVector(g, tensor.Int, G.WithShape(B*S), G.WithName("src"))
		x := enc.dropout(t.embedding(enc, "src", m.Src, S))
		for i := 0; i < spec.EncoderBlocks; i++ {
			x = enc.block(fmt.Sprintf("encoder.%d", i), x, func(name string, in *G.Node) *G.Node {
				y, w := enc.selfAttention(name, in, false, m.SrcMask)
				m.EncoderAttention = append(m.EncoderAttention, w)
				return y
			})
		}
		m.Memory = enc.layerNorm("encoder.norm", x)
	}
	if o.Part == "encoder" {
		if o.CrossKeys {
			for i := 0; i < spec.DecoderBlocks; i++ {
				k, v := enc.crossKeys(fmt.Sprintf("decoder.%d.cross", i), m.Memory)
				m.CrossKeys, m.CrossValues = append(m.CrossKeys, k), append(m.CrossValues, v)
			}
		}
		m.Params, m.Dropout, m.dropoutP = enc.params, enc.masks, enc.dropoutP
		return m, nil
	}

	// The decoder.
	m.DecIn = G.NewVector(g, tensor.Int, G.WithShape(B*T), G.WithName("dec_in"))
	src := source{memory: m.Memory, enc: enc, padding: m.SrcMask}
	y := dec.dropout(t.embedding(dec, "tgt", m.DecIn, T))
	for i := 0; i < spec.DecoderBlocks; i++ {
		var cross *G.Node
		y, cross = t.decoderBlock(fmt.Sprintf("decoder.%d", i), y, func(name string, in *G.Node) *G.Node {
			a, w := dec.selfAttention(name, in, true, nil)
			m.DecoderAttention = append(m.DecoderAttention, w)
			return a
		}, src)
		m.CrossAttention = append(m.CrossAttention, cross)
	}
	y = dec.layerNorm("decoder.norm", y)
	if o.Loss {
		// The output layer is inside the loss: the fused loss computes
		// the logits of the rows whose target is not PAD only, and those
		// of every row only when asked.
		m.Targets = G.NewVector(g, tensor.Int, G.WithShape(B*T), G.WithName("dec_tgt"))
		w, bias := t.outputLayer()
		m.Loss = dec.op.OutputLoss(y, w, bias, m.Targets, spec.LabelSmoothing, PAD)
		if o.Logits {
			m.Logits = dec.op.Linear(y, w, bias)
		}
	} else {
		m.Logits = t.output(y)
	}
	m.Params, m.Dropout, m.dropoutP = dec.params, dec.masks, dec.dropoutP
	return m, nil
}

// checkTranslation refuses a spec, or a graph of it, that cannot be
// built: a part that is not one, an encoder with a loss, empty sizes, or
// lengths past learned positions' table.
func checkTranslation(spec TranslationSpec, o TranslationOptions) error {
	if err := spec.Check(); err != nil {
		return err
	}
	if o.Part != "" && o.Part != "encoder" && o.Part != "decoder" || o.Part == "encoder" && o.Loss {
		return fmt.Errorf("graph part %q (loss %v): want \"\", \"encoder\" or \"decoder\", and the loss only with a decoder", o.Part, o.Loss)
	}
	if o.Batch < 1 || o.SrcLen < 1 || o.TgtLen < 1 {
		return fmt.Errorf("batch %d, source length %d and target length %d must be at least 1", o.Batch, o.SrcLen, o.TgtLen)
	}
	if spec.Positions == "learned" && (o.SrcLen > spec.MaxLen || o.TgtLen > spec.MaxLen) {
		return fmt.Errorf("source length %d or target length %d beyond max_len %d", o.SrcLen, o.TgtLen, spec.MaxLen)
	}
	return nil
}

// embedding: tok[ids]·√C + pos[0..T), as rows (B·T, C), on b's rows.
// The paper scales the token embedding by √C (section 3.4) so that it is
// not drowned by the positions; its table starts N(0, 1/C), so the scaled
// rows are N(0, 1). side is "src" or "tgt": each has its token table and,
// when learned, its position table (MaxLen, C); the sinusoidal table is a
// constant (T, C).
func (t *translator) embedding(b *builder, side string, ids *G.Node, T int) *G.Node {
	tok, pos := t.embeddingTables(b, side, T)
	return b.op.ScaledEmbedding(ids, tok, pos, math.Sqrt(float64(t.spec.Embedding)), t.spec.Positions == "learned")
}

// embeddingTables are one side's token table and position table, the
// sinusoidal one of T positions.
func (t *translator) embeddingTables(b *builder, side string, T int) (tok, pos *G.Node) {
	C, V := t.spec.Embedding, t.spec.SrcVocab
	if side == "tgt" {
		V = t.spec.TgtVocab
	}
	tok = b.param(side+"_tok.weight", gaussian(1/math.Sqrt(float64(C))), V, C)
	if side == "tgt" {
		t.tgt = tok
	}
	if t.spec.Positions == "learned" {
		return tok, b.param(side+"_pos.weight", normal, t.spec.MaxLen, C)
	}
	return tok, G.NewMatrix(b.g, b.dt, G.WithShape(T, C), G.WithName(side+"_sinusoidal"),
		G.WithValue(dense(b.dt, Sinusoidal(T, C), T, C)))
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

// decoderBlock: causal self-attention over the target (attend: over the
// whole target, or one position against a key/value cache in the step
// graph), cross-attention from the target to the source, then the
// feed-forward layer, each a sublayer. It returns the block's output and
// the cross-attention weights.
func (t *translator) decoderBlock(name string, y *G.Node, attend func(name string, y *G.Node) *G.Node, src source) (out, cross *G.Node) {
	d := t.dec
	y = d.sublayer(name+".norm1", y, func(h *G.Node) *G.Node { return attend(name+".att", h) })
	y = d.sublayer(name+".norm2", y, func(h *G.Node) *G.Node {
		var a *G.Node
		a, cross = d.crossAttention(name+".cross", h, src)
		return a
	})
	return d.sublayer(name+".norm3", y, func(h *G.Node) *G.Node { return d.feedForward(name+".ff", h) }), cross
}

// output: logits (B·T, V) from the decoder's rows, through the output
// layer or, tied, the target embedding read backwards.
func (t *translator) output(y *G.Node) *G.Node {
	w, bias := t.outputLayer()
	return t.dec.op.Linear(y, w, bias)
}

// outputLayer returns the output layer's weight (V, C) and bias, or, tied,
// the target embedding and no bias (nil).
func (t *translator) outputLayer() (w, bias *G.Node) {
	if t.spec.TieEmbeddings {
		return t.tgt, nil
	}
	return t.dec.linearParams("out", t.spec.Embedding, t.spec.TgtVocab, false)
}

// translator builds an encoder–decoder graph: a builder for the
// encoder's rows (B·S) and one for the decoder's (B·T), sharing the graph
// and the layers.
type translator struct {
	spec     TranslationSpec
	enc, dec *builder
	tgt      *G.Node // the target embedding, which a tied output layer reads too
}

// layers are the encoder–decoder's settings of the shared layers: the
// paper's residual connections, biases, projections and initialisation
// (nn.Transformer's), with the spec's sizes, norm and activation.
func (s TranslationSpec) layers() layers {
	return layers{width: s.Embedding, heads: s.Heads, ffHidden: s.FFHidden, activation: s.Activation,
		norm: s.Norm, residual: true, bias: true, init: "xavier", qkv: true, outProj: true}
}

// newTranslator prepares the builders of a graph of o.Batch sentence
// pairs, sources of o.SrcLen positions and targets of o.TgtLen. The
// fused ops of both sides share one team and one Memory, sized for the
// larger side.
func newTranslator(spec TranslationSpec, o TranslationOptions) *translator {
	st := newGraphState(spec.Dtype, o.Seed, o.Weights)
	if o.Dropout {
		st.dropoutP = spec.Dropout
	}
	batch, srcLen, tgtLen := o.Batch, o.SrcLen, o.TgtLen
	base := &builder{graphState: st, batch: batch, layers: spec.layers()}
	t := &translator{spec: spec}
	if o.Unfused {
		consts := map[string]*G.Node{} // one set of named constants for the graph
		side := func(T int) *primitives {
			return &primitives{g: st.g, dt: st.dt, batch: batch, seqLen: T, heads: spec.Heads, context: T, consts: consts}
		}
		t.enc, t.dec = base.on(side(srcLen), srcLen), base.on(side(tgtLen), tgtLen)
		return t
	}
	sizes := func(T int) fused.Sizes {
		return fused.Sizes{Batch: batch, Seq: T, Width: spec.Embedding, Heads: spec.Heads, Vocab: spec.TgtVocab, Context: T}
	}
	both := fused.New(st.dt, sizes(max(srcLen, tgtLen)), o.Threads, o.Memory)
	t.enc, t.dec = base.on(both.Sized(sizes(srcLen)), srcLen), base.on(both.Sized(sizes(tgtLen)), tgtLen)
	return t
}
