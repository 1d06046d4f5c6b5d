package serve

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/train"
)

// TestRunsTableArchitectures: a translation run beside GPT runs is compared
// with runs of its own architecture only: alone, its differs is its
// architecture, not the thirty settings every translation departs from a
// GPT's defaults by, and the GPT runs' differs leave it out; its parameter
// count, which its config cannot give (vocab = 0: the data's), is its
// model file's.
func TestRunsTableArchitectures(t *testing.T) {
	fixtures(t)
	dir := t.TempDir()
	runs := trainTranslationRun(t, dir)
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	copyRun(t, causalRun, filepath.Join(runs, "c2"))
	s := newServer(t, Options{Dirs: []string{runs}})
	list := decode[runsList](t, get(t, s, "/api/runs"))

	tr := runByID(t, list, "runs/tr")
	if want := []string{"model.arch=encoder-decoder"}; !slices.Equal(tr.Differs, want) {
		t.Errorf("the lone translation run's differs %q, want %q", tr.Differs, want)
	}
	f, err := modelfile.Read(filepath.Join(runs, "tr", train.ModelFile), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, tn := range f.Tensors {
		want += int64(tn.Len())
	}
	if tr.Params != want || want == 0 {
		t.Errorf("the translation run's params %d, want its model file's %d", tr.Params, want)
	}
	for _, id := range []string{"runs/c", "runs/c2"} {
		if r := runByID(t, list, id); len(r.Differs) != 0 {
			t.Errorf("%s, the same config as its GPT neighbour: differs %q, want nothing (the translation run is not its neighbour)", id, r.Differs)
		}
	}
}
