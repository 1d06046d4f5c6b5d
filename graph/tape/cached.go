package tape

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph"
)

// CachedProgram is a CachedModel compiled for a TapeMachine, with
// its key/value cache: every block's keys and values of the tokens fed so
// far, at positions 0..Len()−1, in tensors that are the graph's cache
// inputs. Append feeds the next token; Truncate forgets the positions
// from some point on (their keys and values depend only on the tokens up
// to them, so the earlier ones stay valid). The cache allocates nothing
// per run; the tape and the fused ops' plumbing still make some 300 small
// objects per run (BenchmarkCachedToken), as they do for the window graph.
type CachedProgram struct {
	*graph.CachedModel
	vm      G.VM
	inPlace func() error // runs the tape in this goroutine; nil: vm.RunAll (see tape.go)

	token, position *tensor.Dense   // the one-element inputs
	mask            *tensor.Dense   // (1, context+1): always the mask of the valid rows
	keys, values    []*tensor.Dense // per block, (context, C): the cache itself
	tokens          []int           // the tokens whose keys and values are cached

	// The backing arrays of the tensors above, read once: Dense.Data
	// allocates on every call. newRows[2i], newRows[2i+1] are those of
	// block i's NewKey and NewValue, read again only if Read gives a new
	// value (it copies into the same one after the first run).
	tokenData, positionData []int
	maskData                any
	cacheData               []any // keys then values of block i at 2i, 2i+1
	newRows                 []rowSource
}

// rowSource is the backing array of one Read value.
type rowSource struct {
	seen G.Value
	data any
}

// CompileCached compiles the graph once; the cache starts empty.
func CompileCached(m *graph.CachedModel) (*CachedProgram, error) {
	T, C := m.Spec.Context, m.Spec.Embedding
	dt := m.Logits.Dtype()
	p := &CachedProgram{
		CachedModel: m,
		token:       tensor.New(tensor.Of(tensor.Int), tensor.WithShape(1)),
		position:    tensor.New(tensor.Of(tensor.Int), tensor.WithShape(1)),
		mask:        tensor.New(tensor.Of(dt), tensor.WithShape(1, T+1)),
		tokens:      make([]int, 0, T),
	}
	for range m.Blocks {
		k, v := tensor.New(tensor.Of(dt), tensor.WithShape(T, C)), tensor.New(tensor.Of(dt), tensor.WithShape(T, C))
		p.keys, p.values = append(p.keys, k), append(p.values, v)
		p.cacheData = append(p.cacheData, k.Data(), v.Data())
	}
	p.tokenData, p.positionData = p.token.Data().([]int), p.position.Data().([]int)
	p.maskData = p.mask.Data()
	p.newRows = make([]rowSource, 2*len(m.Blocks))
	setRange(p.maskData, 0, T, -1e9) // no valid row yet; entry T, the new position, stays 0
	type feed struct {
		node *G.Node
		v    *tensor.Dense
	}
	feeds := []feed{{m.Token, p.token}, {m.Position, p.position}, {m.Mask, p.mask}}
	for i, b := range m.Blocks {
		feeds = append(feeds, feed{b.Keys, p.keys[i]}, feed{b.Values, p.values[i]})
	}
	for _, l := range feeds {
		if err := G.Let(l.node, l.v); err != nil {
			return nil, fmt.Errorf("feeding %s: %w", l.node.Name(), err)
		}
	}
	p.vm, p.inPlace = newMachine(m.G, nil)
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
	setRange(p.maskData, n, p.Spec.Context, -1e9)
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
	// The inputs stay bound to the tensors CompileCached let them
	// to (Reset forgets registers, not bindings): writing into those
	// tensors is feeding the graph.
	p.tokenData[0], p.positionData[0] = token, n
	p.vm.Reset() // without it RunAll silently runs nothing a second time
	run := p.vm.RunAll
	if p.inPlace != nil {
		run = p.inPlace
	}
	if err := run(); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	C := p.Spec.Embedding
	for i, b := range p.Blocks {
		for j, row := range []G.Value{b.NewKey, b.NewValue} {
			if err := setRow(p.cacheData[2*i+j], n, p.newRows[2*i+j].of(row), C); err != nil {
				return err
			}
		}
	}
	setRange(p.maskData, n, n+1, 0)
	p.tokens = append(p.tokens, token)
	return nil
}

// Load replaces the cache with the keys and values a Prefill run
// computed for tokens (at positions 0..len(tokens)−1, its first rows):
// the next Append goes on at position len(tokens).
func (p *CachedProgram) Load(tokens []int, pf *Prefill) error {
	n, C := len(tokens), p.Spec.Embedding
	if n > p.Spec.Context || n > pf.SeqLen || len(pf.Keys) != len(p.Blocks) {
		return fmt.Errorf("load: %d tokens from a prefill of %d positions, %d blocks, into a cache of %d positions, %d blocks",
			n, pf.SeqLen, len(pf.Keys), p.Spec.Context, len(p.Blocks))
	}
	for i := range p.Blocks {
		for j, node := range []*G.Node{pf.Keys[i], pf.Values[i]} {
			src := node.Value().Data()
			for r := 0; r < n; r++ {
				if err := setRow(p.cacheData[2*i+j], r, sliceRows(src, r, C), C); err != nil {
					return err
				}
			}
		}
	}
	p.tokens = append(p.tokens[:0], tokens...)
	setRange(p.maskData, 0, n, 0)
	setRange(p.maskData, n, p.Spec.Context, -1e9)
	return nil
}

// sliceRows is row r of a (rows, C) float32 or float64 backing array.
func sliceRows(data any, r, C int) any {
	switch d := data.(type) {
	case []float32:
		return d[r*C : (r+1)*C]
	case []float64:
		return d[r*C : (r+1)*C]
	}
	return nil
}

// Close releases the machine.
func (p *CachedProgram) Close() error { return p.vm.Close() }

// of returns v's backing array, nil for no value.
func (r *rowSource) of(v G.Value) any {
	if v == nil {
		return nil
	}
	if v != r.seen {
		r.seen, r.data = v, v.Data()
	}
	return r.data
}

// setRange sets entries [from, to) of a float array to v.
func setRange(data any, from, to int, v float64) {
	switch d := data.(type) {
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

// setRow copies row, C values, into row i of the float array dst.
func setRow(dst any, i int, row any, C int) error {
	ok := false
	switch d := dst.(type) {
	case []float64:
		src, isF64 := row.([]float64)
		if ok = isF64 && len(src) == C; ok {
			copy(d[i*C:(i+1)*C], src)
		}
	case []float32:
		src, isF32 := row.([]float32)
		if ok = isF32 && len(src) == C; ok {
			copy(d[i*C:(i+1)*C], src)
		}
	}
	if !ok {
		return fmt.Errorf("append: the graph gave a key or value of %T, want %d of %T", row, C, dst)
	}
	return nil
}
