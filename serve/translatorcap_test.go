package serve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

// TestTranslatorKeptWithinItsGraphs: a translator goes back to the cache
// after its request and serves the next; however many sentence lengths
// and beam widths it meets it holds at most translate.MaxPrograms compiled
// graphs (it closes them to make new ones), all reading the model's one
// copy of the weights, so the cache's account of it stays true.
func TestTranslatorKeptWithinItsGraphs(t *testing.T) {
	runs := trainTranslationRun(t, t.TempDir())
	s := newServer(t, Options{Dirs: []string{runs}})
	model := filepath.Join(runs, "tr", train.ModelFile)
	info, err := os.Stat(model)
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(info)
	use := func(sentences []string, beams []int) (*translate.Translator, int) {
		t.Helper()
		tr, release, err := s.models.translator(model, key)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		most := 0
		for _, text := range sentences {
			for _, beam := range beams {
				if _, err := tr.Translate(text, translate.Options{Beam: beam}); err != nil {
					t.Fatalf("%q, beam %d: %v", text, beam, err)
				}
				most = max(most, tr.Programs())
			}
		}
		return tr, most
	}
	first, _ := use([]string{"a1 a2 a3"}, []int{1})
	usedKept, _ := s.models.usage()
	again, most := use([]string{"a1", "a1 a2", "a1 a2 a3", "a1 a2 a3 a4"}, []int{1, 2, 3})
	if again != first {
		t.Error("the translator was not kept for the next request")
	}
	if most > translate.MaxPrograms {
		t.Errorf("four lengths × three beams: the translator held %d graphs, more than %d", most, translate.MaxPrograms)
	}
	if used, _ := s.models.usage(); used != usedKept {
		t.Errorf("after the request the cache holds %d bytes, %d before", used, usedKept)
	}
}
