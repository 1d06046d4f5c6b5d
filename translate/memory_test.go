package translate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/graph"
)

// TestGraphsShareTheFileWeights: every graph a translator builds reads the
// model file's own tensors (Model.Weights), not a copy each, a whole
// model per sentence length met (an 81M-parameter model's translate
// would peak at 1.18 GB, its attention at 1.75 GB). A translator
// keeps at most MaxPrograms graphs, however many lengths it meets, and
// Check sees each new length before its graphs are built.
func TestGraphsShareTheFileWeights(t *testing.T) {
	for _, spec := range []graph.TranslationSpec{cacheCases[0], cacheCases[3]} {
		m := randomModel(t, spec, 7)
		tr := NewTranslator(m, graph.Backend{})
		var checked []int
		tr.Check = func(S int) error { checked = append(checked, S); return nil }
		shared := func(params []*graph.Param) {
			t.Helper()
			for _, p := range params {
				f := m.Tensors[p.Name]
				switch d := p.Value().Data().(type) {
				case []float32:
					if &d[0] != &f.F32[0] {
						t.Errorf("%s: parameter %s is a copy of the file's tensor", spec.Dtype, p.Name)
					}
				case []float64:
					if &d[0] != &f.F64[0] {
						t.Errorf("%s: parameter %s is a copy of the file's tensor", spec.Dtype, p.Name)
					}
				}
			}
		}
		for n := 1; n <= 5; n++ {
			words := strings.Fields("a1 a2 a3 a4 a5")[:n]
			if _, err := tr.Translate(strings.Join(words, " "), Options{Beam: 2}); err != nil {
				t.Fatal(err)
			}
			if tr.Programs() > MaxPrograms {
				t.Errorf("%d programs after %d lengths; want at most %d", tr.Programs(), n, MaxPrograms)
			}
			for _, p := range tr.enc {
				shared(p.Params)
			}
			for _, p := range tr.step {
				shared(p.Params)
			}
		}
		if want := []int{2, 3, 4, 5, 6}; !slices.Equal(checked, want) {
			t.Errorf("Check saw source lengths %v; want %v, each once", checked, want)
		}
		// attention: its greedy decoding (one row: new graphs) and its
		// whole graph are checked; a second translation at beam 2, not.
		checked = nil
		if _, err := tr.Attention("a1 a2 a3 a4 a5", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Translate("a5 a4 a3 a2 a1", Options{Beam: 2}); err != nil {
			t.Fatal(err)
		}
		if want := []int{6, 6}; !slices.Equal(checked, want) {
			t.Errorf("attention and a translation checked %v; want %v", checked, want)
		}
		tr.Close()
	}
}

// TestTranslationParamsCountTheGraph: config's count of a translation
// model's parameters, which its memory estimate starts from, is the
// graph's.
func TestTranslationParamsCountTheGraph(t *testing.T) {
	for _, spec := range cacheCases {
		m := randomModel(t, spec, 1)
		c := m.Config
		c.Embedding, c.Heads, c.EncoderBlocks, c.DecoderBlocks, c.FFHidden = m.Spec.Embedding, m.Spec.Heads, m.Spec.EncoderBlocks, m.Spec.DecoderBlocks, m.Spec.FFHidden
		c.Positions, c.TieEmbeddings, c.Context = m.Spec.Positions, m.Spec.TieEmbeddings, m.Spec.MaxLen
		held := 0
		for _, x := range m.Tensors {
			held += x.Len()
		}
		if got := c.TranslationParams(m.Src.Size(), m.Tgt.Size()); got != int64(held) {
			t.Errorf("%+v: TranslationParams %d; the graph has %d", spec, got, held)
		}
	}
}

// TestCheckDropsTheCacheFirst: a new length refused while the translator
// holds graphs of other lengths is asked about again once they are
// dropped (a sentence that fits alone is not refused for the cache); a
// length refused alone stays refused.
func TestCheckDropsTheCacheFirst(t *testing.T) {
	m := randomModel(t, cacheCases[0], 7)
	tr := NewTranslator(m, graph.Backend{})
	var asked []int
	tr.Check = func(S int) error {
		asked = append(asked, tr.Programs())
		if S > 3 && tr.Programs() > 0 {
			return fmt.Errorf("%w: no room beside the cache", ErrInput)
		}
		if S > 5 {
			return fmt.Errorf("%w: no room at all", ErrInput)
		}
		return nil
	}
	if _, err := tr.Translate("a1 a2", Options{Beam: 2}); err != nil {
		t.Fatal(err)
	}
	held := tr.Programs()
	if held == 0 {
		t.Fatal("no graphs kept after a translation")
	}
	asked = nil
	if _, err := tr.Translate("a1 a2 a3 a4", Options{Beam: 2}); err != nil {
		t.Fatalf("a sentence that fits alone: %v", err)
	}
	if !slices.Equal(asked, []int{held, 0}) {
		t.Errorf("Check saw %v programs held; want %v (asked, cache dropped, asked again)", asked, []int{held, 0})
	}
	asked = nil
	_, err := tr.Translate("a1 a2 a3 a4 a5 a6", Options{Beam: 2})
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "no room at all") {
		t.Errorf("a sentence too long alone: %v", err)
	}
}
