package graph_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
)

// TestFiniteDifferences checks the symbolic gradients of switch combinations
// the golden files don't cover (2 heads with residual and post-norm, relu
// with Q/K/V and mask, ...) against central differences in float64: for
// several entries of every parameter, |analytic − numeric| must be within
// 1e-6·(1 + |numeric|), far above the O(h²) ≈ 1e-10 truncation error of the
// difference and far below any real mistake. The same 32 combinations run
// on the fused graph and on the unfused one.
func TestFiniteDifferences(t *testing.T) {
	for _, path := range graphtest.Paths {
		t.Run(path.Name, func(t *testing.T) { finiteDifferences(t, path.Unfused) })
	}
}

func finiteDifferences(t *testing.T, unfused bool) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 32; i++ {
		spec := config.Model{Init: "torch",
			Vocab: 5, Context: 4, Embedding: 4, Blocks: 2, FFMult: 2, Dtype: "float64",
			Heads:      []int{1, 2, 4}[rng.IntN(3)],
			QKV:        rng.IntN(2) == 0,
			Mask:       rng.IntN(2) == 0,
			OutProj:    rng.IntN(2) == 0,
			Residual:   rng.IntN(2) == 0,
			Norm:       []string{"none", "pre", "post"}[rng.IntN(3)],
			Activation: []string{"gelu", "relu"}[rng.IntN(2)],
		}
		// nanoGPT's switches, drawn after the others so that the draws
		// above do not depend on them.
		spec.Bias = rng.IntN(4) != 0
		spec.TieEmbeddings = rng.IntN(3) == 0
		spec.FinalNorm = rng.IntN(3) == 0
		if spec.Activation == "gelu" && rng.IntN(2) == 0 {
			spec.Activation = "gelu_exact"
		}
		name := fmt.Sprintf("h%d_qkv%v_mask%v_out%v_res%v_%s_%s_bias%v_tie%v_fnorm%v", spec.Heads, spec.QKV, spec.Mask, spec.OutProj,
			spec.Residual, spec.Norm, spec.Activation, spec.Bias, spec.TieEmbeddings, spec.FinalNorm)
		t.Run(name, func(t *testing.T) { gradCheck(t, spec, int64(i), unfused) })
	}
}

func gradCheck(t *testing.T, spec config.Model, seed int64, unfused bool) {
	const B = 2
	m, err := graph.Build(spec, graph.Options{Batch: B, Loss: true, Seed: seed, Backend: graph.Backend{Unfused: unfused}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tape.Compile(m, true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	n := B * spec.Context
	x, y := make([]int, n), make([]int, n)
	for i := range x {
		x[i], y[i] = rng.IntN(spec.Vocab), rng.IntN(spec.Vocab)
	}
	loss := func() float64 {
		if err := p.Run(x, y); err != nil {
			t.Fatal(err)
		}
		return p.Loss()
	}
	loss()
	analytic := make([][]float64, len(m.Params))
	for i := range m.Params {
		analytic[i] = graph.Float64s(p.Grads[i].Value())
	}
	const h = 1e-5
	for i, prm := range m.Params {
		w := prm.Value().Data().([]float64)
		for k := 0; k < 3; k++ {
			j := rng.IntN(len(w))
			orig := w[j]
			w[j] = orig + h
			up := loss()
			w[j] = orig - h
			down := loss()
			w[j] = orig
			numeric := (up - down) / (2 * h)
			if d := math.Abs(analytic[i][j] - numeric); d > 1e-6*(1+math.Abs(numeric)) {
				t.Errorf("%s[%d]: analytic %.10g, numeric %.10g", prm.Name, j, analytic[i][j], numeric)
			}
		}
	}
}
