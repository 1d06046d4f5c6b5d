package graph

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CachedProgram is an Incremental graph compiled for a TapeMachine, with
// its key/value cache: every block's keys and values of the tokens fed so
// far, at positions 0..Len()−1, in tensors that are the graph's cache
// inputs. Append feeds the next token; Truncate forgets the positions
// from some point on (their keys and values depend only on the tokens up
// to them, so the earlier ones stay valid). Nothing is allocated per run
// once the first one has made the graph's buffers.
type CachedProgram struct {
	*Incremental
	vm      G.VM
	inPlace func() error // runs the tape in this goroutine; nil: vm.RunAll (see tape.go)

	token, position *tensor.Dense   // the one-element inputs
	mask            *tensor.Dense   // (1, context+1): always the mask of the valid rows
	keys, values    []*tensor.Dense // per block, (context, C): the cache itself
	tokens          []int           // the tokens whose keys and values are cached
}

// CompileIncremental compiles the graph once; the cache starts empty.
func CompileIncremental(m *Incremental) (*CachedProgram, error) {
	T, C := m.Spec.Context, m.Spec.Embedding
	dt := m.Logits.Dtype()
	p := &CachedProgram{
		Incremental: m,
		token:       tensor.New(tensor.Of(tensor.Int), tensor.WithShape(1)),
		position:    tensor.New(tensor.Of(tensor.Int), tensor.WithShape(1)),
		mask:        tensor.New(tensor.Of(dt), tensor.WithShape(1, T+1)),
		tokens:      make([]int, 0, T),
	}
	for range m.Blocks {
		p.keys = append(p.keys, tensor.New(tensor.Of(dt), tensor.WithShape(T, C)))
		p.values = append(p.values, tensor.New(tensor.Of(dt), tensor.WithShape(T, C)))
	}
	setRange(p.mask, 0, T, -1e9) // no valid row yet; entry T, the new position, stays 0
	p.vm = G.NewTapeMachine(m.G)
	p.inPlace = runInPlace(p.vm)
	return p, nil
}

// Len is the number of cached positions: the position the next token takes.
func (p *CachedProgram) Len() int { return len(p.tokens) }

// Tokens are the cached tokens, position by position (do not modify).
func (p *CachedProgram) Tokens() []int { return p.tokens }

// Truncate keeps the first n cached positions and forgets the rest.
func (p *CachedProgram) Truncate(n int) {
	if n < 0 || n >= len(p.tokens) {
		return
	}
	p.tokens = p.tokens[:n]
	setRange(p.mask, n, p.Spec.Context, -1e9)
}

// Append runs the graph for token at position Len(), leaves its logits in
// Logits (readable until the next run) and caches its keys and values.
// The cache holds at most context positions: then the window is full and
// Append fails.
func (p *CachedProgram) Append(token int) error {
	n := len(p.tokens)
	if n >= p.Spec.Context {
		return fmt.Errorf("append: the cache is full (%d positions)", n)
	}
	if token < 0 || token >= p.Spec.Vocab {
		return fmt.Errorf("append: token id %d outside the vocabulary of %d", token, p.Spec.Vocab)
	}
	p.token.Data().([]int)[0] = token
	p.position.Data().([]int)[0] = n
	lets := []struct {
		node *G.Node
		v    *tensor.Dense
	}{{p.Token, p.token}, {p.Position, p.position}, {p.Mask, p.mask}}
	for _, l := range lets {
		if err := G.Let(l.node, l.v); err != nil {
			return fmt.Errorf("append: feeding %s: %w", l.node.Name(), err)
		}
	}
	for i, b := range p.Blocks {
		if err := G.Let(b.Keys, p.keys[i]); err != nil {
			return fmt.Errorf("append: feeding %s: %w", b.Keys.Name(), err)
		}
		if err := G.Let(b.Values, p.values[i]); err != nil {
			return fmt.Errorf("append: feeding %s: %w", b.Values.Name(), err)
		}
	}
	p.vm.Reset() // without it RunAll silently runs nothing a second time
	run := p.vm.RunAll
	if p.inPlace != nil {
		run = p.inPlace
	}
	if err := run(); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	for i, b := range p.Blocks {
		if err := setRow(p.keys[i], n, b.NewKey); err != nil {
			return err
		}
		if err := setRow(p.values[i], n, b.NewValue); err != nil {
			return err
		}
	}
	setRange(p.mask, n, n+1, 0)
	p.tokens = append(p.tokens, token)
	return nil
}

// Close releases the machine.
func (p *CachedProgram) Close() error { return p.vm.Close() }

// setRange sets entries [from, to) of a float tensor to v.
func setRange(t *tensor.Dense, from, to int, v float64) {
	switch d := t.Data().(type) {
	case []float64:
		for i := from; i < to; i++ {
			d[i] = v
		}
	case []float32:
		for i := from; i < to; i++ {
			d[i] = float32(v)
		}
	}
}

// setRow copies the one-row value row into row i of the matrix t.
func setRow(t *tensor.Dense, i int, row G.Value) error {
	if row == nil {
		return fmt.Errorf("append: the graph produced no key or value")
	}
	switch d := t.Data().(type) {
	case []float64:
		src, ok := row.Data().([]float64)
		if !ok || len(src) != t.Shape()[1] {
			return fmt.Errorf("append: a cached row holds %T of %v", row.Data(), row.Shape())
		}
		copy(d[i*len(src):], src)
	case []float32:
		src, ok := row.Data().([]float32)
		if !ok || len(src) != t.Shape()[1] {
			return fmt.Errorf("append: a cached row holds %T of %v", row.Data(), row.Shape())
		}
		copy(d[i*len(src):], src)
	}
	return nil
}

// Float64sInto writes a node's value into dst as float64s, whatever its
// dtype, and returns dst (grown if too short): Float64s without the
// allocation, for a loop that reads the same node every run.
func Float64sInto(dst []float64, v G.Value) []float64 {
	switch x := v.Data().(type) {
	case []float64:
		return append(dst[:0], x...)
	case []float32:
		dst = dst[:0]
		for _, f := range x {
			dst = append(dst, float64(f))
		}
		return dst
	}
	return append(dst[:0], Float64s(v)...)
}
