package serve

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gptg/gptg/train"
)

// Round six of hostile input (issue #24; the probes are
// testdata/hostile/probes_hserve.py): a metrics.jsonl of many tiny lines,
// requests from other sites' pages, a comparison naming one run many times.

// TestMetricsOfManyTinyLines: a metrics.jsonl of short lines ("{}" is a
// row) is bounded by its lines, not only its bytes. Before, 256 MiB of
// "{}" lines (89 million rows) took an /api/metrics request ten minutes
// and 11 GB, and /api/runs, which held the server's lock while it read
// every run, four minutes during which no request was answered.
func TestMetricsOfManyTinyLines(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "tiny"))
	copyRun(t, causalRun, filepath.Join(runs, "edge"))
	// One line past the bound, and exactly the bound.
	if err := os.WriteFile(filepath.Join(runs, "tiny", train.MetricsFile), bytes.Repeat([]byte("{}\n"), maxMetricsLines+1), 0o644); err != nil {
		t.Fatal(err)
	}
	var rising bytes.Buffer // rows the curve draws: one a step
	for i := range maxMetricsLines {
		fmt.Fprintf(&rising, "{\"step\":%d}\n", i)
	}
	if err := os.WriteFile(filepath.Join(runs, "edge", train.MetricsFile), rising.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, Options{Dirs: []string{runs}})
	w := get(t, s, "/api/metrics?id=runs/tiny")
	if w.Code != 422 || !strings.Contains(w.Body.String(), "more than 2097152 lines") {
		t.Errorf("metrics of %d lines: %d %.200s, want 422 naming the bound", maxMetricsLines+1, w.Code, w.Body.String())
	}
	if w := get(t, s, "/api/metrics?id=runs/edge"); w.Code != 200 {
		t.Errorf("metrics of exactly %d lines: %d %.200s, want 200", maxMetricsLines, w.Code, w.Body.String())
	}
	w = get(t, s, "/api/live?id=runs/tiny")
	if ev := events(w.Body.String()); len(ev) != 1 || ev[0][0] != "error" || !strings.Contains(ev[0][1], "more than") {
		t.Errorf("live stream of the long file: %.300s, want one error event", w.Body.String())
	}
	list := decode[runsList](t, get(t, s, "/api/runs"))
	if r := runByID(t, list, "runs/tiny"); r.State != stateDamaged || !strings.Contains(r.Problem, "more than 2097152 lines") {
		t.Errorf("the run of the long file in the table: %s %q, want damaged naming the bound", r.State, r.Problem)
	}
	if r := runByID(t, list, "runs/edge"); r.State == stateDamaged || r.Rows != maxMetricsLines {
		t.Errorf("the run at the bound: %s %q, %d rows", r.State, r.Problem, r.Rows)
	}
}

// TestRunsTableDoesNotHoldTheServer: while /api/runs reads a run folder,
// other requests are answered. A run's cache lock is held here as a slow
// read would hold it.
func TestRunsTableDoesNotHoldTheServer(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "a"))
	copyRun(t, causalRun, filepath.Join(runs, "b"))
	s := newServer(t, Options{Dirs: []string{runs}})
	get(t, s, "/api/run?id=runs/a") // makes a's cache
	s.mu.Lock()
	c := s.caches["runs/a"]
	s.mu.Unlock()
	c.mu.Lock() // a's files are "being read"
	done := make(chan int, 1)
	go func() { done <- get(t, s, "/api/runs").Code }()
	for c.waiting.Load() == 0 { // the runs table is waiting for a's files
		runtime.Gosched()
	}
	other := make(chan int, 1)
	go func() { other <- get(t, s, "/api/run?id=runs/b").Code }()
	// Answered while the lock is held: a wait for the runs table would
	// never end (the generous bound only turns that into a failure).
	select {
	case code := <-other:
		if code != 200 {
			t.Errorf("another run's page while the runs table is being made: %d", code)
		}
	case <-time.After(time.Minute):
		t.Errorf("another run's page waited a minute for the runs table being made")
	}
	c.mu.Unlock()
	if code := <-done; code != 200 {
		t.Errorf("the runs table: %d", code)
	}
}

