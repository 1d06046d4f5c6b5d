// Package graph is the models' specification: it builds the GPT and the
// encoder–decoder Transformer of "Attention is all you need" as static
// Gorgonia expression graphs, with their parameters and, for training,
// their loss.
//
// Each model reads top to bottom in one file, as nanoGPT's model.py does:
//
//   - model.go is the GPT, in the order of the reference (gptref.py):
//     embedding, blocks of attention and feed-forward, output, loss.
//     cached.go cuts it to one new position against a key/value cache,
//     for sampling.
//   - translate.go is the encoder–decoder, in the order of PyTorch's
//     nn.Transformer that its golden files come from: embeddings, encoder
//     blocks, decoder blocks, output, label-smoothed loss.
//     translatestep.go cuts its decoder to one new position per
//     sentence, for translating.
//
// Both are built from the same layers (layers.go): linear, layer norm,
// feed-forward, the residual sublayer, the transformer block and
// attention in its uses (causal and padded self-attention, cached
// self-attention, cross-attention), each model setting them its way
// (layers). A layer creates its parameters (builder.go) and hands its
// computation to an Emitter (emitter.go), which turns it into nodes:
// Gorgonia's own operations (primitives.go, the maths spelled out) or
// one hand-written kernel per layer (package graph/fused).
//
// Three packages share the work, imports running one way:
//
//   - graph (this package) says what the models compute and creates
//     their parameters.
//   - graph/fused holds the fused kernels, one Gorgonia op per layer with
//     hand-written forward and backward loops. graph imports it; it
//     imports neither graph nor tape.
//   - graph/tape runs a built graph on Gorgonia's TapeMachine: Program
//     (a GPT's window of tokens, with the gradients when training),
//     CachedProgram (one token at a time against a key/value cache),
//     TranslationProgram and TranslationStepProgram (the encoder–decoder's
//     graphs). It imports graph and fused.
package graph

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph/fused"
)

// Model is a built GPT graph: its inputs, outputs and parameters.
type Model struct {
	Spec   config.Model // the [model] table, with Vocab filled in
	Batch  int
	SeqLen int // positions per sequence: Spec.Context unless built shorter

	G *G.ExprGraph
	// Tokens holds the B·T token ids of a batch, row after row (tensor.Int).
	Tokens *G.Node
	// Targets holds the B·T next-token ids, row after row (tensor.Int);
	// nil when the graph was built without the loss.
	Targets *G.Node
	Logits  *G.Node // (B·T, V)
	Loss    *G.Node // scalar mean cross-entropy; nil without the loss
	// Attention holds every block's attention weights, (B·heads, T, T):
	// the reference's (B, heads, T, T) with the first two axes flattened.
	Attention []*G.Node
	Params    []*Param
	// Dropout holds the dropout masks, inputs filled by SetDropout before
	// each training run; empty unless built with Options.Dropout and a
	// model whose dropout is above 0.
	Dropout  []*G.Node
	dropoutP float64
	// Fused is the emitter of a fused graph, which a program running it
	// asks for the goroutines of its kernels and for its memory plan
	// (package tape); nil for the unfused graph.
	Fused *fused.Emitter
}

// TieGradients completes grads, the gradients of the loss with respect to
// m.Params in order as G.Grad gives them: in a fused graph with tied
// embeddings the token table's lacks the lookup's contribution, which the
// output layer's ∂W takes in place (fused.TiedEmbedding).
func (m *Model) TieGradients(grads []*G.Node) error {
	if m.Fused == nil || !m.Spec.TieEmbeddings {
		return nil
	}
	for i, p := range m.Params {
		if p.Name == "tok.weight" {
			g, err := m.Fused.TieGradient(grads[i])
			if err != nil {
				return err
			}
			grads[i] = g
		}
	}
	return nil
}

