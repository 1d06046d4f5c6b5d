package graph_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/golden"
)

// TestCachedMatchesWindow: for every combination of the model
// switches a causal model can have (qkv, out_proj, residual, norm,
// activation, 1/2/4 heads, 0–3 blocks), in float64 and float32, on both
// emitters, the cached graph with its cache gives the logits the
// window graph gives at the last position of the same tokens: relative
// error (‖Δ‖/‖window's‖) ≤ 1e-9 in float64, ≤ 1e-5 in float32.
//
// The tokens are fed as the sampler feeds them: a sequence growing one
// token at a time to three more than the context, the model seeing the
// last context tokens at positions 0..context−1. While the sequence fits,
// each token is one Append; once it is longer, the window slides and the
// cache is rebuilt from the common prefix (none, mostly), so both short
// and long prompts, appends and rebuilds, are compared.
func TestCachedMatchesWindow(t *testing.T) {
	const vocab, context, embedding = 7, 5, 8
	tol := map[string]float64{"float64": 1e-9, "float32": 1e-5}
	count := 0
	for _, dtype := range []string{"float64", "float32"} {
		for _, path := range graphtest.Paths {
			worst := 0.0
			for _, spec := range causalSpecs(vocab, context, embedding, dtype) {
				count++
				name := fmt.Sprintf("%s/%s/qkv=%v,out=%v,res=%v,norm=%s,%s,H%d,L%d", dtype, path.Name,
					spec.QKV, spec.OutProj, spec.Residual, spec.Norm, spec.Activation, spec.Heads, spec.Blocks)
				rng := rand.New(rand.NewPCG(uint64(count), 7))
				ids := make([]int, context+3)
				for i := range ids {
					ids[i] = rng.IntN(vocab)
				}
				// A run of one token makes the window slid by one share a
				// prefix with the cache: that rebuild keeps two positions.
				ids[2], ids[3] = ids[1], ids[1]
				e := compareCached(t, spec, graph.Backend{Unfused: path.Unfused}, int64(count), ids)
				if !(e <= tol[dtype]) {
					t.Errorf("%s: relative error %.3g, want ≤ %g", name, e, tol[dtype])
				}
				worst = max(worst, e)
			}
			t.Logf("%s, %s: largest relative error %.3g", dtype, path.Name, worst)
		}
	}
	if count != 2*2*576 {
		t.Errorf("%d combinations, want %d", count, 2*2*576)
	}
}

// TestCachedNanoGPTSwitches: the same comparison as
// TestCachedMatchesWindow on random combinations that include the
// switches nanoGPT added (no biases, tied embeddings, a final LayerNorm,
// exact GELU, its initialisation, dropout, which sampling leaves out).
func TestCachedNanoGPTSwitches(t *testing.T) {
	const vocab, context = 7, 5
	rng := rand.New(rand.NewPCG(31, 31))
	for c := 0; c < 48; c++ {
		heads := []int{1, 2, 4}[rng.IntN(3)]
		spec := config.Model{
			Vocab: vocab, Context: context, Embedding: 2 * heads * (1 + rng.IntN(2)), Blocks: rng.IntN(4),
			Heads: heads, FFMult: 1 + rng.IntN(3), QKV: rng.IntN(2) == 0, Mask: true,
			OutProj: rng.IntN(2) == 0, Residual: rng.IntN(2) == 0,
			Norm:       []string{"none", "pre", "post"}[rng.IntN(3)],
			Activation: []string{"gelu", "gelu_exact", "relu"}[rng.IntN(3)],
			Bias:       rng.IntN(2) == 0, TieEmbeddings: rng.IntN(2) == 0, FinalNorm: rng.IntN(2) == 0,
			Init: []string{"torch", "gpt2"}[rng.IntN(2)], Dropout: []float64{0, 0.1}[rng.IntN(2)],
			Dtype: []string{"float64", "float32"}[c%2],
		}
		tol := map[string]float64{"float64": 1e-9, "float32": 1e-5}[spec.Dtype]
		path := graphtest.Paths[(c/2)%2]
		ids := make([]int, context+3)
		for i := range ids {
			ids[i] = rng.IntN(vocab)
		}
		if e := compareCached(t, spec, graph.Backend{Unfused: path.Unfused}, int64(c), ids); !(e <= tol) {
			t.Errorf("%s %+v: relative error %.3g, want ≤ %g", path.Name, spec, e, tol)
		}
	}
}