// TestCrossSiteRequestsRefused: the API refuses what a page of another
// site makes a browser send (a POST that runs a model, a GET of attention
// maps or live streams): its Host is right, so the DNS-rebinding check
// lets it through. Before, both answered 200.
func TestCrossSiteRequestsRefused(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	s := newServer(t, Options{Dirs: []string{runs}})
	body := `{"id":"runs/c","prompt":"a","tokens":2}`
	for _, c := range []struct {
		name, method, target string
		header               [2]string
		want                 int
	}{
		{"POST from another site's page (Origin)", "POST", "/api/generate", [2]string{"Origin", "http://evil.example"}, 403},
		{"POST from a sandboxed page (Origin null)", "POST", "/api/generate", [2]string{"Origin", "null"}, 403},
		{"POST from another port of this host", "POST", "/api/generate", [2]string{"Origin", "http://127.0.0.1:9999"}, 403},
		{"POST from this host and port over https (another origin)", "POST", "/api/generate", [2]string{"Origin", "https://127.0.0.1:8080"}, 403},
		{"POST marked cross-site", "POST", "/api/generate", [2]string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"attention GET marked cross-site", "GET", "/api/attention?id=runs/c&text=a", [2]string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"live GET marked same-site", "GET", "/api/live?id=runs/c", [2]string{"Sec-Fetch-Site", "same-site"}, 403},
		{"POST from this server's own page", "POST", "/api/generate", [2]string{"Origin", "http://127.0.0.1:8080"}, 200},
		{"POST marked same-origin", "POST", "/api/generate", [2]string{"Sec-Fetch-Site", "same-origin"}, 200},
		{"the runs page opened from a link elsewhere", "GET", "/", [2]string{"Sec-Fetch-Site", "cross-site"}, 200},
	} {
		var rd *strings.Reader
		if c.method == "POST" {
			rd = strings.NewReader(body)
		} else {
			rd = strings.NewReader("")
		}
		// A live stream that is (wrongly) answered ends with its request.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req := httptestRequest(c.method, c.target, rd).WithContext(ctx)
		req.Header.Set(c.header[0], c.header[1])
		w := serveOne(s, req)
		cancel()
		if w.Code != c.want {
			t.Errorf("%s: %d %.200s, want %d", c.name, w.Code, w.Body.String(), c.want)
		}
		if c.want == 403 && !strings.Contains(w.Body.String(), "refused") {
			t.Errorf("%s: %.200s, want a message saying why", c.name, w.Body.String())
		}
	}
}

// TestCompareCountsARunOnce: a runs.csv naming one run many times draws
// it once. Before, 400 lines naming one seed made its variant's curve a
// mean "over 400 runs" with sd 0.
func TestCompareCountsARunOnce(t *testing.T) {
	fixtures(t)
	dir := filepath.Join(t.TempDir(), "runs")
	out := filepath.Join(dir, "abl")
	copyRun(t, causalRun, filepath.Join(out, "a", "seed-1"))
	os.WriteFile(filepath.Join(out, "a", "seed-1", train.MetricsFile), []byte(`{"step":10,"loss":3}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(out, "summary.csv"), []byte("name,n\na,1\n"), 0o644)
	csv := "name,seed,dir,status\n" + strings.Repeat("a,1,x,finished\n", 400) + "..,0,x,x\n../..,0,x,x\n"
	os.WriteFile(filepath.Join(out, "runs.csv"), []byte(csv), 0o644)
	s := newServer(t, Options{Dirs: []string{dir}})
	c := decode[compareAnswer](t, get(t, s, "/api/compare?id=runs/abl"))
	if len(c.Variants) == 0 || len(c.Variants[0].Runs) != 1 || len(c.Variants[0].Train.N) != 1 || c.Variants[0].Train.N[0] != 1 {
		t.Fatalf("one run named 400 times: %+v, want it drawn once", c.Variants)
	}
}

func httptestRequest(method, target string, body *strings.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	req.Host = "127.0.0.1:8080"
	return req
}

func serveOne(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestMetricsThatCannotBeServed: a metrics.jsonl that is a FIFO, a link to
// a FIFO or a link out of the folder is a 403 naming it, and its run is
// damaged in the table. Before, /api/metrics answered 500 and the table
// called the run finished.
func TestMetricsThatCannotBeServed(t *testing.T) {
	fixtures(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	os.WriteFile(filepath.Join(dir, "secret"), []byte(`{"step":1,"loss":1}`+"\n"), 0o644)
	for _, name := range []string{"fifo", "linkfifo", "out"} {
		copyRun(t, causalRun, filepath.Join(runs, name))
		os.Remove(filepath.Join(runs, name, train.MetricsFile))
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(runs, "fifo", train.MetricsFile), 0o644))
	must(os.Symlink("../fifo/"+train.MetricsFile, filepath.Join(runs, "linkfifo", train.MetricsFile)))
	must(os.Symlink("../../secret", filepath.Join(runs, "out", train.MetricsFile)))
	s := newServer(t, Options{Dirs: []string{runs}})
	list := decode[runsList](t, get(t, s, "/api/runs"))
	for _, c := range []struct{ id, want string }{
		{"runs/fifo", "metrics.jsonl is not a regular file"},
		{"runs/linkfifo", "metrics.jsonl is not a regular file"},
		{"runs/out", "metrics.jsonl is a link that leads out of the served folders"},
	} {
		w := get(t, s, "/api/metrics?id="+c.id)
		if w.Code != 403 || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("metrics of %s: %d %.200s, want 403 %q", c.id, w.Code, w.Body.String(), c.want)
		}
		if r := runByID(t, list, c.id); r.State != stateDamaged || !strings.Contains(r.Problem, c.want) {
			t.Errorf("%s in the table: %s %q, want damaged: %q", c.id, r.State, r.Problem, c.want)
		}
	}
}
