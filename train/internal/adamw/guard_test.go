package adamw

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/gptg/gptg/internal/guardmem"
)

// TestGuardPages runs Update (float32), SumSquares and Scale with every
// row against an inaccessible page, after its last element and then
// before its first, at every length of guardmem.Lengths, on each family
// of loops this machine runs (on AVX-512 machines the 8-wide update, then
// the 4-wide one alone): any access outside the rows faults and fails the
// test. The results must equal those on ordinary memory, bit for bit.
func TestGuardPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	c := Coefs{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Decay: 1 - 1e-4, StepSize: 1e-3, InvSqrtBias2: 1.3}
	families := []bool{have512}
	if have512 {
		families = append(families, false)
	}
	defer func(h bool) { have512 = h }(have512)
	for _, wide := range families {
		have512 = wide
		for _, n := range guardmem.Lengths {
			rows := make([][]float32, 4) // w, g, m, v
			for r := range rows {
				rows[r] = make([]float32, n)
				for i := range n {
					rows[r][i] = float32(rng.NormFloat64())
				}
			}
			rows[3] = slices.Clone(rows[3])
			for i := range rows[3] {
				rows[3][i] *= rows[3][i] // v ≥ 0
			}
			run := func(w, g, m, v []float32) float64 {
				Update(w, g, m, v, c)
				s := SumSquares(g)
				Scale(g, 0.5)
				return s
			}
			want := make([][]float32, 4)
			for r := range rows {
				want[r] = slices.Clone(rows[r])
			}
			wantSum := run(want[0], want[1], want[2], want[3])
			for _, place := range guardmem.Placements {
				label := fmt.Sprintf("AVX-512 %v, n %d, %v", wide, n, place)
				got := make([][]float32, 4)
				for r := range rows {
					got[r] = guardmem.Copy(t, place, rows[r])
				}
				var sum float64
				guardmem.Run(t, label, func() { sum = run(got[0], got[1], got[2], got[3]) })
				for r := range rows {
					if !slices.EqualFunc(got[r], want[r], same) {
						t.Fatalf("%s: row %d differs between guarded and ordinary memory", label, r)
					}
				}
				if math.Float64bits(sum) != math.Float64bits(wantSum) {
					t.Fatalf("%s: SumSquares %v on guarded memory, %v on ordinary memory", label, sum, wantSum)
				}
			}
		}
	}
}

// TestGuardPagesFixedOutputs: the kernels read one step's Coefs and
// sumSquares32x8 adds into an [8]float64, both in Go memory of fixed
// size; here each ends at (then starts after) an inaccessible page, so
// that reading past the Coefs or writing past the sums faults. The
// results must be the Go loops', bit for bit.
func TestGuardPagesFixedOutputs(t *testing.T) {
	if !haveAsm {
		t.Log("no AVX2 or NEON here (or purego): only the Go loops exist")
		return
	}
	const n = 40
	c := Coefs{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Decay: 1 - 1e-4, StepSize: 1e-3, InvSqrtBias2: 1.3}
	g0 := make([]float32, n)
	rng := rand.New(rand.NewPCG(17, 18))
	var want [8]float64
	for i := range g0 {
		g0[i] = float32(rng.NormFloat64())
		want[i%8] += float64(float64(g0[i]) * float64(g0[i]))
	}
	// The update on ordinary memory, through the Go loop.
	wantW, wantM, wantV := slices.Clone(g0), make([]float32, n), make([]float32, n)
	update(wantW, g0, wantM, wantV, &c)
	coefs := unsafe.Sizeof(c) / 8
	for _, place := range guardmem.Placements {
		g, s := guardmem.Copy(t, place, g0), guardmem.Copy(t, place, make([]float64, 8))
		w, m, v := guardmem.Copy(t, place, g0), guardmem.Copy(t, place, make([]float32, n)), guardmem.Copy(t, place, make([]float32, n))
		cg := (*Coefs)(unsafe.Pointer(&guardmem.Copy(t, place, make([]float64, coefs))[0]))
		*cg = c
		w8, m8, v8 := guardmem.Copy(t, place, g0), guardmem.Copy(t, place, make([]float32, n)), guardmem.Copy(t, place, make([]float32, n))
		guardmem.Run(t, place.String(), func() {
			sumSquares32x8(&g[0], n, (*[8]float64)(s))
			update32x4(&w[0], &g[0], &m[0], &v[0], n, cg)
			if have512 {
				update32AVX512(&w8[0], &g[0], &m8[0], &v8[0], n, cg)
			}
		})
		for i, x := range s {
			if math.Float64bits(x) != math.Float64bits(want[i]) {
				t.Fatalf("%v: partial sum %d = %v, want %v", place, i, x, want[i])
			}
		}
		if !slices.Equal(w, wantW) || !slices.Equal(m, wantM) || !slices.Equal(v, wantV) {
			t.Fatalf("%v: the 4-wide update differs from the Go loop's", place)
		}
		if have512 && (!slices.Equal(w8, wantW) || !slices.Equal(m8, wantM) || !slices.Equal(v8, wantV)) {
			t.Fatalf("%v: the 8-wide update differs from the Go loop's", place)
		}
	}
}