// causalSpecs lists every switch combination of a causal model.
func causalSpecs(vocab, context, embedding int, dtype string) []config.Model {
	var specs []config.Model
	for _, qkv := range []bool{false, true} {
		for _, outProj := range []bool{false, true} {
			for _, residual := range []bool{false, true} {
				for _, norm := range []string{"none", "pre", "post"} {
					for _, act := range []string{"gelu", "relu"} {
						for _, heads := range []int{1, 2, 4} {
							for blocks := 0; blocks <= 3; blocks++ {
								specs = append(specs, config.Model{Bias: true, Init: "torch",
									Vocab: vocab, Context: context, Embedding: embedding, Blocks: blocks, Heads: heads,
									FFMult: 2, QKV: qkv, Mask: true, OutProj: outProj, Residual: residual,
									Norm: norm, Activation: act, Dtype: dtype,
								})
							}
						}
					}
				}
			}
		}
	}
	return specs
}

// compareCached feeds ids one token at a time, as the sampler does,
// to a window graph and to a cached graph with the same parameters,
// and returns the largest relative error of the cached logits.
func compareCached(t *testing.T, spec config.Model, be graph.Backend, seed int64, ids []int) float64 {
	t.Helper()
	T := spec.Context
	wm, err := graph.Build(spec, graph.Options{Batch: 1, Seed: seed, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	window, err := tape.Compile(wm, false)
	if err != nil {
		t.Fatal(err)
	}
	defer window.Close()
	im, err := graph.BuildCached(spec, be)
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Params) != len(wm.Params) {
		t.Fatalf("cached graph has %d parameters, the window graph %d", len(im.Params), len(wm.Params))
	}
	for i, p := range im.Params {
		if p.Name != wm.Params[i].Name {
			t.Fatalf("parameter %d is %s, the window graph's %s", i, p.Name, wm.Params[i].Name)
		}
		if err := p.SetFloat64s(graph.Float64s(wm.Params[i].Value())); err != nil {
			t.Fatal(err)
		}
	}
	inc, err := tape.CompileCached(im)
	if err != nil {
		t.Fatal(err)
	}
	defer inc.Close()

	worst := 0.0
	padded := make([]int, T)
	for end := 1; end <= len(ids); end++ {
		win := ids[max(0, end-T):end]
		// The cache keeps the common prefix of what it holds and win.
		keep := 0
		for keep < min(inc.Len(), len(win)-1) && inc.Tokens()[keep] == win[keep] {
			keep++
		}
		inc.Truncate(keep)
		for _, tok := range win[keep:] {
			if err := inc.Append(tok); err != nil {
				t.Fatal(err)
			}
		}
		clear(padded)
		copy(padded, win)
		if err := window.Run(padded, nil); err != nil {
			t.Fatal(err)
		}
		V, n := spec.Vocab, len(win)
		want := graph.Float64s(window.Logits.Value())[(n-1)*V : n*V]
		worst = max(worst, golden.RelErr(graph.Float64s(inc.Logits.Value()), want, 0))
	}
	return worst
}

// TestCachedRefusesUnmasked: without the causal mask no cache is valid.
func TestCachedRefusesUnmasked(t *testing.T) {
	spec := causalSpecs(5, 4, 4, "float64")[0]
	spec.Mask = false
	if _, err := graph.BuildCached(spec, graph.Backend{}); err == nil {
		t.Error("an unmasked model got a cached graph")
	}
}
