package tape

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph"
)

// TranslationStepProgram is a TranslationStep compiled for a TapeMachine,
// with its caches: Start gives it a sentence (its padding mask and the
// encoder output's cross-attention keys and values), then each Step feeds
// every row's newest word and caches the self-attention keys and values
// it computes, so that the next Step costs one position again. Reorder
// follows beam search: a row continues another row's hypothesis and takes
// its cache.
type TranslationStepProgram struct {
	*graph.TranslationStep
	vm      G.VM
	inPlace func() error

	tokens, positions, count *tensor.Dense
	mask, srcMask            *tensor.Dense
	keys, values             []*tensor.Dense // per block, (Rows·TgtLen, C): the cache
	crossKeys, crossValues   []*tensor.Dense // per block, (Rows·SrcLen, C)
	n                        int             // cached positions: the position the next Step takes
	newRows                  []rowSource     // block i's NewKey, NewValue at 2i, 2i+1
	scratch64                []float64       // one block's cache, for Reorder
	scratch32                []float32
}

// CompileTranslationStep compiles the graph once.
func CompileTranslationStep(m *graph.TranslationStep) (*TranslationStepProgram, error) {
	R, S, T, C := m.Rows, m.SrcLen, m.TgtLen, m.Spec.Embedding
	dt := m.Logits.Dtype()
	floats := func(shape ...int) *tensor.Dense { return tensor.New(tensor.Of(dt), tensor.WithShape(shape...)) }
	ints := func(n int) *tensor.Dense { return tensor.New(tensor.Of(tensor.Int), tensor.WithShape(n)) }
	p := &TranslationStepProgram{TranslationStep: m,
		tokens: ints(R), positions: ints(R), count: ints(1), mask: floats(1, T+1), srcMask: floats(R, S),
		newRows: make([]rowSource, 2*len(m.Blocks))}
	type feed struct {
		node *G.Node
		v    *tensor.Dense
	}
	feeds := []feed{{m.Tokens, p.tokens}, {m.Positions, p.positions}, {m.Count, p.count},
		{m.Mask, p.mask}, {m.SrcMask, p.srcMask}}
	for _, b := range m.Blocks {
		k, v, ck, cv := floats(R*T, C), floats(R*T, C), floats(R*S, C), floats(R*S, C)
		p.keys, p.values = append(p.keys, k), append(p.values, v)
		p.crossKeys, p.crossValues = append(p.crossKeys, ck), append(p.crossValues, cv)
		feeds = append(feeds, feed{b.Keys, k}, feed{b.Values, v}, feed{b.CrossKeys, ck}, feed{b.CrossValues, cv})
	}
	for _, f := range feeds {
		if err := G.Let(f.node, f.v); err != nil {
			return nil, fmt.Errorf("feeding %s: %w", f.node.Name(), err)
		}
	}
	p.vm, p.inPlace = newMachine(m.G, nil)
	return p, nil
}

// Start begins a sentence (or one per row) with an empty cache: src is
// the Rows·SrcLen source ids (for the padding mask), crossKeys and
// crossValues each block's cross-attention keys and values of the
// encoder's output, Rows·SrcLen·C values (float64s: the encoder graph's
// values, whatever its dtype).
func (p *TranslationStepProgram) Start(src []int, crossKeys, crossValues [][]float64) error {
	R, S, C := p.Rows, p.SrcLen, p.Spec.Embedding
	if len(src) != R*S {
		return fmt.Errorf("start: %d source ids for a step graph of %d", len(src), R*S)
	}
	if len(crossKeys) != len(p.Blocks) || len(crossValues) != len(p.Blocks) {
		return fmt.Errorf("start: cross-attention keys of %d blocks for a decoder of %d", len(crossKeys), len(p.Blocks))
	}
	for i := range p.Blocks {
		for _, kv := range []struct {
			dst *tensor.Dense
			src []float64
		}{{p.crossKeys[i], crossKeys[i]}, {p.crossValues[i], crossValues[i]}} {
			if len(kv.src) != R*S*C {
				return fmt.Errorf("start: %d cross-attention values for a step graph of %d", len(kv.src), R*S*C)
			}
			copyFloats(kv.dst.Data(), kv.src)
		}
	}
	mask := make([]float64, R*S)
	for i, id := range src {
		if id == graph.PAD {
			mask[i] = graph.MaskValue
		}
	}
	copyFloats(p.srcMask.Data(), mask)
	p.n = 0
	setRange(p.mask.Data(), 0, p.TgtLen, graph.MaskValue) // no valid row yet; the new position's entry stays 0
	return nil
}

