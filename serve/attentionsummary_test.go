package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
)

// attentionAnswer is /api/attention's answer for a language model.
type attentionAnswer struct {
	Tokens  []string
	Blocks  int
	Heads   int
	Summary [][][2]float64
	Maps    [][][]float64
	Head    []int
	Map     []float64
}

// TestAttentionSummaryAndHeadGrid: every answer carries each head's
// entropy and mean distance (sample.Stats of the head's own map, to the
// 6 digits served); a model of more heads than gridAbove answers one
// head's map — block 0's head 0, or head=B.H — instead of all of them;
// a head= that is not BLOCK.HEAD of the model is 400 with one line.
func TestAttentionSummaryAndHeadGrid(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	s := newServer(t, Options{Dirs: []string{runs}})
	const text = "First Ci" // the fixture's context, 8 characters
	m, err := savedmodel.Load(filepath.Join(runs, "c", train.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := m.Vocab.Encode(text)
	smp, _ := sample.New(m, graph.Backend{Threads: 1})
	want, err := smp.Attention(ids)
	smp.Close()
	if err != nil {
		t.Fatal(err)
	}
	B, H := len(want), len(want[0])
	if B*H < 2 || B*H > gridAbove {
		t.Fatalf("the fixture has %d×%d heads; the test wants 2..%d", B, H, gridAbove)
	}
	close := func(got, want float64) bool { return math.Abs(got-want) <= 1e-5*math.Max(1, math.Abs(want)) }
	ask := func(query string) attentionAnswer {
		t.Helper()
		w := get(t, s, "/api/attention?id=runs/c&text="+url.QueryEscape(text)+query)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", query, w.Code, w.Body)
		}
		var a attentionAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
			t.Fatal(err)
		}
		if len(a.Summary) != B {
			t.Fatalf("%s: summary of %d blocks, want %d", query, len(a.Summary), B)
		}
		for b := range want {
			if len(a.Summary[b]) != H {
				t.Fatalf("%s: block %d's summary has %d heads, want %d", query, b, len(a.Summary[b]), H)
			}
			for h := range want[b] {
				st := sample.Stats(want[b][h])
				if got := a.Summary[b][h]; !close(got[0], st.Entropy) || !close(got[1], st.Distance) {
					t.Errorf("%s: block %d head %d: served [entropy, distance] %v, sample.Stats %+v", query, b, h, got, st)
				}
			}
		}
		return a
	}
	sameMap := func(what string, got []float64, m sample.Matrix) {
		t.Helper()
		if len(got) != len(m.W) {
			t.Fatalf("%s: %d weights, want %d", what, len(got), len(m.W))
		}
		for i, v := range m.W {
			if !close(got[i], v) {
				t.Fatalf("%s [%d]: served %v, sample.Attention %v", what, i, got[i], v)
			}
		}
	}

	// Up to gridAbove heads: every map, no single head.
	if a := ask(""); len(a.Maps) != B || a.Map != nil || a.Head != nil {
		t.Errorf("a model of %d heads: %d blocks of maps, head %v, map of %d; want every map and no head", B*H, len(a.Maps), a.Head, len(a.Map))
	}
	// head= asks for one head whatever the model's size.
	lb, lh := B-1, H-1 // the last head
	q := fmt.Sprintf("%d.%d", lb, lh)
	if a := ask("&head=" + q); a.Maps != nil || len(a.Head) != 2 || a.Head[0] != lb || a.Head[1] != lh {
		t.Errorf("head=%s: head %v, %d blocks of maps; want [%d %d] and no maps", q, a.Head, len(a.Maps), lb, lh)
	} else {
		sameMap("head="+q, a.Map, want[lb][lh])
	}
	// Above gridAbove: block 0's head 0.
	old := gridAbove
	gridAbove = B*H - 1
	defer func() { gridAbove = old }()
	if a := ask(""); a.Maps != nil || len(a.Head) != 2 || a.Head[0] != 0 || a.Head[1] != 0 {
		t.Errorf("a model above gridAbove: head %v, %d blocks of maps; want [0 0] and no maps", a.Head, len(a.Maps))
	} else {
		sameMap("the default head", a.Map, want[0][0])
	}

	for _, tc := range []struct{ head, says string }{
		{"x", "want BLOCK.HEAD"}, {"1", "want BLOCK.HEAD"}, {"1.", "want BLOCK.HEAD"}, {"-1.0", "want BLOCK.HEAD"},
		{"0.1.2", "want BLOCK.HEAD"}, {"99.0", "the model has blocks 0–"}, {"0.99", "heads 0–"},
	} {
		w := get(t, s, "/api/attention?id=runs/c&text="+url.QueryEscape(text)+"&head="+url.QueryEscape(tc.head))
		var e struct{ Error string }
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != 400 || !strings.Contains(e.Error, "head="+tc.head) || !strings.Contains(e.Error, tc.says) || strings.Contains(e.Error, "\n") {
			t.Errorf("head=%s: %d %q, want 400 naming head=%s and saying %q in one line", tc.head, w.Code, e.Error, tc.head, tc.says)
		}
	}
}
