package serve

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/memlimit"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

// fakeHeadroom makes the server see a process limit leaving bytes (plus
// its own reserve) for the models, until the test ends.
func fakeHeadroom(t *testing.T, bytes int64) {
	old := findHeadroom
	findHeadroom = func() (memlimit.Headroom, bool) {
		return memlimit.Headroom{Bytes: float64(bytes + serverReserve), Limit: "ulimit -v 2700000 KiB"}, true
	}
	t.Cleanup(func() { findHeadroom = old })
}

// TestModelMemoryCappedByTheProcess: a --model-memory (or the default)
// larger than what the process may take is capped to it, which the server
// says once (Note). Within the cap, two models take turns (the least
// recently used is dropped for the other); a model over the cap is
// answered 507 naming the limit, and the server goes on serving the
// others, never admitting models up to --model-memory into the runtime's
// out-of-memory trace (ulimit -v 2700000, --model-memory 20, a 202 MB
// model).
func TestModelMemoryCappedByTheProcess(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "a"))
	copyRun(t, causalRun, filepath.Join(runs, "b"))
	m, _ := savedmodel.Load(causalModelFile)
	one := int64(samplerMemory(m.Spec)) + int64(8*m.Spec.ParamCount())
	fakeHeadroom(t, one+one/2)
	for _, given := range []int64{20 << 30, 0} {
		s := newServer(t, Options{Dirs: []string{runs}, ModelMemory: given})
		want := "--model-memory 20 GiB is more than this process may use ("
		if given == 0 {
			want = "--model-memory 2 GiB (the default) is more than this process may use ("
		}
		if !strings.HasPrefix(s.Note, want) || !strings.Contains(s.Note, "under ulimit -v 2700000 KiB") || s.models.budget != one+one/2 {
			t.Errorf("--model-memory %d: note %q, budget %d; want %q… and a budget of %d", given, s.Note, s.models.budget, want, one+one/2)
		}
	}
	s := newServer(t, Options{Dirs: []string{runs}, ModelMemory: 20 << 30})
	for _, id := range []string{"a", "b", "a", "b"} {
		if w := post(s, "/api/generate", `{"id":"runs/`+id+`","prompt":"First","tokens":3}`); w.Code != 200 {
			t.Fatalf("%s: %d %s", id, w.Code, w.Body)
		}
		if used, _ := s.models.usage(); used > one+one/2 || used < one {
			t.Errorf("after %s: %d bytes held; want a model's runner, at most %d bytes", id, used, one+one/2)
		}
	}
	tr := trainTranslationRun(t, t.TempDir())
	if err := os.Rename(filepath.Join(tr, "tr"), filepath.Join(runs, "tr")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(runs, "tr", train.ModelFile)
	tm, err := translate.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	// Under a cap of the GPT model's need, less than the translation
	// model's: 507 naming the limit, and the server goes on serving a
	// model that fits (the GPT run).
	if trNeed := tensorBytes(tm.Tensors) + translatorMemory(tm); trNeed <= one {
		t.Fatalf("the fixtures' translation model needs %d bytes, the GPT model %d: want it larger", trNeed, one)
	}
	fakeHeadroom(t, one)
	s = newServer(t, Options{Dirs: []string{runs}})
	w := post(s, "/api/generate", `{"id":"runs/tr","prompt":"a1 a2","tokens":1}`)
	if w.Code != http.StatusInsufficientStorage || !strings.Contains(w.Body.String(), "more than the server's model memory") ||
		!strings.Contains(w.Body.String(), "all that this process may use, under ulimit -v 2700000 KiB") {
		t.Errorf("a model over the capped model memory: %d %s; want 507 naming the limit", w.Code, w.Body)
	}
	if w := post(s, "/api/generate", `{"id":"runs/a","prompt":"First","tokens":3}`); w.Code != 200 {
		t.Errorf("after the 507, a model that fits: %d %s", w.Code, w.Body)
	}
	// A translation model over the cap is refused before its tensors are
	// read: its last value made NaN, which reading reports (422), is not
	// seen.
	fakeHeadroom(t, (tensorBytes(tm.Tensors)+translatorMemory(tm))/2)
	s = newServer(t, Options{Dirs: []string{runs}})
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := f.Stat()
	if _, err := f.WriteAt([]byte{0, 0, 0xc0, 0x7f}, info.Size()-4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	w = post(s, "/api/generate", `{"id":"runs/tr","prompt":"a1 a2","tokens":1}`)
	if w.Code != http.StatusInsufficientStorage || !strings.Contains(w.Body.String(), "all that this process may use") {
		t.Errorf("a translation model over the capped model memory: %d %s; want 507 before reading it", w.Code, w.Body)
	}
	fakeHeadroom(t, 1<<30)
	s = newServer(t, Options{Dirs: []string{runs}})
	if w := post(s, "/api/generate", `{"id":"runs/tr","prompt":"a1 a2","tokens":1}`); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "NaN") {
		t.Errorf("the same model read: %d %s; want 422 naming the NaN", w.Code, w.Body)
	}
}
