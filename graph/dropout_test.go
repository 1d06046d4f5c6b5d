package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
)

// TestDropoutMasks: only a training graph (Options.Dropout) of a model
// with dropout has masks, one where nanoGPT applies dropout (embedding
// sum; per block the attention weights and the end of both residual
// branches); SetDropout draws them from (seed, pass) alone, zeroing about
// p of the entries and scaling the rest by 1/(1 − p).
func TestDropoutMasks(t *testing.T) {
	spec := config.DefaultModel()
	spec.Vocab, spec.Blocks, spec.Heads, spec.Residual, spec.Norm = 11, 3, 4, true, "pre"
	spec.Dropout = 0.25
	for _, o := range []Options{{Batch: 2, Loss: true}, {Batch: 2, Loss: true, Dropout: true}} {
		m, err := Build(spec, o)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if o.Dropout {
			want = 1 + 3*spec.Blocks
		}
		if len(m.Dropout) != want {
			t.Fatalf("Dropout=%v: %d masks, want %d", o.Dropout, len(m.Dropout), want)
		}
		if !o.Dropout {
			continue
		}
		masks := func(seed int64, pass uint64) []float64 {
			m.SetDropout(seed, pass)
			var all []float64
			for _, n := range m.Dropout {
				all = append(all, Float64s(n.Value())...)
			}
			return all
		}
		a := masks(42, 7)
		if !slices.Equal(a, masks(42, 7)) {
			t.Fatal("the same (seed, pass) drew other masks")
		}
		if slices.Equal(a, masks(42, 8)) || slices.Equal(a, masks(43, 7)) {
			t.Fatal("another pass or seed drew the same masks")
		}
		zeros, keep := 0, float32(1/(1-spec.Dropout))
		for _, v := range a {
			switch float32(v) {
			case 0:
				zeros++
			case keep:
			default:
				t.Fatalf("mask entry %v, want 0 or %v", v, keep)
			}
		}
		if frac := float64(zeros) / float64(len(a)); math.Abs(frac-0.25) > 0.01 {
			t.Errorf("%.4f of %d mask entries are 0, want about 0.25", frac, len(a))
		}
	}
}

// TestDropoutThreshold: fillDropout decides on the integer draw; its
// masks must be exactly those of the test rand.Float64() < p it replaces
// (runs trained before the change draw the same masks), at probabilities
// whose p·2⁵³ is and is not an integer, and at draws on the threshold.
func TestDropoutThreshold(t *testing.T) {
	for _, p := range []float64{0, 0.1, 0.25, 0.5, 1.0 / 3, 0.999, math.Nextafter(0.1, 1)} {
		g := G.NewGraph()
		mask := G.NewVector(g, tensor.Float32, G.WithShape(100000), G.WithInit(G.Zeroes()))
		fillDropout([]*G.Node{mask}, p, rand.NewPCG(9, 4))
		got := Float64s(mask.Value())
		rng := rand.New(rand.NewPCG(9, 4))
		keep := float64(float32(1 / (1 - p)))
		for i, v := range got {
			want := keep
			if rng.Float64() < p {
				want = 0
			}
			if v != want {
				t.Fatalf("p %v: entry %d is %v, the Float64 test gives %v", p, i, v, want)
			}
		}
		thr := dropThreshold(p)
		for _, x := range []uint64{thr - 1, thr, thr + 1} {
			if x >= 1<<53 || int64(x) < 0 {
				continue
			}
			if float64(x)/(1<<53) < p != (x < thr) {
				t.Errorf("p %v: draw %d falls on the other side of the threshold %d", p, x, thr)
			}
		}
	}
}

// TestGPT2Init checks nanoGPT's initialisation: N(0, 0.02) weights and
// embeddings, N(0, 0.02/√(2·blocks)) for att.o and ff.down, zero biases,
// LayerNorm weights 1.
func TestGPT2Init(t *testing.T) {
	spec := config.DefaultModel()
	spec.Vocab, spec.Embedding, spec.Blocks, spec.Heads = 65, 64, 4, 4
	spec.Residual, spec.Norm, spec.Init, spec.FinalNorm = true, "pre", "gpt2", true
	m, err := Build(spec, Options{Batch: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	residualStd := 0.02 / math.Sqrt(8)
	for _, p := range m.Params {
		v := Float64s(p.Node.Value())
		mean, sq := 0.0, 0.0
		for _, x := range v {
			mean += x
			sq += x * x
		}
		mean /= float64(len(v))
		std := math.Sqrt(sq/float64(len(v)) - mean*mean)
		name := p.Name
		switch {
		case len(p.Shape) == 1 && (strings.HasSuffix(name, "norm1.weight") || strings.HasSuffix(name, "norm2.weight") || name == "final_norm.weight"):
			if mean != 1 || std != 0 {
				t.Errorf("%s: mean %v std %v, want ones", name, mean, std)
			}
		case len(p.Shape) == 1:
			if mean != 0 || std != 0 {
				t.Errorf("%s: mean %v std %v, want zeros", name, mean, std)
			}
		default:
			want := 0.02
			if strings.HasSuffix(name, "att.o.weight") || strings.HasSuffix(name, "ff.down.weight") {
				want = residualStd
			}
			// 4096+ draws: the sample std is within a few percent.
			if math.Abs(std-want) > 0.06*want || math.Abs(mean) > 0.1*want {
				t.Errorf("%s: mean %.4g std %.4g, want N(0, %.4g)", name, mean, std, want)
			}
		}
	}
}
