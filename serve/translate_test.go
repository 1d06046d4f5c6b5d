package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

// trainTranslationRun trains a tiny encoder–decoder for a few steps into
// runs/tr under dir and returns the runs folder.
func trainTranslationRun(t *testing.T, dir string) string {
	t.Helper()
	runs := filepath.Join(dir, "runs")
	files := map[string]string{
		"toy.tsv":  toypairs.Counted(200),
		"toy.toml": toypairs.Config(filepath.Join(dir, "toy.tsv"), filepath.Join(runs, "tr"), 20, "", "eval_every = 10\n"),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, "toy.toml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(context.Background(), cfg, train.Options{Log: io.Discard, Backend: graph.Backend{Threads: 1}}); err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestTranslationRun: a translation run in the runs table, its attention
// explorer's three views (the numbers translate.Translator.Attention
// gives, which gptg attention draws), its playground translating
// (greedy and beam, the words gptg translate gives) and the bad requests.
func TestTranslationRun(t *testing.T) {
	dir := t.TempDir()
	runs := trainTranslationRun(t, dir)
	s := newServer(t, Options{Dirs: []string{runs}})
	list := decode[runsList](t, get(t, s, "/api/runs"))
	if r := runByID(t, list, "runs/tr"); r.Arch != config.ArchEncoderDecoder || r.State != stateFinished || !r.HasModel || r.Step != 20 {
		t.Errorf("the translation run in the table: %+v", r)
	}
	m, err := translate.Load(filepath.Join(runs, "tr", train.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	tr := translate.NewTranslator(m, graph.Backend{})

	for _, target := range []string{"", "b3 b2 b1"} {
		q := "/api/attention?id=runs/tr&text=" + url.QueryEscape("a1 a2 a3")
		if target != "" {
			q += "&target=" + url.QueryEscape(target)
		}
		w := get(t, s, q)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", q, w.Code, w.Body)
		}
		type view struct {
			Rows, Cols []string
			Maps       [][][]float64
		}
		var got struct {
			Translation, Translated bool
			Source, Target, Written []string
			Heads                   int
			Views                   map[string]view
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want, err := tr.Attention("a1 a2 a3", target)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Translation || got.Translated != (target == "") || strings.Join(got.Written, " ") != strings.Join(want.Written, " ") ||
			strings.Join(got.Source, " ") != "a1 a2 a3 <eos>" || got.Heads != 2 {
			t.Fatalf("%s: %+v", q, got)
		}
		for name, maps := range map[string][][]graph.Matrix{"cross": want.Cross, "encoder": want.Encoder, "decoder": want.Decoder} {
			v := got.Views[name]
			if len(v.Maps) != len(maps) {
				t.Fatalf("%s: %d blocks served, want %d", name, len(v.Maps), len(maps))
			}
			for b := range maps {
				for h, mat := range maps[b] {
					if len(v.Rows) != mat.N || len(v.Cols) != mat.Cols() {
						t.Fatalf("%s: %d×%d labels for a %d×%d map", name, len(v.Rows), len(v.Cols), mat.N, mat.Cols())
					}
					for i := range mat.N {
						sum := 0.0
						for j := range mat.Cols() {
							x := v.Maps[b][h][i*mat.Cols()+j]
							sum += x
							if math.Abs(x-mat.At(i, j)) > 1e-6 {
								t.Fatalf("%s block %d head %d (%d, %d): served %v, the model's %v", name, b, h, i, j, x, mat.At(i, j))
							}
						}
						if math.Abs(sum-1) > 1e-5 {
							t.Fatalf("%s block %d head %d row %d sums to %v", name, b, h, i, sum)
						}
					}
				}
			}
		}
	}

	// tokens bounds the words written (the page's box), as it bounds a
	// sampled run's tokens.
	for _, c := range []struct{ beam, tokens int }{{0, 1}, {0, 2}, {3, 1}, {3, 50}} {
		beam := c.beam
		w := post(s, "/api/generate", fmt.Sprintf(`{"id":"runs/tr","prompt":"a1 a2 a3","tokens":%d,"beam":%d}`, c.tokens, beam))
		if w.Code != 200 {
			t.Fatalf("generate beam %d: %d %s", beam, w.Code, w.Body)
		}
		var text strings.Builder
		done := false
		for _, ev := range events(w.Body.String()) {
			switch ev[0] {
			case "token":
				var s string
				json.Unmarshal([]byte(ev[1]), &s)
				text.WriteString(s)
			case "done":
				done = true
			}
		}
		want, err := tr.Translate("a1 a2 a3", translate.Options{Beam: max(1, beam), Alpha: 0.6, MaxWords: c.tokens})
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Words) > c.tokens {
			t.Errorf("MaxWords %d: %d words", c.tokens, len(want.Words))
		}
		if !done || text.String() != strings.Join(want.Words, " ") {
			t.Errorf("beam %d: streamed %q (done %v), gptg translate gives %q", beam, text.String(), done, strings.Join(want.Words, " "))
		}
	}

	for _, bad := range []struct{ method, target, body string }{
		{"POST", "/api/generate", `{"id":"runs/tr","prompt":"a1","tokens":1,"beam":9}`},
		{"POST", "/api/generate", `{"id":"runs/tr","prompt":"   ","tokens":1}`},
		{"POST", "/api/generate", `{"id":"runs/tr","prompt":"a1","tokens":1,"temperature":0.5}`},
		{"POST", "/api/generate", `{"id":"runs/tr","prompt":"a1","tokens":1,"top_k":5}`},
		{"POST", "/api/generate", `{"id":"runs/tr","prompt":"a1","tokens":1,"seed":7}`},
		{"POST", "/api/generate", `{"id":"runs/tr","prompt":"a1","tokens":1} {"id":"runs/tr"}`},
		{"POST", "/api/generate", `{"id":"runs/tr","prompt":"a1","tokens":1}}`},
		{"GET", "/api/attention?id=runs/tr&text=" + url.QueryEscape("   "), ""},
		{"GET", "/api/attention?id=runs/tr&text=a1&target=" + url.QueryEscape("b1 b2 b3 b4 b5 b6"), ""},
		{"GET", "/api/attention?id=runs/tr&text=a1&target=" + strings.Repeat("b", maxTextBytes+1), ""},
	} {
		var code int
		var body string
		if bad.method == "POST" {
			w := post(s, bad.target, bad.body)
			code, body = w.Code, w.Body.String()
		} else {
			w := get(t, s, bad.target)
			code, body = w.Code, w.Body.String()
		}
		if code != 400 || !strings.Contains(body, `"error"`) {
			t.Errorf("%s %.80s %s: %d %s, want 400 with an error", bad.method, bad.target, bad.body, code, body)
		}
	}

	// Every request above ran on one load of the model file, from the
	// server's model cache; a newer model file (train saves one at each
	// evaluation) is loaded anew, and the old one is dropped.
	if used, n := s.models.usage(); s.models.loads != 1 || n != 1 || used <= 0 {
		t.Errorf("after %d requests: the translation model read %d times, %d kept, %d bytes; want one read and kept", 11, s.models.loads, n, used)
	}
	model := filepath.Join(runs, "tr", train.ModelFile)
	b, _ := os.ReadFile(model)
	os.WriteFile(model+".new", b, 0o644)
	os.Rename(model+".new", model)
	if w := get(t, s, "/api/attention?id=runs/tr&text=a1"); w.Code != 200 {
		t.Fatalf("after the model file was replaced: %d %s", w.Code, w.Body)
	}
	if _, n := s.models.usage(); s.models.loads != 2 || n != 1 {
		t.Errorf("after the model file was replaced: %d reads, %d kept; want a second read, the old one dropped", s.models.loads, n)
	}
}
