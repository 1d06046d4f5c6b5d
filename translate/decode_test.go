package translate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/savedmodel"
)

// cacheCases are the switches the cached decoder must agree on.
var cacheCases = []graph.TranslationSpec{
	{Norm: "post", Positions: "sinusoidal", Activation: "relu", Heads: 1, EncoderBlocks: 1, DecoderBlocks: 1, Dtype: "float64"},
	{Norm: "pre", Positions: "learned", Activation: "gelu", Heads: 2, EncoderBlocks: 2, DecoderBlocks: 2, TieEmbeddings: true, Dtype: "float64"},
	{Norm: "post", Positions: "learned", Activation: "gelu_exact", Heads: 4, EncoderBlocks: 1, DecoderBlocks: 3, TieEmbeddings: true, Dtype: "float64"},
	{Norm: "pre", Positions: "sinusoidal", Activation: "relu", Heads: 2, EncoderBlocks: 2, DecoderBlocks: 2, Dtype: "float32"},
	{Norm: "post", Positions: "learned", Activation: "relu", Heads: 4, EncoderBlocks: 2, DecoderBlocks: 2, Dtype: "float32"},
}

// randomModel is an untrained model of spec's switches with small
// vocabularies of made-up words, its weights drawn from seed.
func randomModel(t *testing.T, spec graph.TranslationSpec, seed int64) *Model {
	t.Helper()
	vocab := func(prefix string, n int) *pairs.Vocab {
		words := append([]string(nil), pairs.Specials...)
		for i := range n {
			words = append(words, fmt.Sprintf("%s%d", prefix, i))
		}
		v, err := pairs.NewVocab(words)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	src, tgt := vocab("a", 20), vocab("b", 26)
	spec.SrcVocab, spec.TgtVocab, spec.MaxLen = src.Size(), tgt.Size(), 12
	spec.Embedding, spec.FFHidden = 16, 24
	m, err := graph.BuildTranslation(spec, graph.TranslationOptions{Batch: 1, SrcLen: 2, TgtLen: 2, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	tensors, err := savedmodel.Tensors(m.Params)
	if err != nil {
		t.Fatal(err)
	}
	model := &Model{Path: "random", Spec: spec, Src: src, Tgt: tgt, MaxSource: 10, MaxTarget: 10,
		Config: config.Model{Arch: Arch}, Tensors: map[string]modelfile.Tensor{}}
	for _, x := range tensors {
		model.Tensors[x.Name] = x
	}
	return model
}

// tolerance is the largest relative difference allowed between the cached
// and the recomputed logits: the two graphs sum in different orders.
func tolerance(dtype string) float64 {
	if dtype == "float64" {
		return 1e-12
	}
	return 1e-5
}

// relDiff is ‖a − b‖/‖b‖.
func relDiff(a, b []float64) float64 {
	var d, n float64
	for i := range b {
		d += (a[i] - b[i]) * (a[i] - b[i])
		n += b[i] * b[i]
	}
	return math.Sqrt(d / n)
}

// TestCachedLogitsEqualRecomputed feeds the cached decoder and the whole
// decoder the same words — three beams of different random words, rows
// reordered after every word as beam search does — and requires the same
// next-word logits at every position, fused and primitive.
func TestCachedLogitsEqualRecomputed(t *testing.T) {
	for ci, spec := range cacheCases {
		for _, unfused := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d-%s-%s-unfused=%v", ci, spec.Norm, spec.Positions, unfused), func(t *testing.T) {
				m := randomModel(t, spec, int64(ci+1))
				be := graph.Backend{Unfused: unfused}
				cached := NewTranslator(m, be)
				full := NewTranslator(m, be)
				full.Recompute = true
				src, err := cached.SourceIDs("a3 a7 a1 a15 rare a0")
				if err != nil {
					t.Fatal(err)
				}
				const rows = 3
				dc, err := cached.decoding(src, 1, rows)
				if err != nil {
					t.Fatal(err)
				}
				df, err := full.decoding(src, 1, rows)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(uint64(ci), 9))
				words := make([][]int, rows)
				var parents []int
				worst := 0.0
				for step := range cached.TargetLen() {
					a, err := dc.next(words, parents)
					if err != nil {
						t.Fatal(err)
					}
					b, err := df.next(words, parents)
					if err != nil {
						t.Fatal(err)
					}
					for r := range rows {
						V := m.Spec.TgtVocab
						d := relDiff(a[r*V:(r+1)*V], b[r*V:(r+1)*V])
						worst = max(worst, d)
						if !(d <= tolerance(spec.Dtype)) {
							t.Fatalf("step %d row %d: cached logits differ from the recomputed ones by %.3g (relative), want ≤ %g", step, r, d, tolerance(spec.Dtype))
						}
					}
					// Every row continues a random row, with a random word.
					parents = make([]int, rows)
					next := make([][]int, rows)
					for r := range rows {
						parents[r] = rng.IntN(rows)
						next[r] = append(append([]int(nil), words[parents[r]]...), 4+rng.IntN(m.Spec.TgtVocab-4))
					}
					words = next
				}
				t.Logf("largest relative difference %.3g over %d positions", worst, cached.TargetLen())
			})
		}
	}
}

