package graph

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/fused"
)

// TranslationStep is the decoder of translate.go cut to one position, as
// CachedModel (cached.go) is the GPT's window graph cut to one: a run
// takes each row's newest word at position p and gives its next-word
// logits. What a decoder position reads of the others is
//
//   - in self-attention, the keys and values of positions 0..p−1, which
//     the causal mask makes independent of later words: they are cached
//     from earlier runs (Keys, Values), and each run adds its own
//     (NewKey, NewValue);
//   - in cross-attention, the keys and values of the encoder's output,
//     which do not change while a sentence is translated: the encoder
//     graph computes them once (TranslationOptions.CrossKeys) and they
//     are inputs here (CrossKeys, CrossValues).
//
// So one word costs one position instead of the whole target. Rows are
// the beams of one sentence, or the sentences of a batch, all at the same
// position. Forward only, no dropout.
type TranslationStep struct {
	Spec                 TranslationSpec
	Rows, SrcLen, TgtLen int

	G *G.ExprGraph
	// Tokens and Positions are Rows tensor.Int each: every row's newest
	// word and its position p (the same in every row); Count is one
	// tensor.Int, p again, the number of cached positions.
	Tokens, Positions, Count *G.Node
	// Mask is the additive row (1, TgtLen+1) over [cached rows…, the new
	// position]: 0 where attention may look, −1e9 where it may not.
	Mask *G.Node
	// SrcMask is (Rows, SrcLen), the source padding mask of translate.go.
	SrcMask *G.Node
	Blocks  []StepBlock
	Logits  *G.Node // (Rows, V)
	// CrossAttention holds each block's cross-attention weights of the new
	// position, (Rows·heads, 1, SrcLen).
	CrossAttention []*G.Node
	Params         []*Param
}

// StepBlock holds one decoder block's inputs and its new key and value.
type StepBlock struct {
	// BlockCache is the self-attention cache: Keys and Values are
	// (Rows·TgtLen, C), row after row, of which rows 0..p−1 are valid;
	// NewKey and NewValue are the new position's (Rows, C).
	BlockCache
	// CrossKeys and CrossValues are the encoder output's cross-attention
	// keys and values, (Rows·SrcLen, C).
	CrossKeys, CrossValues *G.Node
}

// BuildTranslationStep emits the step graph of spec for rows rows,
// sources of length srcLen and at most tgtLen target positions; weights,
// when not nil, gives its parameters their values (shared).
func BuildTranslationStep(spec TranslationSpec, rows, srcLen, tgtLen int, be Backend, weights Weights) (m *TranslationStep, err error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if rows < 1 || srcLen < 1 || tgtLen < 1 {
		return nil, fmt.Errorf("rows %d, source length %d and target length %d must be at least 1", rows, srcLen, tgtLen)
	}
	if spec.Positions == "learned" && tgtLen > spec.MaxLen {
		return nil, fmt.Errorf("target length %d beyond max_len %d", tgtLen, spec.MaxLen)
	}
	defer func() { // see Build
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("building the step graph: %v", r)
		}
	}()
	R, S, T, C := rows, srcLen, tgtLen, spec.Embedding
	st := newGraphState(spec.Dtype, 0, weights)
	g, dt := st.g, st.dt
	var op Emitter = &primitives{g: g, dt: dt, batch: R, seqLen: 1, heads: spec.Heads, context: T, consts: map[string]*G.Node{}}
	if !be.Unfused {
		op = fused.New(dt, fused.Sizes{Batch: R, Seq: 1, Width: C, Heads: spec.Heads, Vocab: spec.TgtVocab, Context: T}, be.Threads, nil)
	}
	dec := (&builder{graphState: st, batch: R, layers: spec.layers()}).on(op, 1)
	t := &translator{spec: spec, dec: dec}
	m = &TranslationStep{Spec: spec, Rows: R, SrcLen: S, TgtLen: T, G: g, Blocks: make([]StepBlock, spec.DecoderBlocks)}
	m.Tokens = G.NewVector(g, tensor.Int, G.WithShape(R), G.WithName("tokens"))
	m.Positions = G.NewVector(g, tensor.Int, G.WithShape(R), G.WithName("positions"))
	m.Count = G.NewVector(g, tensor.Int, G.WithShape(1), G.WithName("count"))
	m.Mask = G.NewMatrix(g, dt, G.WithShape(1, T+1), G.WithName("cache_mask"))
	m.SrcMask = G.NewMatrix(g, dt, G.WithShape(R, S), G.WithName("src_mask"))

	y := t.embeddingAt(m.Tokens, m.Positions, T)
	for i := range m.Blocks {
		blk, name := &m.Blocks[i], fmt.Sprintf("decoder.%d", i)
		input := func(what string, n int) *G.Node {
			return G.NewMatrix(g, dt, G.WithShape(n, C), G.WithName(name+"."+what))
		}
		blk.Keys, blk.Values = input("cached_keys", R*T), input("cached_values", R*T)
		blk.CrossKeys, blk.CrossValues = input("cross_keys", R*S), input("cross_values", R*S)
		var cross *G.Node
		y, cross = t.decoderBlock(name, y, func(name string, in *G.Node) *G.Node {
			return dec.cachedSelfAttention(name, in, &blk.BlockCache, m.Count, m.Mask)
		}, source{keys: blk.CrossKeys, values: blk.CrossValues, padding: m.SrcMask})
		m.CrossAttention = append(m.CrossAttention, cross)
	}
	y = dec.layerNorm("decoder.norm", y)
	m.Logits = t.output(y)
	m.Params = dec.params
	return m, nil
}

// embeddingAt is embedding for one position per row: tgt_tok[token]·√C +
// pos[p], the same arithmetic as the whole target's. The sinusoidal
// table has the rows of a decoder of T positions.
func (t *translator) embeddingAt(tokens, positions *G.Node, T int) *G.Node {
	tok, pos := t.embeddingTables(t.dec, "tgt", T)
	return t.dec.op.ScaledEmbeddingAt(tokens, positions, tok, pos, math.Sqrt(float64(t.spec.Embedding)))
}
