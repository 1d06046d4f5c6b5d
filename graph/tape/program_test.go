package tape

import (
	"reflect"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
)

// TestRunInPlaceMatchesRunAll: the tape run in the calling goroutine
// (tape.go) computes the same bits as Gorgonia's RunAll, on both graphs.
func TestRunInPlaceMatchesRunAll(t *testing.T) {
	spec := graphtest.SmallSpec("pre")
	const batch = 2
	x, y := make([]int, batch*spec.Context), make([]int, batch*spec.Context)
	for i := range x {
		x[i], y[i] = (3*i)%spec.Vocab, (5*i+1)%spec.Vocab
	}
	for _, path := range graphtest.Paths {
		t.Run(path.Name, func(t *testing.T) {
			m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 4, Backend: graph.Backend{Unfused: path.Unfused}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(m, true)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.inPlace == nil {
				t.Fatal("runInPlace did not recognise Gorgonia's TapeMachine: every run goes through RunAll")
			}
			result := func() [][]float64 {
				if err := p.Run(x, y); err != nil {
					t.Fatal(err)
				}
				return graphtest.Outputs(p.Loss(), p.Logits, p.Grads, p.Attention)
			}
			inPlace := result()
			p.inPlace = nil
			if !reflect.DeepEqual(inPlace, result()) {
				t.Error("run in place and RunAll differ")
			}
		})
	}
}

// TestCachedProgramLimits: a full cache refuses another token, a bad token
// id is refused, and Truncate keeps the asked prefix.
func TestCachedProgramLimits(t *testing.T) {
	spec := config.Model{Bias: true, Init: "torch", Vocab: 5, Context: 3, Embedding: 4, Blocks: 3, Heads: 4,
		FFMult: 2, QKV: true, Mask: true, OutProj: true, Residual: true, Norm: "post", Activation: "relu", Dtype: "float64"}
	m, err := graph.BuildCached(spec, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := CompileCached(m)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Append(5); err == nil {
		t.Error("token 5 of a vocabulary of 5 was accepted")
	}
	for _, tok := range []int{1, 2, 3} {
		if err := p.Append(tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Append(0); err == nil {
		t.Error("a fourth token was cached in a context of 3")
	}
	p.Truncate(1)
	if p.Len() != 1 || p.Tokens()[0] != 1 {
		t.Errorf("after Truncate(1): %v", p.Tokens())
	}
}
