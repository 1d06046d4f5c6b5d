package sample

import (
	"math"

	"github.com/gptg/gptg/graph"
)

// Matrix is one head's attention weights (graph.Matrix).
type Matrix = graph.Matrix

// HeadStats sums up what one head does over a text in two numbers, each
// the mean over the positions that look (the rows of its map):
//   - Entropy, in bits, of a row's weights: 0 when a position looks at one
//     position only, log2(k) when it spreads evenly over k of them;
//   - Distance, the weighted mean of |i − j| over a row: how many positions
//     back (or forth, without the causal mask) a position looks.
//
// A head of entropy near 0 and distance near 0 looks at its own token; near
// 0 and 1, at the one before; a high entropy with a distance near half the
// position averages everything it sees.
type HeadStats struct {
	Entropy  float64 `json:"entropy"`
	Distance float64 `json:"distance"`
}

// Stats is the HeadStats of one head's map.
func Stats(m Matrix) HeadStats {
	var acc statsAcc
	cols := m.Cols()
	for i := 0; i < m.N; i++ {
		acc.row64(i, m.W[i*cols:(i+1)*cols])
	}
	return acc.stats()
}

// statsAcc adds up the rows of one head: Stats, and the streaming path of
// AttentionHeads, which reads the graph's float32 rows without copying them.
type statsAcc struct {
	rows              int
	entropy, distance float64
}

func (a *statsAcc) add(i, j int, w float64) {
	if w > 0 {
		a.entropy -= w * math.Log2(w)
	} else if w != 0 || math.IsNaN(w) {
		a.entropy = math.NaN() // a diverged model's weights: no number to show
	}
	a.distance += w * math.Abs(float64(i-j))
}

func (a *statsAcc) row64(i int, row []float64) {
	for j, w := range row {
		a.add(i, j, w)
	}
	a.rows++
}

func (a *statsAcc) row32(i int, row []float32) {
	for j, w := range row {
		a.add(i, j, float64(w))
	}
	a.rows++
}

func (a *statsAcc) stats() HeadStats {
	if a.rows == 0 {
		return HeadStats{}
	}
	return HeadStats{Entropy: a.entropy / float64(a.rows), Distance: a.distance / float64(a.rows)}
}

// Attention runs the model on ids (at most the context; the caller keeps
// the last ones) and returns maps[b][h], the weights of block b, head h
// over the len(ids) real positions. A causal model runs a padded
// full-context graph; its padding rows and columns are cut off. gptg
// attention draws these numbers and gptg serve shows them.
func (s *Sampler) Attention(ids []int) ([][]Matrix, error) {
	_, maps, err := s.AttentionHeads(ids, func(int, int) bool { return true })
	return maps, err
}

// AttentionHeads runs the model on ids as Attention does and returns every
// block's and head's HeadStats, stats[b][h], and the maps of only the heads
// keep asks for (maps[b][h] is the zero Matrix for the others). The stats
// are read block by block off the graph's own weights, so that a 12 × 12
// model over 1,024 tokens costs the memory of the maps kept, not of all
// 144 (1.2 GB as float64).
func (s *Sampler) AttentionHeads(ids []int, keep func(b, h int) bool) (stats [][]HeadStats, maps [][]Matrix, err error) {
	p, n, err := s.Forward(ids)
	if err != nil {
		return nil, nil, err
	}
	H, L := s.Model.Spec.Heads, p.SeqLen
	stats = make([][]HeadStats, len(p.Attention))
	maps = make([][]Matrix, len(p.Attention))
	for b, node := range p.Attention {
		stats[b] = make([]HeadStats, H)
		maps[b] = make([]Matrix, H)
		var w32 []float32
		var w64 []float64
		switch d := node.Value().Data().(type) { // (heads, L, L) for batch 1
		case []float32:
			w32 = d
		case []float64:
			w64 = d
		default:
			w64 = graph.Float64s(node.Value())
		}
		for h := 0; h < H; h++ {
			var acc statsAcc
			var mat Matrix
			if keep(b, h) {
				mat = Matrix{N: n, W: make([]float64, n*n)}
			}
			for i := 0; i < n; i++ {
				at := (h*L + i) * L
				if w32 != nil {
					acc.row32(i, w32[at:at+n])
				} else {
					acc.row64(i, w64[at:at+n])
				}
				if mat.W == nil {
					continue
				}
				dst := mat.W[i*n : (i+1)*n]
				if w32 != nil {
					for j, v := range w32[at : at+n] {
						dst[j] = float64(v)
					}
				} else {
					copy(dst, w64[at:at+n])
				}
			}
			stats[b][h] = acc.stats()
			maps[b][h] = mat
		}
	}
	return stats, maps, nil
}
