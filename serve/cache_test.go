package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/testwait"
	"github.com/gptg/gptg/train"
)

// writeMetrics writes n rows of steps from..from+n-1 to a run's
// metrics.jsonl, replacing it (as a resume does: a new file renamed over).
func writeMetrics(t *testing.T, run string, from, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"step":%d,"loss":%g,"lr":0.001,"tokens_per_s":100}`+"\n", from+i, 3-float64(i)/float64(n))
	}
	p := filepath.Join(run, train.MetricsFile)
	if err := os.WriteFile(p+".new", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsCache: /api/metrics answers from a parsed copy of the file
// that follows it: rows appended are read alone (from the last offset),
// a rewrite (another inode) or a shorter file starts over, a deleted file
// is no rows; the copies of all runs stay under the memory bound, the
// least recently used dropped first, and a run over the bound alone is
// answered but not kept.
func TestMetricsCache(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	for _, id := range []string{"a", "b", "c"} {
		copyRun(t, causalRun, filepath.Join(runs, id))
		writeMetrics(t, filepath.Join(runs, id), 1, 1000)
	}
	s := newServer(t, Options{Dirs: []string{runs}})
	steps := func(id string) []int {
		t.Helper()
		w := get(t, s, "/api/metrics?id=runs/"+id)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", id, w.Code, w.Body)
		}
		return decode[columns](t, w).Step
	}
	if got := steps("a"); len(got) != 1000 || got[999] != 1000 {
		t.Fatalf("%d rows, want 1000", len(got))
	}
	e := s.metrics.entries["runs/a"]
	offset := e.tail.offset
	// Appended rows: read from where the copy ended, nothing before.
	p := filepath.Join(runs, "a", train.MetricsFile)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"step":1001,"loss":1,"lr":0.001,"tokens_per_s":100}` + "\n" + `{"step":1002,"lo`)
	f.Close()
	// Poison what was read already: a copy that read the file again would
	// see the damage and count the line as bad.
	raw, _ := os.ReadFile(p)
	copy(raw[:10], "XXXXXXXXXX")
	fh, _ := os.OpenFile(p, os.O_WRONLY, 0)
	fh.WriteAt(raw[:10], 0)
	fh.Close()
	if got := steps("a"); len(got) != 1001 || got[1000] != 1001 || got[0] != 1 {
		t.Fatalf("after appending: %d rows (first %v), want 1001 with the first unchanged", len(got), got[0])
	}
	if e.tail.bad != 0 || e.tail.offset <= offset {
		t.Errorf("the appended rows were not read from the last offset: %d bad lines, offset %d → %d", e.tail.bad, offset, e.tail.offset)
	}
	// A rewrite (a resume renames a new file over it): the new file's rows.
	writeMetrics(t, filepath.Join(runs, "a"), 500, 20)
	if got := steps("a"); len(got) != 20 || got[0] != 500 {
		t.Fatalf("after a rewrite: %d rows from step %v, want 20 from 500", len(got), got)
	}
	// Cut shorter in place (same inode): started over too.
	os.Truncate(p, 0)
	os.WriteFile(p, []byte(`{"step":7,"loss":2}`+"\n"), 0o644)
	if got := steps("a"); len(got) != 1 || got[0] != 7 {
		t.Fatalf("after truncating: %v, want the one row of step 7", got)
	}
	os.Remove(p)
	if got := steps("a"); len(got) != 0 {
		t.Fatalf("after deleting the file: %v, want no rows", got)
	}

	// The bound: room for about 1.5 runs of 1000 rows.
	steps("b")
	per := s.metrics.entries["runs/b"].bytes
	if per < 1000*5*8 {
		t.Fatalf("1000 rows accounted as %d bytes, want at least their 40,000", per)
	}
	s.metrics.budget = per * 3 / 2
	steps("c") // b is dropped: c is the most recent
	if used, n := s.metrics.usage(); used > s.metrics.budget || s.metrics.entries["runs/b"] != nil || s.metrics.entries["runs/c"] == nil {
		t.Errorf("over the bound: %d bytes in %d runs (bound %d); want b dropped and c kept", used, n, s.metrics.budget)
	}
	steps("b") // and back: c is dropped
	if s.metrics.entries["runs/c"] != nil || s.metrics.entries["runs/b"] == nil {
		t.Error("b read again did not drop c, the least recently used")
	}
	// A run larger than the bound alone is answered and not kept.
	writeMetrics(t, filepath.Join(runs, "c"), 1, 5000)
	if got := steps("c"); len(got) != 5000 {
		t.Fatalf("a run over the bound: %d rows, want its 5000", len(got))
	}
	if used, _ := s.metrics.usage(); used > s.metrics.budget || s.metrics.entries["runs/c"] != nil {
		t.Errorf("a run over the bound was kept: %d bytes held, bound %d", used, s.metrics.budget)
	}
	// A run deleted: its copy goes with it at the next scan.
	os.RemoveAll(filepath.Join(runs, "b"))
	age(s, scanEvery)
	get(t, s, "/api/runs")
	if _, n := s.metrics.usage(); n != 0 {
		t.Errorf("%d runs' metrics kept after the runs were deleted or dropped", n)
	}
}

