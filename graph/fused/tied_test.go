package fused

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// TestTiedGradientIsTheSum: the tied embedding's gradient, the lookup's
// contribution added into the output layer's ∂W in place, has the bits of
// the sum it replaces — the lookup's own gradient (embeddingBackwardTok)
// added to ∂W entry by entry — for ids repeated, ids absent and entries of
// −0 in ∂W and in dy, on 1 to 3 threads, twice in a row (a run leaves no
// id behind for the next).
func TestTiedGradientIsTheSum(t *testing.T) {
	testTiedGradient[float32](t)
	testTiedGradient[float64](t)
}

func testTiedGradient[F gemm.Float](t *testing.T) {
	defer SplitEverything()()
	const V, C, rows = 11, 40, 24
	rng := rand.New(rand.NewPCG(7, 8))
	random := func(n int) []F {
		x := make([]F, n)
		for i := range x {
			switch rng.IntN(6) {
			case 0:
				x[i] = F(math.Copysign(0, -1))
			case 1:
				x[i] = 0
			default:
				x[i] = F(2*rng.Float64() - 1)
			}
		}
		return x
	}
	for _, threads := range []int{1, 2, 3} {
		tm := newTeam(threads)
		st := &tiedState{}
		for run := range 2 {
			ids := make([]int, rows)
			for i := range ids {
				ids[i] = rng.IntN(V - 3) // the last 3 ids never appear
			}
			w, dy := random(V*C), random(rows*C)
			p := opParams{Width: C, Rows: rows}
			lookup := make([]F, V*C)
			embeddingBackwardTok(&args[F]{in: [][]F{dy}, ids: ids, out: lookup, t: tm, p: &p})
			want := make([]F, V*C)
			for j := range want {
				want[j] = w[j] + lookup[j]
			}
			got := append([]F(nil), w...)
			tiedEmbeddingGrad(&args[F]{in: [][]F{got, dy}, ids: ids, out: got, t: tm, p: &p, tied: st})
			for j := range want {
				if math.Float64bits(float64(got[j])) != math.Float64bits(float64(want[j])) {
					t.Fatalf("%T, %d threads, run %d: entry %d (row %d) is %v, the sum's %v", F(0), threads, run, j, j/C, got[j], want[j])
				}
			}
		}
	}
}
