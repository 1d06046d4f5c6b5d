package amxmodel

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// tdpbf16ps returns c + Σ a[k]·b[k] over the even number of bfloat16 a
// and b (their bits), as TDPBF16PS computes one element of its float32
// tile from one row of A and one column of B (the probe's model
// "chains", bench/amx/amxnum.c):
//
//	even = 0; odd = 0
//	for each pair q: even = even + a[2q]·b[2q]; odd = odd + a[2q+1]·b[2q+1]
//	result = c + (even + odd)
//
// each product exact, each add rounded once to float32, nearest even, a
// denormal result (after rounding) flushed to a zero of its sign, and
// denormal operands (bfloat16 or c) read as zeros. A NaN result is the
// first NaN operand of the add that meets it (a, then b, then the chain;
// even before odd; c before the chains), quieted; an invalid add or
// product (∞−∞, ∞·0) gives the default NaN, ffc00000. A product longer
// than 32 steps of k is one instruction a 32-step block, c the sum so far.
func tdpbf16ps(c float32, a, b []uint16) float32 {
	var even, odd float32
	for k := 0; k < len(a); k += 2 {
		even = fma(operand(a[k]), operand(b[k]), even)
		odd = fma(operand(a[k+1]), operand(b[k+1]), odd)
	}
	return add(daz(c), add(even, odd))
}

var defaultNaN = math.Float32frombits(0xffc00000)

// operand widens a bfloat16, a denormal as a zero of its sign.
func operand(h uint16) float32 {
	return daz(math.Float32frombits(uint32(h) << 16))
}

func daz(x float32) float32 {
	if u := math.Float32bits(x); u&0x7f800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return x
}

func isNaN(x float32) bool { return x != x }

func quiet(x float32) float32 { return math.Float32frombits(math.Float32bits(x) | 0x400000) }

// fma is s + x·y rounded once; the product of two bfloat16 (8 by 8
// significant bits) is exact in float64.
func fma(x, y, s float32) float32 {
	switch {
	case isNaN(x):
		return quiet(x)
	case isNaN(y):
		return quiet(y)
	case isNaN(s):
		return quiet(s)
	}
	p := float64(float64(x) * float64(y))
	if math.IsNaN(p) {
		return defaultNaN
	}
	return roundSum(p, float64(s))
}

// add is x + y rounded once, x's NaN before y's.
func add(x, y float32) float32 {
	switch {
	case isNaN(x):
		return quiet(x)
	case isNaN(y):
		return quiet(y)
	}
	return roundSum(float64(x), float64(y))
}

// roundSum rounds p + q (float64 without NaNs: a product of two bfloat16
// and a float32, or two float32) once to float32, nearest even, a
// denormal result flushed. The float64 sum is already that one rounding:
// it is exact unless the terms span more than 53 bits, and then the
// smaller lies 4 bits or more below the sum's float32 rounding bit, too
// small to move the sum to or across a float32 midpoint, rounded or not.
func roundSum(p, q float64) float32 {
	t := float64(p + q)
	if math.IsNaN(t) {
		return defaultNaN
	}
	// Go leaves a float64 beyond float32's range converted to float32
	// to the implementation: past the midpoint between float32's largest
	// and 2^128 the sum rounds to infinity.
	const overflow = 0x1p128 - 0x1p103
	if math.Abs(t) >= overflow {
		return float32(math.Copysign(math.Inf(1), t))
	}
	r := float32(t)
	if r != 0 && math.Abs(float64(r)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(r)))
	}
	return r
}

// sdmOrder is the order of Intel's SDM pseudo-code (from c, per pair
// +a[2q]·b[2q] then +a[2q+1]·b[2q+1]) with the same rounding: the model
// the hardware does not follow, to show the golden file tells them apart.
func sdmOrder(c float32, a, b []uint16) float32 {
	s := daz(c)
	for k := 0; k < len(a); k++ {
		s = fma(operand(a[k]), operand(b[k]), s)
	}
	return s
}

type goldenCase struct {
	line    int
	c, want float32
	a, b    []uint16
}

// readGolden reads testdata/golden.txt: a line a sum, "K c a… b… amx" in
// hex bits, as bench/amx/amxnum golden prints them.
func readGolden(t *testing.T) []goldenCase {
	t.Helper()
	f, err := os.Open("testdata/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []goldenCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<16)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		w := strings.Fields(line)
		k, err := strconv.Atoi(w[0])
		if err != nil || k < 2 || k > 32 || k%2 != 0 || len(w) != 3+2*k {
			t.Fatalf("golden.txt:%d: want K (even, 2..32), c, K a, K b and the result", n)
		}
		hex := func(s string, bits int) uint64 {
			v, err := strconv.ParseUint(s, 16, bits)
			if err != nil {
				t.Fatalf("golden.txt:%d: %v", n, err)
			}
			return v
		}
		gc := goldenCase{line: n, c: math.Float32frombits(uint32(hex(w[1], 32))),
			want: math.Float32frombits(uint32(hex(w[2+2*k], 32)))}
		for i := 0; i < k; i++ {
			gc.a = append(gc.a, uint16(hex(w[2+i], 16)))
			gc.b = append(gc.b, uint16(hex(w[2+k+i], 16)))
		}
		cases = append(cases, gc)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 1000 {
		t.Fatalf("golden.txt holds %d sums, want 1000", len(cases))
	}
	return cases
}

// TestModelGivesAMXBits compares the model with the sums TDPBF16PS gave
// on a Sapphire Rapids core, bit for bit (NaN payloads included).
func TestModelGivesAMXBits(t *testing.T) {
	bad := 0
	for _, gc := range readGolden(t) {
		got := tdpbf16ps(gc.c, gc.a, gc.b)
		if math.Float32bits(got) != math.Float32bits(gc.want) {
			if bad++; bad <= 10 {
				t.Errorf("golden.txt:%d (K=%d, c=%08x): model %08x, AMX %08x", gc.line, len(gc.a),
					math.Float32bits(gc.c), math.Float32bits(got), math.Float32bits(gc.want))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d sums differ from AMX's", bad)
	}
}

// TestGoldenTellsOrdersApart checks that the golden sums would catch a
// model with another order: the SDM's must differ from them in many.
func TestGoldenTellsOrdersApart(t *testing.T) {
	cases := readGolden(t)
	differ := 0
	for _, gc := range cases {
		if math.Float32bits(sdmOrder(gc.c, gc.a, gc.b)) != math.Float32bits(gc.want) {
			differ++
		}
	}
	if differ < len(cases)/10 {
		t.Errorf("the SDM's order differs from AMX in %d of %d golden sums, want at least a tenth", differ, len(cases))
	}
}
