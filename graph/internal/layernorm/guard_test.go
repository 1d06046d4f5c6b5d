package layernorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gptg/gptg/internal/guardmem"
)

// TestGuardPages runs every kernel with each row (x, w, b, dy and the
// outputs y, dx, dw) against an inaccessible page, after its last element
// and then before its first, at every length of guardmem.Lengths: the
// assembly touching anything outside the rows faults and fails the test.
// The results must equal those on ordinary memory, bit for bit.
func TestGuardPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range guardmem.Lengths {
		r := randomRow(rng, n)
		stats, y, yNoBias, dx, dw := outputs(r, haveAsm)
		for _, place := range guardmem.Placements {
			label := fmt.Sprintf("n %d, %v", n, place)
			g := row{guardmem.Copy(t, place, r.x), guardmem.Copy(t, place, r.w), guardmem.Copy(t, place, r.b),
				guardmem.Copy(t, place, r.dy), guardmem.Copy(t, place, r.dw)}
			gy, gyNoBias, gdx := guardmem.Copy(t, place, y), guardmem.Copy(t, place, y), guardmem.Copy(t, place, y)
			var mean, rstd float64
			guardmem.Run(t, label, func() {
				mean, rstd = RowStats(g.x, 1e-5)
				Normalize(gy, g.x, g.w, g.b, mean, rstd)
				Normalize(gyNoBias, g.x, g.w, nil, mean, rstd)
				BackwardX(gdx, g.x, g.w, g.dy, mean, rstd)
				AccumulateW(g.dw, g.x, g.dy, mean, rstd)
			})
			if math.Float64bits(mean) != math.Float64bits(stats[0]) || math.Float64bits(rstd) != math.Float64bits(stats[1]) {
				t.Fatalf("%s: mean, rstd %v, %v on guarded memory, %v on ordinary memory", label, mean, rstd, stats)
			}
			for _, o := range []struct {
				name      string
				got, want []float32
			}{{"y", gy, y}, {"y without bias", gyNoBias, yNoBias}, {"dx", gdx, dx}, {"dw", g.dw, dw}} {
				if !slices.EqualFunc(o.got, o.want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Fatalf("%s: %s differs between guarded and ordinary memory", label, o.name)
				}
			}
		}
	}
}
