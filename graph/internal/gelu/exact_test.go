package gelu

import (
	"math"
	"runtime"
	"testing"
)

// exactFloat64 is the exact GELU and its derivative in float64 with
// math.Erf, as package graph computes them for float64 graphs.
func exactFloat64(x float64) (y, d float64) {
	cdf := 0.5 * (1 + math.Erf(x/math.Sqrt2))
	return x * cdf, cdf + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
}

// TestExactAgainstFloat64 compares both implementations (assembly where
// the CPU has it, and the Go loops) with the float64 exact GELU over
// [−12, 12], the saturated tails included, on a length that is not a
// multiple of 8. The bounds: erf is within 3e-7 of math.Erf (about 5 ulps
// of a float32 near ±1, the worst near |x/√2| = 3.8), so Φ = ½(1 + erf)
// within 1.5e-7 and x·Φ within 1.5e-7·|x|; on top of that the result is
// rounded to float32 (2 ulps allowed, 2.4e-7 relative). Measured worst:
// 1.6e-7·(|x| + 2|y|) for gelu, 1.6e-7·(1 + 2|gelu′|) for dy·gelu′ (x near
// −5, where 1 + erf cancels; PyTorch's float32 formula cancels there too).
func TestExactAgainstFloat64(t *testing.T) {
	const n = 24*4096 + 5
	x, dy := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(-12 + 24*float64(i)/n)
		dy[i] = float32(1 + math.Sin(float64(i)))
	}
	for _, asm := range implementations(t) {
		haveAsm = asm
		y, dx := make([]float32, n), make([]float32, n)
		ExactForward(y, x)
		ExactBackward(dx, x, dy)
		for i, xi := range x {
			wy, wd := exactFloat64(float64(xi))
			wdx := float64(dy[i]) * wd
			if e := math.Abs(float64(y[i]) - wy); e > 2e-7*(math.Abs(float64(xi))+2*math.Abs(wy)) {
				t.Fatalf("asm %v: gelu(%v) = %v, want %v", asm, xi, y[i], wy)
			}
			if e := math.Abs(float64(dx[i]) - wdx); e > 2e-7*math.Abs(float64(dy[i]))*(1+2*math.Abs(wd)) {
				t.Fatalf("asm %v: dy·gelu′(%v) = %v, want %v", asm, xi, dx[i], wdx)
			}
		}
	}
}

// implementations lists the ways this machine can compute (false: the Go
// loops, true: assembly) and restores haveAsm when the test ends.
func implementations(t *testing.T) []bool {
	t.Cleanup(func(h bool) func() { return func() { haveAsm = h } }(haveAsm))
	impls := []bool{false}
	if haveAsm {
		impls = append(impls, true)
	}
	return impls
}

// TestExactSaturates: far out, the exact GELU is exactly 0 or x and its
// derivative exactly 0 or 1, as in float64 (e^(−x²/2) underflows past
// |x| = 13.25, erf is ±1 past |x| = 5.42).
func TestExactSaturates(t *testing.T) {
	checkSaturates(t, ExactForward, ExactBackward, []float32{-1e30, -30, -14, 14, 30, 1e30, -14, 14, -30})
}

// TestErf: erf within 6 float32 ulps of math.Erf, never beyond ±1.
func TestErf(t *testing.T) {
	for z := float32(-5); z < 5; z += 1.0 / 4096 {
		got, want := erf(z), math.Erf(float64(z))
		ulp := float64(math.Nextafter32(float32(math.Abs(want)), 2) - float32(math.Abs(want)))
		if math.Abs(float64(got)-want) > 6*ulp || got > 1 || got < -1 {
			t.Fatalf("erf(%v) = %v, want %v", z, got, want)
		}
	}
}

// TestExactAsmMatchesGo: the assembly's copy of expf.Exp (with FMA)
// against expf.Exp, as the Go loop calls it. Left of x = −5.42 erf is −1,
// Φ exactly 0, and gelu′ = x·e^(−x²/2)/√(2π) the same two roundings on both
// paths, so the two differ only by the exponential's ulps: at most 2
// (measured 2 on this grid; each is within 2 of e^x, an FMA can move n by
// one and r by ln2), down to where both are 0 (from x = −13.22 on). Over
// the whole range, erf evaluated with and without FMA too, within 3e-7
// (2.5 ulps of 1; gelu′ crosses 0, so relative ulps mean nothing there).
func TestExactAsmMatchesGo(t *testing.T) {
	if !haveAsm {
		t.Log("no AVX2/FMA or NEON here (or purego): only the Go loop exists")
		return
	}
	const maxExpULPs = 2
	var x []float32
	for v := float32(-14); v < 14; v += 1.0 / 1024 {
		x = append(x, v)
	}
	one := make([]float32, len(x))
	for i := range one {
		one[i] = 1
	}
	asm, pure := make([]float32, len(x)), make([]float32, len(x))
	ExactBackward(asm, x, one)
	t.Cleanup(func() { haveAsm = true })
	haveAsm = false
	ExactBackward(pure, x, one)
	worstTail, worst := 0, 0.0
	for i, v := range x {
		if v < -5.5 {
			worstTail = max(worstTail, ulps(asm[i], pure[i]))
		}
		worst = max(worst, math.Abs(float64(asm[i])-float64(pure[i])))
		if v < -13.22 && (asm[i] != 0 || pure[i] != 0) {
			t.Errorf("gelu′(%v): asm %v, Go %v, want both 0", v, asm[i], pure[i])
		}
	}
	if worstTail > maxExpULPs || worst > 3e-7 {
		t.Errorf("asm and Go gelu′ differ by up to %d ulps left of −5.5 (want ≤ %d), %.3g overall (want ≤ 3e-7)", worstTail, maxExpULPs, worst)
	}
	if runtime.GOARCH == "arm64" {
		exactBitsMatchGo(t, append(x, -1e30, 1e30, -20, 20, 0, -1e-30))
	}
}

