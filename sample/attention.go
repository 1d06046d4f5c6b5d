package sample

import "github.com/gptg/gptg/graph"

// Matrix is one head's attention weights (graph.Matrix).
type Matrix = graph.Matrix

// Attention runs the model on ids (at most the context; the caller keeps
// the last ones) and returns maps[b][h], the weights of block b, head h
// over the len(ids) real positions. A causal model runs a padded
// full-context graph; its padding rows and columns are cut off. gptg
// attention draws these numbers and gptg serve shows them.
func (s *Sampler) Attention(ids []int) ([][]Matrix, error) {
	p, n, err := s.Forward(ids)
	if err != nil {
		return nil, err
	}
	H, L := s.Model.Spec.Heads, p.SeqLen
	maps := make([][]Matrix, len(p.Attention))
	for b, node := range p.Attention {
		w := graph.Float64s(node.Value()) // (heads, L, L) for batch 1
		for h := 0; h < H; h++ {
			mat := Matrix{N: n, W: make([]float64, n*n)}
			for i := 0; i < n; i++ {
				copy(mat.W[i*n:(i+1)*n], w[(h*L+i)*L:(h*L+i)*L+n])
			}
			maps[b] = append(maps[b], mat)
		}
	}
	return maps, nil
}
