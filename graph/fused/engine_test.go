package fused

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestTeamEngineAddsAsGorgonia holds teamEngine.Add to Gorgonia's own
// engine for each way the TapeMachine calls it (in place, into a reuse
// tensor) and for the calls it leaves to Gorgonia (a new result, WithIncr,
// a single entry, a transposed view): the same entries to the bit, the
// result in the same tensor. The team has 3 threads and splits every sum.
func TestTeamEngineAddsAsGorgonia(t *testing.T) {
	saved := minSplitWork
	minSplitWork = 0
	defer func() { minSplitWork = saved }()
	engine := newTeamEngine(newTeam(3))
	rng := rand.New(rand.NewPCG(5, 5))
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		random := func(shape ...int) *tensor.Dense {
			d := make([]float64, tensor.Shape(shape).TotalSize())
			for i := range d {
				d[i] = rng.NormFloat64()
			}
			return dense(dt, d, shape...)
		}
		// Each case: the options of the call, which tensor the sum must be
		// written to (0 a, 2 the third tensor, -1 a new one), whether the
		// team computes it, b's shape when not a's, and a's shape.
		cases := []struct {
			name    string
			opts    func(c *tensor.Dense) []tensor.FuncOpt
			into    int
			onTeam  bool
			aShape  []int
			bShape  []int
			prepare func(b *tensor.Dense) error
		}{
			{name: "unsafe", opts: func(*tensor.Dense) []tensor.FuncOpt { return []tensor.FuncOpt{tensor.UseUnsafe()} }, into: 0, onTeam: true},
			{name: "reuse", opts: func(c *tensor.Dense) []tensor.FuncOpt { return []tensor.FuncOpt{tensor.WithReuse(c)} }, into: 2, onTeam: true},
			{name: "new", opts: func(*tensor.Dense) []tensor.FuncOpt { return nil }, into: -1},
			{name: "incr", opts: func(c *tensor.Dense) []tensor.FuncOpt { return []tensor.FuncOpt{tensor.WithIncr(c)} }, into: 2},
			{name: "one entry", opts: func(*tensor.Dense) []tensor.FuncOpt { return []tensor.FuncOpt{tensor.UseUnsafe()} }, into: 0,
				aShape: []int{1}},
			{name: "transposed", opts: func(*tensor.Dense) []tensor.FuncOpt { return []tensor.FuncOpt{tensor.UseUnsafe()} }, into: 0,
				bShape: []int{37, 23}, prepare: func(b *tensor.Dense) error { return b.T() }},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", dt, c.name), func(t *testing.T) {
				aShape, bShape := c.aShape, c.bShape
				if aShape == nil {
					aShape = []int{23, 37}
				}
				if bShape == nil {
					bShape = aShape
				}
				a, b, third := random(aShape...), random(bShape...), random(aShape...)
				var sums [2][]float64
				for i, e := range []tensor.Adder{G.StandardEngine{}, engine} {
					a, b, third := a.Clone().(*tensor.Dense), b.Clone().(*tensor.Dense), third.Clone().(*tensor.Dense)
					if c.prepare != nil {
						if err := c.prepare(b); err != nil {
							t.Fatal(err)
						}
					}
					if i == 1 {
						if onTeam := engine.addOnTeam(a.Clone().(*tensor.Dense), b, c.opts(third.Clone().(*tensor.Dense))) != nil; onTeam != c.onTeam {
							t.Errorf("computed on the team: %v, want %v", onTeam, c.onTeam)
						}
					}
					r, err := e.Add(a, b, c.opts(third)...)
					if err != nil {
						t.Fatal(err)
					}
					if (c.into == 0 && r != a) || (c.into == 2 && r != third) || (c.into == -1 && (r == a || r == b || r == third)) {
						t.Errorf("engine %d returned the sum in the wrong tensor", i)
					}
					sums[i] = floats(r)
				}
				if !reflect.DeepEqual(sums[0], sums[1]) {
					t.Errorf("the team's sum differs from Gorgonia's")
				}
			})
		}
	}
}

// dense makes a tensor of dtype dt from float64 data.
func dense(dt tensor.Dtype, data []float64, shape ...int) *tensor.Dense {
	if dt == tensor.Float64 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	}
	f := make([]float32, len(data))
	for i, v := range data {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
}

// floats returns a float tensor's entries as float64s.
func floats(t tensor.Tensor) []float64 {
	switch d := t.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	}
	return nil
}
