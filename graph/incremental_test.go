package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/golden"
)

// TestIncrementalMatchesWindow: for every combination of the model
// switches a causal model can have (qkv, out_proj, residual, norm,
// activation, 1/2/4 heads, 0–3 blocks), in float64 and float32, on both
// emitters, the incremental graph with its cache gives the logits the
// window graph gives at the last position of the same tokens: relative
// error (‖Δ‖/‖window's‖) ≤ 1e-9 in float64, ≤ 1e-5 in float32.
//
// The tokens are fed as the sampler feeds them: a sequence growing one
// token at a time to three more than the context, the model seeing the
// last context tokens at positions 0..context−1. While the sequence fits,
// each token is one Append; once it is longer, the window slides and the
// cache is rebuilt from the common prefix (none, mostly), so both short
// and long prompts, appends and rebuilds, are compared.
func TestIncrementalMatchesWindow(t *testing.T) {
	const vocab, context, embedding = 7, 5, 8
	tol := map[string]float64{"float64": 1e-9, "float32": 1e-5}
	count := 0
	for _, dtype := range []string{"float64", "float32"} {
		for _, path := range paths {
			worst := 0.0
			for _, spec := range causalSpecs(vocab, context, embedding, dtype) {
				count++
				name := fmt.Sprintf("%s/%s/qkv=%v,out=%v,res=%v,norm=%s,%s,H%d,L%d", dtype, path.name,
					spec.QKV, spec.OutProj, spec.Residual, spec.Norm, spec.Activation, spec.Heads, spec.Blocks)
				rng := rand.New(rand.NewPCG(uint64(count), 7))
				ids := make([]int, context+3)
				for i := range ids {
					ids[i] = rng.IntN(vocab)
				}
				// A run of one token makes the window slid by one share a
				// prefix with the cache: that rebuild keeps two positions.
				ids[2], ids[3] = ids[1], ids[1]
				e := compareIncremental(t, spec, Backend{Unfused: path.unfused}, int64(count), ids)
				if !(e <= tol[dtype]) {
					t.Errorf("%s: relative error %.3g, want ≤ %g", name, e, tol[dtype])
				}
				worst = max(worst, e)
			}
			t.Logf("%s, %s: largest relative error %.3g", dtype, path.name, worst)
		}
	}
	if count != 2*2*576 {
		t.Errorf("%d combinations, want %d", count, 2*2*576)
	}
}

// TestIncrementalNanoGPTSwitches: the same comparison as
// TestIncrementalMatchesWindow on random combinations that include the
// switches nanoGPT added (no biases, tied embeddings, a final LayerNorm,
// exact GELU, its initialisation, dropout, which sampling leaves out).
func TestIncrementalNanoGPTSwitches(t *testing.T) {
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
		path := paths[(c/2)%2]
		ids := make([]int, context+3)
		for i := range ids {
			ids[i] = rng.IntN(vocab)
		}
		if e := compareIncremental(t, spec, Backend{Unfused: path.unfused}, int64(c), ids); !(e <= tol) {
			t.Errorf("%s %+v: relative error %.3g, want ≤ %g", path.name, spec, e, tol)
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

// compareIncremental feeds ids one token at a time, as the sampler does,
// to a window graph and to an incremental graph with the same parameters,
// and returns the largest relative error of the incremental logits.
func compareIncremental(t *testing.T, spec config.Model, be Backend, seed int64, ids []int) float64 {
	t.Helper()
	T := spec.Context
	wm, err := Build(spec, Options{Batch: 1, Seed: seed, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	window, err := Compile(wm, false)
	if err != nil {
		t.Fatal(err)
	}
	defer window.Close()
	im, err := BuildIncremental(spec, be)
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Params) != len(wm.Params) {
		t.Fatalf("incremental graph has %d parameters, the window graph %d", len(im.Params), len(wm.Params))
	}
	for i, p := range im.Params {
		if p.Name != wm.Params[i].Name {
			t.Fatalf("parameter %d is %s, the window graph's %s", i, p.Name, wm.Params[i].Name)
		}
		if err := p.SetFloat64s(Float64s(wm.Params[i].Value())); err != nil {
			t.Fatal(err)
		}
	}
	inc, err := CompileIncremental(im)
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
		want := Float64s(window.Logits.Value())[(n-1)*V : n*V]
		worst = max(worst, golden.RelErr(Float64s(inc.Logits.Value()), want, 0))
	}
	return worst
}

// TestIncrementalRefusesUnmasked: without the causal mask no cache is valid.
func TestIncrementalRefusesUnmasked(t *testing.T) {
	spec := causalSpecs(5, 4, 4, "float64")[0]
	spec.Mask = false
	if _, err := BuildIncremental(spec, Backend{}); err == nil {
		t.Error("an unmasked model got an incremental graph")
	}
}

// TestCachedProgramLimits: a full cache refuses another token, a bad token
// id is refused, and Truncate keeps the asked prefix.
func TestCachedProgramLimits(t *testing.T) {
	spec := causalSpecs(5, 3, 4, "float64")[len(causalSpecs(5, 3, 4, "float64"))-1]
	m, err := BuildIncremental(spec, Backend{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := CompileIncremental(m)
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