// Len is the number of cached positions: the position the next Step takes.
func (p *TranslationStepProgram) Len() int { return p.n }

// Step runs the graph for every row's newest word at position Len(),
// leaves the next-word logits in Logits (Rows, V) and caches the keys and
// values. At most TgtLen positions fit.
func (p *TranslationStepProgram) Step(tokens []int) error {
	n, R, T, C := p.n, p.Rows, p.TgtLen, p.Spec.Embedding
	if n >= T {
		return fmt.Errorf("step: the cache is full (%d positions)", n)
	}
	if len(tokens) != R {
		return fmt.Errorf("step: %d words for a step graph of %d rows", len(tokens), R)
	}
	for _, id := range tokens {
		if id < 0 || id >= p.Spec.TgtVocab {
			return fmt.Errorf("step: word id %d outside the vocabulary of %d", id, p.Spec.TgtVocab)
		}
	}
	copy(p.tokens.Data().([]int), tokens)
	pos := p.positions.Data().([]int)
	for r := range pos {
		pos[r] = n
	}
	p.count.Data().([]int)[0] = n
	p.vm.Reset() // without it RunAll silently runs nothing a second time
	run := p.vm.RunAll
	if p.inPlace != nil {
		run = p.inPlace
	}
	if err := run(); err != nil {
		return fmt.Errorf("step: %w", err)
	}
	for i, b := range p.Blocks {
		for j, pair := range []struct {
			cache *tensor.Dense
			row   G.Value
		}{{p.keys[i], b.NewKey}, {p.values[i], b.NewValue}} {
			rows := p.newRows[2*i+j].of(pair.row)
			for r := range R {
				if err := setRow(pair.cache.Data(), r*T+n, sliceRow(rows, r, C), C); err != nil {
					return err
				}
			}
		}
	}
	setRange(p.mask.Data(), n, n+1, 0)
	p.n++
	return nil
}

// Reorder makes row r's cache a copy of row from[r]'s, for every row:
// beam search keeps the best continuations, and the hypothesis a row
// continues may have been another row's.
func (p *TranslationStepProgram) Reorder(from []int) error {
	R, T, C := p.Rows, p.TgtLen, p.Spec.Embedding
	if len(from) != R {
		return fmt.Errorf("reorder: %d rows for a step graph of %d", len(from), R)
	}
	same := true
	for r, f := range from {
		if f < 0 || f >= R {
			return fmt.Errorf("reorder: row %d of %d", f, R)
		}
		same = same && f == r
	}
	if same {
		return nil
	}
	n := p.n * C // the valid part of one row's cache
	for _, caches := range [][]*tensor.Dense{p.keys, p.values} {
		for _, c := range caches {
			switch d := c.Data().(type) {
			case []float64:
				p.scratch64 = reorderRows(d, p.scratch64, from, T*C, n)
			case []float32:
				p.scratch32 = reorderRows(d, p.scratch32, from, T*C, n)
			}
		}
	}
	return nil
}

// Close releases the machine.
func (p *TranslationStepProgram) Close() error { return p.vm.Close() }

// reorderRows makes block r of data (blocks of size stride, the first n
// values used) a copy of block from[r], through scratch.
func reorderRows[F float32 | float64](data, scratch []F, from []int, stride, n int) []F {
	scratch = append(scratch[:0], data...)
	for r, f := range from {
		copy(data[r*stride:r*stride+n], scratch[f*stride:f*stride+n])
	}
	return scratch
}

// sliceRow is row r of a float array of rows C wide.
func sliceRow(data any, r, C int) any {
	switch d := data.(type) {
	case []float64:
		return d[r*C : (r+1)*C]
	case []float32:
		return d[r*C : (r+1)*C]
	}
	return data
}

// copyFloats copies float64 values into a float64 or float32 array.
func copyFloats(dst any, src []float64) {
	switch d := dst.(type) {
	case []float64:
		copy(d, src)
	case []float32:
		for i, v := range src {
			d[i] = float32(v)
		}
	}
}