// Options say which graph of a GPT to emit.
type Options struct {
	Batch int // sequences per run
	// SeqLen is the number of positions per sequence, 0 for the model's
	// context. A shorter graph serves an unmasked model a short prompt: it
	// uses the first SeqLen rows of the position table.
	SeqLen int
	// Loss adds the target ids and the mean cross-entropy (training,
	// evaluation); without it the graph ends in the logits (sampling).
	Loss bool
	// Seed draws the initial parameters (the model's init).
	Seed int64
	// Dropout emits the model's dropout (training graphs only: evaluation,
	// sampling and attention maps see the whole network).
	Dropout bool
	// Memory lends the fused ops' intermediate buffers; nil: the graph
	// gets a Memory of its own. Graphs that never run at the same time
	// may share one (see Memory).
	Memory *fused.Memory
	// Weights, when set, gives the parameters their values instead of
	// drawing them (see Weights): a graph that never runs (inspect's,
	// which only lists the parameters) can share one buffer for all.
	Weights Weights
	Backend
}

// Build emits the graph of the GPT spec.
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
	// reference. A panic here is a bug in this package, never bad user
	// input (checkSpec ran first), and still comes back as an error.
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("building the graph: %v", r)
		}
	}()
	b := newBuilder(spec, o)
	m = &Model{Spec: spec, Batch: o.Batch, SeqLen: o.SeqLen, G: b.g}
	rows := o.Batch * o.SeqLen

	m.Tokens = G.NewVector(b.g, tensor.Int, G.WithShape(rows), G.WithName("tokens"))
	x := b.dropout(b.embedding(m.Tokens))
	for i := 0; i < spec.Blocks; i++ {
		x = b.block(fmt.Sprintf("blocks.%d", i), x, func(name string, in *G.Node) *G.Node {
			y, att := b.attention(name, in)
			m.Attention = append(m.Attention, att)
			return y
		})
	}
	m.Logits = b.output(x)
	if o.Loss {
		m.Targets = G.NewVector(b.g, tensor.Int, G.WithShape(rows), G.WithName("targets"))
		m.Loss = b.op.CrossEntropy(m.Logits, m.Targets)
	}
	m.Params = b.params
	m.Dropout = b.masks
	m.dropoutP = b.dropoutP
	m.Fused = b.fused
	return m, nil
}

// embedding: x = tok[tokens] + pos[0..T), as rows (B·T, C). Both tables
// are N(0, 1) as nn.Embedding's, N(0, 0.02) with init "gpt2".
func (b *builder) embedding(tokens *G.Node) *G.Node {
	tok, pos := b.embeddingTables()
	if b.spec.TieEmbeddings && b.fused != nil {
		// Its gradient is the output layer's, added to in place
		// (Model.TieGradients).
		return b.fused.TiedEmbedding(tokens, tok, pos)
	}
	return b.op.Embedding(tokens, tok, pos)
}

// embeddingTables are the token table (V, C) and the position table
// (context, C).
func (b *builder) embeddingTables() (tok, pos *G.Node) {
	init := normal
	if b.spec.Init == "gpt2" {
		init = gaussian(0.02)
	}
	b.tok = b.param("tok.weight", init, b.spec.Vocab, b.spec.Embedding)
	pos = b.param("pos.weight", init, b.spec.Context, b.spec.Embedding)
	return b.tok, pos
}

// attention is the GPT's self-attention over the window: causal (each
// position looks at itself and the ones before it) when the model has the
// mask, over the whole window without. It returns y and the weights w,
// (B·heads, T, T).
func (b *builder) attention(name string, x *G.Node) (y, w *G.Node) {
	return b.selfAttention(name, x, b.spec.Mask, nil)
}

// output turns the last block's rows into logits (rows, V): the final
// LayerNorm when the model has one, then the output layer, or x·tokᵀ
// (the embedding read backwards, no bias) with tied embeddings.
func (b *builder) output(x *G.Node) *G.Node {
	if b.spec.FinalNorm {
		x = b.layerNorm("final_norm", x)
	}
	if b.spec.TieEmbeddings {
		return b.op.Linear(x, b.tok, nil)
	}
	return b.linear("out", x, b.spec.Embedding, b.spec.Vocab, false)
}