// exactBitsMatchGo: on arm64 the NEON loops fuse exactly where the Go
// compiler fuses (exact_arm64.s), so gelu and dy·gelu′ have the Go loops'
// bits, e^(−x²/2) included.
func exactBitsMatchGo(t *testing.T, x []float32) {
	t.Helper()
	dy := make([]float32, len(x))
	for i := range dy {
		dy[i] = float32(1 + math.Sin(float64(i)))
	}
	var y, dx [2][]float32
	for k, asm := range []bool{false, true} {
		haveAsm = asm
		y[k], dx[k] = make([]float32, len(x)), make([]float32, len(x))
		ExactForward(y[k], x)
		ExactBackward(dx[k], x, dy)
	}
	for i, v := range x {
		if math.Float32bits(y[0][i]) != math.Float32bits(y[1][i]) || math.Float32bits(dx[0][i]) != math.Float32bits(dx[1][i]) {
			t.Fatalf("x = %v: Go gelu %v, dy·gelu′ %v; assembly %v, %v", v, y[0][i], dx[0][i], y[1][i], dx[1][i])
		}
	}
}

// ulps is how many float32 values lie between a and b (same sign assumed).
func ulps(a, b float32) int {
	d := int64(math.Float32bits(a)&0x7fffffff) - int64(math.Float32bits(b)&0x7fffffff)
	return int(max(d, -d))
}

// BenchmarkGELU: ns per element of both GELU forms, forward and backward,
// over 32k elements (as BenchmarkForward): the exact form should cost
// about what the tanh form does.
func BenchmarkGELU(b *testing.B) {
	const n = 128 * 256
	x, y, dy := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(i%200-100) / 25
		dy[i] = 1
	}
	for _, k := range []struct {
		name string
		f    func()
	}{
		{"tanh/forward", func() { Forward(y, x) }},
		{"tanh/backward", func() { Backward(y, x, dy) }},
		{"exact/forward", func() { ExactForward(y, x) }},
		{"exact/backward", func() { ExactBackward(y, x, dy) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				k.f()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/element")
		})
	}
}

// TestExactAVX512MatchesAVX2: the sixteen-lane loops give the eight-lane
// loops' bits, forward and backward, over the whole range, far out, at
// zeros, infinities and subnormals, and with lengths that leave an
// eight-lane and a Go tail.
func TestExactAVX512MatchesAVX2(t *testing.T) {
	if !have512 {
		t.Log("no AVX-512F here (or purego): only the AVX2 and Go loops exist")
		return
	}
	var x []float32
	for v := float32(-14); v < 14; v += 1.0 / 1024 {
		x = append(x, v)
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), 1e-40, -1e-40, 3.8325, -3.8325, 13.25, -13.25, 100, -100, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)))
	dy := make([]float32, len(x))
	for i := range dy {
		dy[i] = float32(i%7) - 2.5
	}
	t.Cleanup(func() { have512 = true })
	for _, n := range []int{len(x), len(x) - 3, len(x) - 9, 31, 16, 15} {
		xs, dys := x[len(x)-n:], dy[len(x)-n:]
		y16, y8 := make([]float32, n), make([]float32, n)
		d16, d8 := make([]float32, n), make([]float32, n)
		have512 = true
		ExactForward(y16, xs)
		ExactBackward(d16, xs, dys)
		have512 = false
		ExactForward(y8, xs)
		ExactBackward(d8, xs, dys)
		for i := range xs {
			if math.Float32bits(y16[i]) != math.Float32bits(y8[i]) || math.Float32bits(d16[i]) != math.Float32bits(d8[i]) {
				t.Fatalf("n %d, x = %v: AVX-512 gelu %v, gelu′·dy %v; AVX2 %v, %v", n, xs[i], y16[i], d16[i], y8[i], d8[i])
			}
		}
	}
}
