package graph

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
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
					sums[i] = Float64s(r)
				}
				if !reflect.DeepEqual(sums[0], sums[1]) {
					t.Errorf("the team's sum differs from Gorgonia's")
				}
			})
		}
	}
}

// TestFusedProgramUsesTeamEngine checks that a fused program's values
// carry the team's engine, so that Gorgonia's sums in it (the residual,
// the gradient sums) reach teamEngine.Add; the unfused program keeps
// Gorgonia's engine.
func TestFusedProgramUsesTeamEngine(t *testing.T) {
	spec := config.Model{Bias: true, Init: "torch", Vocab: 11, Context: 8, Embedding: 12, Blocks: 1, Heads: 3, FFMult: 2, QKV: true,
		Mask: true, OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", Dtype: "float32"}
	for _, unfused := range []bool{false, true} {
		m, err := Build(spec, Options{Batch: 2, Loss: true, Seed: 1, Backend: Backend{Unfused: unfused, Threads: 2}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(m, true)
		if err != nil {
			t.Fatal(err)
		}
		x, y := randomBatch(rand.New(rand.NewPCG(1, 1)), spec.Vocab, 2*spec.Context)
		if err := p.Run(x, y); err != nil {
			t.Fatal(err)
		}
		_, onTeam := p.Logits.Value().(*tensor.Dense).Engine().(*teamEngine)
		if onTeam == unfused {
			t.Errorf("unfused %v: logits on the team's engine: %v", unfused, onTeam)
		}
		p.Close()
	}
}
