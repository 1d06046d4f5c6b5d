package serve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

// TestTranslatorClosedPastItsGraphs: a translator goes back to the cache
// after its request while it holds at most maxTranslatorPrograms compiled
// graphs (the next request gets the same one), and is closed after a
// request that made it compile more (the next request gets a new one, and
// the memory it held is given back).
func TestTranslatorClosedPastItsGraphs(t *testing.T) {
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
		for _, text := range sentences {
			for _, beam := range beams {
				if _, err := tr.Translate(text, translate.Options{Beam: beam}); err != nil {
					t.Fatalf("%q, beam %d: %v", text, beam, err)
				}
			}
		}
		return tr, tr.Programs()
	}
	first, n := use([]string{"a1 a2 a3"}, []int{1})
	if n > maxTranslatorPrograms {
		t.Fatalf("one translation compiled %d graphs, more than the %d kept", n, maxTranslatorPrograms)
	}
	usedKept, _ := s.models.usage()
	again, n := use([]string{"a1", "a1 a2", "a1 a2 a3", "a1 a2 a3 a4"}, []int{1, 2, 3})
	if again != first {
		t.Error("a translator within its graphs was not kept for the next request")
	}
	if n <= maxTranslatorPrograms {
		t.Fatalf("four lengths × three beams compiled %d graphs; the test needs more than %d", n, maxTranslatorPrograms)
	}
	if used, _ := s.models.usage(); used >= usedKept {
		t.Errorf("after closing the translator the cache holds %d bytes, %d before: its graphs' share not given back", used, usedKept)
	}
	if next, _ := use([]string{"a2 a1"}, []int{1}); next == again {
		t.Error("a translator past its graphs was kept")
	}
}
