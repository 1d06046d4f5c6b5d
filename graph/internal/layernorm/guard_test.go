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

// TestGuardPagesFixedOutputs: the sums' kernels add into fixed-size
// arrays in Go ([8]float64, [16]float64); here each array and the rows
// end at (then start after) an inaccessible page, so that a kernel
// touching more than the array faults. The sums must be the Go loops'
// partial sums, bit for bit.
func TestGuardPagesFixedOutputs(t *testing.T) {
	if !haveAsm {
		t.Log("no AVX2 or NEON here (or purego): only the Go loops exist")
		return
	}
	const n, mean, rstd = 40, 3.0, 0.5
	r := randomRow(rand.New(rand.NewPCG(13, 14)), n)
	var want [24]float64 // sums, squared deviations, then gradient sums
	for i := range n {
		d := float64(r.x[i]) - mean
		g := float64(float64(r.dy[i]) * float64(r.w[i]))
		want[i%8] += float64(r.x[i])
		want[8+i%8] += float64(d * d)
		want[16+i%8] += g
	}
	for _, place := range guardmem.Placements {
		x, w, dy := guardmem.Copy(t, place, r.x), guardmem.Copy(t, place, r.w), guardmem.Copy(t, place, r.dy)
		s, sq, gs := guardmem.Copy(t, place, make([]float64, 8)), guardmem.Copy(t, place, make([]float64, 8)), guardmem.Copy(t, place, make([]float64, 16))
		guardmem.Run(t, place.String(), func() {
			sums8(&x[0], n, (*[8]float64)(s))
			squaredDeviations8(&x[0], n, mean, (*[8]float64)(sq))
			gradSums8(&x[0], &w[0], &dy[0], n, mean, rstd, (*[16]float64)(gs))
		})
		got := append(append(slices.Clone(s), sq...), gs[:8]...)
		for i, v := range got {
			if math.Float64bits(v) != math.Float64bits(want[i]) {
				t.Fatalf("%v: partial sum %d = %v, want %v", place, i, v, want[i])
			}
		}
	}
}