// TestCachedTranslationsEqualRecomputed translates sentences greedily,
// by beam search and in a padded batch, with and without the cache, and
// requires the same words and log-probabilities.
func TestCachedTranslationsEqualRecomputed(t *testing.T) {
	sentences := []string{"a1 a2 a3", "a19 a4 a4 a8 a11 a0 a2 a5", "a7", "a13 a12 unknown a9 a6"}
	for ci, spec := range cacheCases {
		t.Run(fmt.Sprintf("%d-%s-%s-%s", ci, spec.Norm, spec.Positions, spec.Dtype), func(t *testing.T) {
			m := randomModel(t, spec, int64(10+ci))
			cached := NewTranslator(m, graph.Backend{})
			full := NewTranslator(m, graph.Backend{})
			full.Recompute = true
			words := 0
			for _, s := range sentences {
				for _, beam := range []int{1, 3} {
					a, err := cached.Translate(s, Options{Beam: beam, Alpha: 0.6})
					if err != nil {
						t.Fatal(err)
					}
					b, err := full.Translate(s, Options{Beam: beam, Alpha: 0.6})
					if err != nil {
						t.Fatal(err)
					}
					if a.Text != b.Text || math.Abs(a.LogProb-b.LogProb) > tolerance(spec.Dtype)*math.Abs(b.LogProb)*10 {
						t.Errorf("%q beam %d: cached %q (log p %.15g), recomputed %q (log p %.15g)", s, beam, a.Text, a.LogProb, b.Text, b.LogProb)
					}
					words += len(b.Words)
				}
			}
			if words < 4*len(sentences) {
				t.Errorf("%d words in %d translations; the test wants translations of several words", words, 2*len(sentences))
			}
			// A padded batch: sentences of 2, 4 and 1 words, S = 5.
			batch := []int{5, 6, pairs.EOS, 0, 0, 7, 8, 9, 10, pairs.EOS, 11, pairs.EOS, 0, 0, 0}
			a, err := cached.GreedyBatch(3, batch)
			if err != nil {
				t.Fatal(err)
			}
			b, err := full.GreedyBatch(3, batch)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("batch: cached %v, recomputed %v", a, b)
			}
			for r := range a {
				one := strings.Join(m.Src.Decode(batch[r*5:r*5+5]), " ")
				res, err := cached.Translate(one, Options{Beam: 1})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(res.IDs) != fmt.Sprint(a[r]) {
					t.Errorf("batch row %d (%q): %v, alone %v", r, one, a[r], res.IDs)
				}
			}
		})
	}
}

// TestWordsAsWritten: Options.Word gives a greedy translation's words one
// by one, the words of its Result; a beam search gives none; an error of
// Word or a done Context stops the translation; Close releases the graphs.
func TestWordsAsWritten(t *testing.T) {
	m := randomModel(t, cacheCases[0], 3)
	tr := NewTranslator(m, graph.Backend{})
	var words []string
	res, err := tr.Translate("a1 a2 a3", Options{Beam: 1, Word: func(w string) error { words = append(words, w); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Words) < 2 || strings.Join(words, " ") != strings.Join(res.Words, " ") {
		t.Fatalf("streamed %q, the translation is %q (want several words)", words, res.Words)
	}
	words = nil
	if _, err := tr.Translate("a1 a2 a3", Options{Beam: 3, Word: func(w string) error { words = append(words, w); return nil }}); err != nil || words != nil {
		t.Errorf("beam 3: %v, streamed %q; want no words", err, words)
	}
	stop := errors.New("stop")
	n := 0
	if _, err := tr.Translate("a1 a2 a3", Options{Beam: 1, Word: func(string) error { n++; return stop }}); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Word's error: %v after %d words, want it after one", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.Translate("a1 a2 a3", Options{Beam: 3, Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
	if tr.Programs() == 0 {
		t.Fatal("no graphs compiled")
	}
	tr.Close()
	if tr.Programs() != 0 {
		t.Errorf("%d graphs after Close", tr.Programs())
	}
}