// TestLiveStartsFromTheCache: a live stream sends the rows there are from
// the parsed copy (in events of liveChunk rows), without reading the file
// again, then goes on from where the copy ended.
func TestLiveStartsFromTheCache(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "a"))
	writeMetrics(t, filepath.Join(runs, "a"), 1, liveChunk+10)
	s := newServer(t, Options{Dirs: []string{runs}})
	get(t, s, "/api/metrics?id=runs/a")
	loaded := s.metrics.entries["runs/a"]
	_, tail, err := s.metrics.columns(mustFolder(t, s, "runs/a"))
	if err != nil || tail.rows != liveChunk+10 || s.metrics.entries["runs/a"] != loaded {
		t.Fatalf("the copy: %v, %d rows", err, tail.rows)
	}
	// Damage the rows already read, in place: a stream that read the file
	// again would not start at step 1.
	fh, _ := os.OpenFile(filepath.Join(runs, "a", train.MetricsFile), os.O_WRONLY, 0)
	fh.WriteAt([]byte("XXXXXXXXXX"), 0)
	fh.Close()
	ev := liveEvents(t, s, "runs/a", 2)
	if ev[0][0] != "rows" || ev[1][0] != "rows" || !strings.HasPrefix(ev[0][1], `{"step":[1,2,`) ||
		!strings.HasPrefix(ev[1][1], fmt.Sprintf(`{"step":[%d,`, liveChunk+1)) || decodeCols(t, ev[0][1]).len() != liveChunk || decodeCols(t, ev[1][1]).len() != 10 {
		t.Fatalf("the first events: %.80s … %.80s", ev[0][1], ev[1][1])
	}
}

func mustFolder(t *testing.T, s *Server, id string) *folder {
	t.Helper()
	f, _, err := s.lookupID(id, kindRun)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func decodeCols(t *testing.T, data string) columns {
	t.Helper()
	var c columns
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// liveEvents reads the first n events of a run's live stream.
func liveEvents(t *testing.T, s *Server, id string, n int) [][2]string {
	t.Helper()
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/live?id="+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	var out [][2]string
	var ev, data string
	for len(out) < n {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended after %d events: %v", len(out), err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "" && ev != "":
			out = append(out, [2]string{ev, data})
			ev, data = "", ""
		}
	}
	return out
}

// TestDiffersFromParent: a run whose config extends another shows, in the
// runs table and on its page, the settings it changes from that parent
// (recorded by train in its config.toml), not its differences from the
// other runs; a run without a parent keeps those.
func TestDiffersFromParent(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	files := map[string]string{
		"base.toml": fmt.Sprintf(`[data]
path = %q
stride = 4
[model]
context = 8
embedding = 8
blocks = 1
heads = 1
[train]
batch = 2
max_steps = 2
log_every = 1
`, testmodel.TinyText()),
		"child.toml": `extends = "base.toml"
[model]
heads = 2
[train]
lr = 0.002
`,
		"same.toml": `extends = "base.toml"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"base", "child", "same"} {
		cfg, err := config.Load(filepath.Join(dir, name+".toml"), []string{"train.out=" + filepath.Join(runs, name), "train.seed=7"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := train.Run(context.Background(), cfg, train.Options{Log: io.Discard}); err != nil {
			t.Fatal(err)
		}
	}
	s := newServer(t, Options{Dirs: []string{runs}})
	list := decode[runsList](t, get(t, s, "/api/runs"))
	want := map[string]string{
		"child": "model.heads=2 train.lr=0.002 train.min_lr=0.0002 train.seed=7",
		"same":  "train.seed=7",
		"base":  "", // among runs of one seed and one parent: nothing sets it apart
	}
	for name, w := range want {
		r := runByID(t, list, "runs/"+name)
		if got := strings.Join(r.Differs, " "); got != w {
			t.Errorf("%s: differs %q, want %q", name, got, w)
		}
		if wantParent := name != "base"; (r.Extends == filepath.Join(dir, "base.toml")) != wantParent {
			t.Errorf("%s: extends %q", name, r.Extends)
		}
	}
	page := decode[runPage](t, get(t, s, "/api/run?id=runs/child"))
	if strings.Join(page.ParentChanges, " ") != want["child"] || page.Extends == "" {
		t.Errorf("the run page of child: extends %q, changes %q", page.Extends, page.ParentChanges)
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
	case <-time.After(testwait.Hang):
		t.Errorf("another run's page waited %v for the runs table being made", testwait.Hang)
	}
	c.mu.Unlock()
	if code := <-done; code != 200 {
		t.Errorf("the runs table: %d", code)
	}
}
