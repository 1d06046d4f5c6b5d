package sample_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/hf"
	"github.com/gptg/gptg/internal/fidelity"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
)

// statsTolerance: the hand-made maps below are exact in float64 but for
// the logarithms' rounding.
const statsTolerance = 1e-12

// TestStatsOfKnownHeads: maps whose entropy and mean distance are known in
// closed form — a head that looks at its own token, one that looks at the
// token before, one that spreads evenly over everything the causal mask
// lets it see, and an unmasked one spread evenly over all n positions.
func TestStatsOfKnownHeads(t *testing.T) {
	const n = 7
	build := func(row func(i int) []float64) sample.Matrix {
		m := sample.Matrix{N: n, W: make([]float64, n*n)}
		for i := 0; i < n; i++ {
			copy(m.W[i*n:], row(i))
		}
		return m
	}
	onehot := func(j int) []float64 { r := make([]float64, n); r[j] = 1; return r }
	uniform := func(k int) []float64 {
		r := make([]float64, n)
		for j := 0; j < k; j++ {
			r[j] = 1 / float64(k)
		}
		return r
	}
	// causal uniform: row i spreads over i+1 positions, entropy log2(i+1),
	// distance the mean of 0..i, i/2; averaged over the rows.
	var causalEntropy, causalDistance float64
	for i := 0; i < n; i++ {
		causalEntropy += math.Log2(float64(i+1)) / n
		causalDistance += float64(i) / 2 / n
	}
	// unmasked uniform: row i's mean |i − j| over all j.
	var fullDistance float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			fullDistance += math.Abs(float64(i-j)) / n / n
		}
	}
	for _, tc := range []struct {
		name string
		m    sample.Matrix
		want sample.HeadStats
	}{
		{"own token", build(func(i int) []float64 { return onehot(i) }), sample.HeadStats{Entropy: 0, Distance: 0}},
		{"previous token", build(func(i int) []float64 { return onehot(max(0, i-1)) }), sample.HeadStats{Entropy: 0, Distance: float64(n-1) / n}},
		{"first token", build(func(i int) []float64 { return onehot(0) }), sample.HeadStats{Entropy: 0, Distance: float64(n-1) / 2}},
		{"causal, even", build(func(i int) []float64 { return uniform(i + 1) }), sample.HeadStats{Entropy: causalEntropy, Distance: causalDistance}},
		{"unmasked, even", build(func(i int) []float64 { return uniform(n) }), sample.HeadStats{Entropy: math.Log2(n), Distance: fullDistance}},
	} {
		got := sample.Stats(tc.m)
		if math.Abs(got.Entropy-tc.want.Entropy) > statsTolerance || math.Abs(got.Distance-tc.want.Distance) > statsTolerance {
			t.Errorf("%s: got entropy %.15g, distance %.15g; want %.15g, %.15g", tc.name, got.Entropy, got.Distance, tc.want.Entropy, tc.want.Distance)
		}
	}
}

// TestAttentionHeadsAgainstTheReference: the summary gptg computes while it
// runs a GPT-2 (testdata/gpt2/small-f32, 2 blocks × 2 heads over 64
// tokens) against the same statistics computed here from the PyTorch
// reference's attention weights (bench/gpt2ref.py, float64), and the maps
// it keeps: only the heads asked for.
func TestAttentionHeadsAgainstTheReference(t *testing.T) {
	dir := filepath.Join("..", "testdata", "gpt2", "small-f32")
	imported, err := hf.Import(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := fidelity.ReadReference(filepath.Join(dir, "ref.safetensors"), imported.Spec.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := fidelity.ReadIDs(filepath.Join("..", "testdata", "gpt2", "ids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := &savedmodel.Model{Path: "small-f32", Spec: imported.Spec, Tensors: map[string]modelfile.Tensor{}}
	for _, tn := range imported.Tensors {
		m.Tensors[tn.Name] = tn
	}
	s, err := sample.New(m, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stats, maps, err := s.AttentionHeads(ids, func(b, h int) bool { return b == 1 && h == 0 })
	if err != nil {
		t.Fatal(err)
	}
	T, H := len(ids), imported.Spec.Heads
	// float32 weights within 1e-5 relative of the reference's (the golden
	// test's bound): the means move by about as much.
	const tol = 1e-4
	for b := range ref.Attention {
		for h := 0; h < H; h++ {
			want := sample.Stats(sample.Matrix{N: T, W: ref.Attention[b][h*T*T : (h+1)*T*T]})
			got := stats[b][h]
			if math.Abs(got.Entropy-want.Entropy) > tol*want.Entropy || math.Abs(got.Distance-want.Distance) > tol*want.Distance {
				t.Errorf("block %d, head %d: entropy %.8g, distance %.8g; the reference's %.8g, %.8g", b, h, got.Entropy, got.Distance, want.Entropy, want.Distance)
			}
			t.Logf("block %d, head %d: entropy %.6g bits, distance %.6g (reference %.6g, %.6g)", b, h, got.Entropy, got.Distance, want.Entropy, want.Distance)
			kept := maps[b][h].W != nil
			if kept != (b == 1 && h == 0) {
				t.Errorf("block %d, head %d: map kept %v", b, h, kept)
			}
			if kept && sample.Stats(maps[b][h]) != got {
				t.Errorf("block %d, head %d: the kept map's stats %+v differ from the streamed %+v", b, h, sample.Stats(maps[b][h]), got)
			}
		}
	}
}
