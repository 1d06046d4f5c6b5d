package tape

import (
	"math"
	"reflect"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
)

// TestShardsMatchOneGraph: a training program whose batch is split into
// shards gives one graph's loss and gradients over the whole batch (to
// float32 rounding: the shards' sums are added in another order), in
// float64 to 1e-12, and the same bits for 1, 2 and 3 threads, its
// gradients lent (ReleaseGrads between two runs).
func TestShardsMatchOneGraph(t *testing.T) {
	// A buffer given back reads NaN: a gradient read after its loan (the
	// second shard's, summed after the run; the first's, after
	// ReleaseGrads) would show.
	defer fused.FillGivenBack()()
	defer func(v int) { shardMinActivation = v }(shardMinActivation)
	shardMinActivation = 1
	for _, dtype := range []string{"float64", "float32"} {
		spec := config.Model{Bias: true, Init: "torch", Vocab: 11, Context: 8, Embedding: 16, Blocks: 2, Heads: 2, FFMult: 2, QKV: true, Mask: true,
			OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", Dtype: dtype, FinalNorm: true}
		const batch = 4
		x, y := make([]int, batch*spec.Context), make([]int, batch*spec.Context)
		for i := range x {
			x[i], y[i] = (3*i+i/7)%spec.Vocab, (5*i+1)%spec.Vocab
		}
		m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		one, err := Compile(m, true)
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		if err := one.Run(x, y); err != nil {
			t.Fatal(err)
		}
		tol := 1e-12
		if dtype == "float32" {
			tol = 1e-5
		}
		var first [][]float64
		for _, threads := range []int{1, 2, 3} {
			p, err := CompileTraining(spec, graph.Options{Batch: batch, Loss: true, Seed: 4, Backend: graph.Backend{Threads: threads}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Shards() != 2 {
				t.Fatalf("%d shards, want 2", p.Shards())
			}
			for run := range 2 { // a second run: the sums start again from the shards' own gradients
				if err := p.Run(x, y); err != nil {
					t.Fatal(err)
				}
				if run == 0 {
					p.ReleaseGrads() // the second run borrows them again
				}
			}
			got := [][]float64{{p.Loss()}}
			if d := math.Abs(p.Loss() - one.Loss()); d > tol {
				t.Errorf("%s, %d threads: loss %v, one graph's %v", dtype, threads, p.Loss(), one.Loss())
			}
			for i, g := range p.Grads {
				a, b := graph.Float64s(g.Value()), graph.Float64s(one.Grads[i].Value())
				got = append(got, a)
				for j := range a {
					if math.Abs(a[j]-b[j]) > tol*(1+math.Abs(b[j])) {
						t.Errorf("%s, %d threads: ∂%s[%d] = %v, one graph's %v", dtype, threads, p.Params[i].Name, j, a[j], b[j])
						break
					}
				}
			}
			if first == nil {
				first = got
			} else if !reflect.DeepEqual(got, first) {
				t.Errorf("%s, %d threads: not the bits of 1 thread", dtype, threads)
			}
		}
	}
}

// TestShardsRule: the CPU recipe's batch and the 10.8M shape's split in
// two; the seed config's, an odd batch and an unfused graph do not.
func TestShardsRule(t *testing.T) {
	spec := func(context, embedding int) config.Model { return config.Model{Context: context, Embedding: embedding} }
	for _, c := range []struct {
		spec  config.Model
		batch int
		be    graph.Backend
		want  int
	}{
		{spec(64, 128), 12, graph.Backend{}, 2},
		{spec(256, 384), 16, graph.Backend{Threads: 1}, 2},
		{spec(32, 64), 4, graph.Backend{}, 1},
		{spec(256, 384), 3, graph.Backend{}, 1},
		{spec(64, 128), 12, graph.Backend{Unfused: true}, 1},
	} {
		if got := Shards(c.spec, c.batch, c.be); got != c.want {
			t.Errorf("Shards(T %d, C %d, batch %d, %+v) = %d, want %d", c.spec.Context, c.spec.Embedding, c.batch, c.be, got, c.want)
		}
	}
}
