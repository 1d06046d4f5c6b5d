package serve

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunPageCarriesItsFirstState: /run?id=X comes with /api/run's answer
// for X inside the page (so that it draws without a request: a headless
// screenshot shows the run, not "loading…"), escaped so that a run named
// like markup cannot close the script element; other pages, and an
// unknown run, come without it.
func TestRunPageCarriesItsFirstState(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	const odd = "a</script><b>"
	copyRun(t, causalRun, filepath.Join(runs, odd))
	s := newServer(t, Options{Dirs: []string{runs}})
	id := "runs/" + odd
	w := get(t, s, "/run?id="+url.QueryEscape(id))
	body := w.Body.String()
	m := regexp.MustCompile(`(?s)<script id="first-state" type="application/json">(.*?)</script>`).FindStringSubmatch(body)
	if w.Code != 200 || m == nil {
		t.Fatalf("%d, no first state in:\n%.600s", w.Code, body)
	}
	if strings.Contains(m[1], "<") {
		t.Errorf("the state holds a raw <: %.300s", m[1])
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(m[1]), &got); err != nil {
		t.Fatalf("the first state is not JSON: %v: %.300s", err, m[1])
	}
	api := get(t, s, "/api/run?id="+url.QueryEscape(id))
	if err := json.Unmarshal(api.Body.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "state", "step", "config", "differs", "params"} {
		gj, _ := json.Marshal(got[k])
		wj, _ := json.Marshal(want[k])
		if string(gj) != string(wj) {
			t.Errorf("%s: the page's %s, /api/run's %s", k, gj, wj)
		}
	}
	for _, page := range []string{"/", "/run?id=runs/missing", "/compare?id=runs/x"} {
		if w := get(t, s, page); w.Code != 200 || strings.Contains(w.Body.String(), "first-state") {
			t.Errorf("%s: %d, a first state %v; want the page without one", page, w.Code, strings.Contains(w.Body.String(), "first-state"))
		}
	}
}
