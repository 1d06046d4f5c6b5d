package graph

import (
	"errors"
	"fmt"

	G "gorgonia.org/gorgonia"
)

// KeysAndValues finds each block's keys and values in a fused window
// graph: the outputs of the linear layers that apply blocks.i.att.k and
// blocks.i.att.v, (B·T, C). A program that keeps them (tape.CompilePrefill)
// starts a key/value cache from one run over a prompt, its positions'
// rows being exactly what the cached graph computes one token at a time.
//
// Gorgonia's primitives compute a projection in several nodes, none of
// them the keys alone: an unfused graph, or one without Q/K/V, has none
// to give.
func (m *Model) KeysAndValues() (keys, values []*G.Node, err error) {
	if m.Fused == nil || !m.Spec.QKV {
		return nil, nil, errors.New("keys and values are nodes of a fused graph with Q/K/V projections only")
	}
	params := map[string]*G.Node{}
	for _, p := range m.Params {
		params[p.Name] = p.Node
	}
	applies := func(name string) (*G.Node, error) {
		w, ok := params[name]
		if !ok {
			return nil, fmt.Errorf("no parameter %s", name)
		}
		readers := m.G.To(w.ID())
		if readers.Len() != 1 {
			return nil, fmt.Errorf("%s is read by %d nodes, not one projection", name, readers.Len())
		}
		readers.Next()
		return readers.Node().(*G.Node), nil
	}
	for i := range m.Spec.Blocks {
		k, err := applies(fmt.Sprintf("blocks.%d.att.k.weight", i))
		if err != nil {
			return nil, nil, err
		}
		v, err := applies(fmt.Sprintf("blocks.%d.att.v.weight", i))
		if err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values, nil
}
