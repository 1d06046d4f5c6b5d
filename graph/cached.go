package graph

import (
	"errors"
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
)

// CachedModel is the sampling graph with a key/value cache: one run takes
// ONE new token at position p, plus the keys and values every block
// computed for positions 0..p−1 in earlier runs, and gives the logits of
// position p and its own keys and values. It is the window graph of
// model.go cut to one row: in a causal model position p attends only to
// positions ≤ p, and nothing of position j < p depends on later tokens,
// so the cached rows are exactly what the window graph would recompute.
// Without the mask every position reads later ones and no cache is
// valid: BuildCached refuses an unmasked model.
//
// The graph is static, sized to the context: the caches are (context, C)
// inputs of which the first p rows are valid, and the number p is an
// input too (see Emitter.CachedAttention). Forward only: no gradients.
type CachedModel struct {
	Spec config.Model
	G    *G.ExprGraph
	// Token and Position are one-element tensor.Int vectors: the new
	// token and its position p (the number of cached positions).
	Token, Position *G.Node
	// Mask is the additive row (1, context+1) over [cached rows…, new
	// position]: 0 where attention may look, −1e9 where it may not.
	Mask   *G.Node
	Blocks []BlockCache
	Logits *G.Node // (1, V)
	Params []*Param
}

// BlockCache holds one block's cache inputs and its new key and value.
type BlockCache struct {
	Keys, Values *G.Node // (context, C) inputs: rows 0..p−1 are valid
	// NewKey and NewValue are the new position's key and value (1, C),
	// copied out of the graph when computed (gorgonia.Read): a later
	// in-place op (a residual Add when keys are the block's input) may
	// reuse the node's memory before the run ends.
	NewKey, NewValue G.Value
}

// BuildCached emits the cached graph of a causal model.
func BuildCached(spec config.Model, be Backend) (*CachedModel, error) {
	return BuildCachedWith(spec, be, nil)
}

// BuildCachedWith is BuildCached whose parameters take their values from
// weights (Options.Weights) when it is set.
func BuildCachedWith(spec config.Model, be Backend, weights Weights) (m *CachedModel, err error) {
	if err := checkSpec(spec, 1); err != nil {
		return nil, err
	}
	if !spec.Mask {
		return nil, errors.New("a key/value cache needs a causal model (mask = true)")
	}
	defer func() { // as in Build: a panic here is a bug, returned as an error
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("building the cached graph: %v", r)
		}
	}()
	b := newBuilder(spec, Options{Batch: 1, SeqLen: 1, Backend: be, Weights: weights})
	T, C := spec.Context, spec.Embedding
	m = &CachedModel{Spec: spec, G: b.g, Blocks: make([]BlockCache, spec.Blocks)}
	m.Token = G.NewVector(b.g, tensor.Int, G.WithShape(1), G.WithName("token"))
	m.Position = G.NewVector(b.g, tensor.Int, G.WithShape(1), G.WithName("position"))
	m.Mask = G.NewMatrix(b.g, b.dt, G.WithShape(1, T+1), G.WithName("cache_mask"))

	tok, pos := b.embeddingTables()
	x := b.op.EmbeddingAt(m.Token, m.Position, tok, pos)
	for i := range m.Blocks {
		c := &m.Blocks[i]
		name := fmt.Sprintf("blocks.%d", i)
		c.Keys = G.NewMatrix(b.g, b.dt, G.WithShape(T, C), G.WithName(name+".cached_keys"))
		c.Values = G.NewMatrix(b.g, b.dt, G.WithShape(T, C), G.WithName(name+".cached_values"))
		x = b.block(name, x, func(name string, in *G.Node) *G.Node {
			return b.cachedSelfAttention(name, in, c, m.Position, m.Mask)
		})
	}
	m.Logits = b.output(x)
	m.Params = b.params
	return m, nil
}
