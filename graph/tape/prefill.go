package tape

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph"
)

// Prefill is a fused window graph compiled to start a key/value cache:
// one run over a prompt of SeqLen tokens computes every block's keys and
// values at all its positions, and their logits, as matrix products over
// the whole prompt, where the cached graph would take one run, a pass
// over all the weights, per token. CachedProgram.Load takes them over.
// Its attention weights are lent, not kept: nobody reads them.
type Prefill struct {
	*Program
	Keys, Values []*G.Node // per block, (SeqLen, C)
}

// CompilePrefill compiles a window graph of batch 1 built by the fused
// emitter (graph.Model.KeysAndValues).
func CompilePrefill(m *graph.Model) (*Prefill, error) {
	if m.Batch != 1 || m.Loss != nil {
		return nil, fmt.Errorf("prefill: a graph of batch 1 without loss, not batch %d", m.Batch)
	}
	keys, values, err := m.KeysAndValues()
	if err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	p, err := compile(m, false, false, append(append([]*G.Node(nil), keys...), values...))
	if err != nil {
		return nil, err
	}
	return &Prefill{Program: p, Keys: keys, Values: values}, nil
}
