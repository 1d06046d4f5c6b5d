package gelu

import (
	"math"
	"runtime"
	"testing"

	"github.com/gptg/gptg/internal/armwords"
)

// exact is GELU and its derivative in float64 with math.Tanh.
func exact(x float64) (y, d float64) {
	t := math.Tanh(c * (x + a*x*x*x))
	return 0.5 * x * (1 + t), 0.5 * (1 + t + x*(1-t*t)*c*(1+3*a*x*x))
}

// TestAgainstFloat64 compares both implementations (assembly where the CPU
// has it, and the Go loops) with float64 GELU over [−12, 12], the saturated
// tails included, and checks a length that is not a multiple of 8. Besides
// a relative 1e-6, the bounds allow for what float32 cannot resolve near
// saturation, whatever the tanh: 1 + t and 1 − t² cancel when |t| is near 1
// (float32 steps of 6e-8 there), and gelu′ multiplies 1 − t² by ~x³.
func TestAgainstFloat64(t *testing.T) {
	const n = 24*512 + 5
	x, dy := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(-12 + 24*float64(i)/n)
		dy[i] = float32(1 + math.Sin(float64(i)))
	}
	for _, asm := range implementations(t) {
		haveAsm = asm
		y, dx := make([]float32, n), make([]float32, n)
		Forward(y, x)
		Backward(dx, x, dy)
		for i, xi := range x {
			wy, wd := exact(float64(xi))
			wdx := float64(dy[i]) * wd
			if e := math.Abs(float64(y[i]) - wy); e > 1e-6*(1+math.Abs(wy))+2e-7*math.Abs(float64(xi)) {
				t.Fatalf("asm %v: gelu(%v) = %v, want %v", asm, xi, y[i], wy)
			}
			if e := math.Abs(float64(dx[i]) - wdx); e > 1e-6*(1+math.Abs(wdx))+3e-7*math.Abs(float64(xi)*(1+3*a*float64(xi*xi))*float64(dy[i])) {
				t.Fatalf("asm %v: dy·gelu′(%v) = %v, want %v", asm, xi, dx[i], wdx)
			}
		}
	}
}

func BenchmarkForward(b *testing.B) {
	x, y := make([]float32, 128*256), make([]float32, 128*256)
	for i := range x {
		x[i] = float32(i%200-100) / 25
	}
	for i := 0; i < b.N; i++ {
		Forward(y, x)
	}
}

func BenchmarkBackward(b *testing.B) {
	x, dx := make([]float32, 128*256), make([]float32, 128*256)
	for i := range x {
		x[i] = float32(i%200-100) / 25
	}
	for i := 0; i < b.N; i++ {
		Backward(dx, x, x)
	}
}

// TestSaturates: far out, GELU is exactly 0 or x and its derivative
// exactly 0 or 1, as float32 tanh = ±1 gives.
func TestSaturates(t *testing.T) {
	checkSaturates(t, Forward, Backward, []float32{-30, -12, -9, 9, 12, 30, -30, 30})
}

// checkSaturates checks, on every implementation, that forward gives
// exactly 0 or x and backward (with dy = 1) exactly 0 or 1 at each x.
func checkSaturates(t *testing.T, forward func(y, x []float32), backward func(dx, x, dy []float32), x []float32) {
	t.Helper()
	for _, asm := range implementations(t) {
		haveAsm = asm
		y, dx, one := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x))
		for i := range one {
			one[i] = 1
		}
		forward(y, x)
		backward(dx, x, one)
		for i, xi := range x {
			wy, wd := float32(0), float32(0)
			if xi > 0 {
				wy, wd = xi, 1
			}
			if y[i] != wy || dx[i] != wd {
				t.Errorf("asm %v: x = %v: gelu %v, gelu′ %v; want %v, %v", asm, xi, y[i], dx[i], wy, wd)
			}
		}
	}
}

// TestAsmMatchesGo compares the assembly with the Go loops element by
// element over [−12, 12] and at the saturation points. On arm64 they give
// the same bits: the Go compiler fuses x*y + z and z − x*y there, and the
// NEON loops fuse exactly those (gelu_arm64.s). On amd64 the Go loops
// round each product first where the AVX2 loops fuse, so u = c(x + a·x³)
// may differ in its last bit, and t = tanh(u) by up to δ = 3e-7 where u
// sits on the saturation threshold (one side gives ±1, the other the
// approximation a few ulps short of it). Allowed: 4e-7 of the result plus
// δ times the result's sensitivity to t, ½|x| for gelu and
// (½ + c|x|(1 + 3a·x²))·|dy| for dy·gelu′.
func TestAsmMatchesGo(t *testing.T) {
	const n = 24*512 + 7
	x, dy := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(-12 + 24*float64(i)/n)
		dy[i] = float32(1 + math.Sin(float64(i)))
	}
	x = append(x, sat, -sat, clamp, -clamp, 0, -0.0, 1e-30, -1e-30)
	dy = append(dy, 1, 1, 1, 1, 1, 1, 1, 1)
	var y, dx [2][]float32
	for k, asm := range []bool{false, haveAsm} {
		defer func(h bool) { haveAsm = h }(haveAsm)
		haveAsm = asm
		y[k], dx[k] = make([]float32, len(x)), make([]float32, len(x))
		Forward(y[k], x)
		Backward(dx[k], x, dy)
	}
	same := runtime.GOARCH == "arm64"
	for i, xi := range x {
		if same {
			if math.Float32bits(y[0][i]) != math.Float32bits(y[1][i]) || math.Float32bits(dx[0][i]) != math.Float32bits(dx[1][i]) {
				t.Fatalf("x = %v: Go gelu %v, dy·gelu′ %v; assembly %v, %v", xi, y[0][i], dx[0][i], y[1][i], dx[1][i])
			}
			continue
		}
		const delta = 3e-7
		ax := math.Abs(float64(xi))
		if e := math.Abs(float64(y[0][i] - y[1][i])); e > 4e-7*math.Abs(float64(y[0][i]))+delta*ax/2 {
			t.Fatalf("x = %v: Go gelu %v, assembly %v", xi, y[0][i], y[1][i])
		}
		if e := math.Abs(float64(dx[0][i] - dx[1][i])); e > 4e-7*math.Abs(float64(dx[0][i]))+delta*(0.5+c*ax*(1+3*a*ax*ax))*math.Abs(float64(dy[i])) {
			t.Fatalf("x = %v: Go dy·gelu′ %v, assembly %v (dy %v)", xi, dx[0][i], dx[1][i], dy[i])
		}
	}
}

// TestNEONEncodings: every instruction that gelu_arm64.s and exact_arm64.s
// write as a WORD is the one its comment names (binutils' disassembler reads it).
func TestNEONEncodings(t *testing.T) {
	armwords.Check(t, "gelu_arm64.s", "exact_arm64.s")
}
