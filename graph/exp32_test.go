package graph

import (
	"math"
	"testing"
)

// TestExp32: exp32 is within 2 float32 ulps (relative 2.4e-7) of the
// correctly rounded e^x over the range a softmax meets, and 0 below it.
func TestExp32(t *testing.T) {
	worst := 0.0
	for x := float32(-87.3); x <= 88.7; x += 0.0137 {
		want := math.Exp(float64(x))
		got := float64(exp32(x))
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 2.4e-7 {
		t.Errorf("largest relative error %.3g, want ≤ 2.4e-7", worst)
	}
	if exp32(-100) != 0 || !math.IsInf(float64(exp32(100)), 1) || exp32(0) != 1 {
		t.Errorf("exp32(-100), exp32(100), exp32(0) = %v, %v, %v", exp32(-100), exp32(100), exp32(0))
	}
}
