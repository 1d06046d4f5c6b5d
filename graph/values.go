package graph

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// Float64s returns a copy of a node's value as float64s, whatever its dtype.
func Float64s(v G.Value) []float64 {
	switch x := v.Data().(type) {
	case []float64:
		return append([]float64(nil), x...)
	case []float32:
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out
	case float64:
		return []float64{x}
	case float32:
		return []float64{float64(x)}
	}
	return nil
}

// SetFloat64s overwrites a parameter's value with data (converted to its dtype).
func (p *Param) SetFloat64s(data []float64) error {
	switch d := p.Value().Data().(type) {
	case []float64:
		if len(d) != len(data) {
			return fmt.Errorf("%s: %d values for %d entries", p.Name, len(data), len(d))
		}
		copy(d, data)
	case []float32:
		if len(d) != len(data) {
			return fmt.Errorf("%s: %d values for %d entries", p.Name, len(data), len(d))
		}
		for i, v := range data {
			d[i] = float32(v)
		}
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

// Matrix is one head's n×n attention weights, row-major: row i is the
// position that looks, column j the position it looks at. A translation
// model's cross-attention is N rows (target positions) by K columns
// (source positions); K = 0 means square.
type Matrix struct {
	N int
	K int
	W []float64
}

// Cols is the number of columns: the positions looked at.
func (m Matrix) Cols() int {
	if m.K == 0 {
		return m.N
	}
	return m.K
}

// At is the weight position i gives position j.
func (m Matrix) At(i, j int) float64 { return m.W[i*m.Cols()+j] }
