package serve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gptg/gptg/internal/testwait"
	"github.com/gptg/gptg/train"
)

// TestMetricsStepsRise: the charts draw a run's curves against rising
// steps. Rows of a hand-edited or foreign metrics.jsonl whose step is
// negative, repeats or goes back are left out of the curve (the rows that
// rise are drawn, in file order) and counted with the lines that are not
// rows, which the runs table shows.
func TestMetricsStepsRise(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "odd"))
	rows := []string{`{"step":1,"loss":3}`, `{"step":2,"loss":2.9}`, `{"step":2,"loss":9}`, `{"step":0,"loss":9}`,
		`{"step":-4,"loss":9}`, `{"step":3,"loss":2.8}`, `{"step":5,"loss":2.7}`, `{"step":4,"loss":9}`}
	if err := os.WriteFile(filepath.Join(runs, "odd", train.MetricsFile), []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, Options{Dirs: []string{runs}})
	c := decode[columns](t, get(t, s, "/api/metrics?id=runs/odd"))
	if !slices.Equal(c.Step, []int{1, 2, 3, 5}) || !slices.Equal(c.Loss, []float64{3, 2.9, 2.8, 2.7}) {
		t.Errorf("drawn steps %v losses %v, want [1 2 3 5] [3 2.9 2.8 2.7]", c.Step, c.Loss)
	}
	r := runByID(t, decode[runsList](t, get(t, s, "/api/runs")), "runs/odd")
	if r.Rows != 4 || r.BadRows != 4 {
		t.Errorf("runs table: %d rows, %d not drawn; want 4 and 4", r.Rows, r.BadRows)
	}
}

// TestLiveSaysWhenReadingFails: a live stream whose metrics.jsonl becomes
// unreadable (here a link out of the run folder, which serve never
// follows) sends an "error" event naming the file and ends, so that the
// page says so instead of waiting for rows that will not come.
func TestLiveSaysWhenReadingFails(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "a"))
	s := newServer(t, Options{Dirs: []string{runs}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/live?id=runs/a", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	var events []string
	var ev string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			break // the stream ended
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = line[7:]
		case strings.HasPrefix(line, "data: "):
			events = append(events, ev+" "+line[6:])
			if len(events) == 1 { // the rows there were: now the file goes bad
				mf := filepath.Join(runs, "a", train.MetricsFile)
				outside := filepath.Join(t.TempDir(), "elsewhere.jsonl")
				os.WriteFile(outside, []byte(`{"step":99}`+"\n"), 0o644)
				if err := os.Remove(mf); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, mf); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the stream went on after its file went bad: %q", events)
	}
	last := events[len(events)-1]
	if !strings.HasPrefix(events[0], "rows ") || !strings.HasPrefix(last, "error ") || !strings.Contains(last, "metrics.jsonl") {
		t.Errorf("events %q: want the rows, then an error naming metrics.jsonl, then the end", events)
	}
}

// TestMetricsOfManyTinyLines: a metrics.jsonl of short lines ("{}" is a
// row) is bounded by its lines, not only its bytes: 256 MiB of "{}" lines
// (89 million rows) would take an /api/metrics request ten minutes and
// 11 GB, and /api/runs, holding the server's lock while it read every
// run, four minutes during which no request is answered. The bound is
// lowered to 2^19 lines, a quarter of the server's, still over a chunk
// (chunkBytes) of "{}" lines, so that the count goes on across chunks.
func TestMetricsOfManyTinyLines(t *testing.T) {
	fixtures(t)
	defer func(old int) { maxMetricsLines = old }(maxMetricsLines)
	maxMetricsLines = 1 << 19
	if 3*maxMetricsLines <= chunkBytes {
		t.Fatalf("%d lines of \"{}\" fit in one chunk of %d bytes", maxMetricsLines, chunkBytes)
	}
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
	if w.Code != 422 || !strings.Contains(w.Body.String(), fmt.Sprintf("more than %d lines", maxMetricsLines)) {
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
	if r := runByID(t, list, "runs/tiny"); r.State != stateDamaged || !strings.Contains(r.Problem, fmt.Sprintf("more than %d lines", maxMetricsLines)) {
		t.Errorf("the run of the long file in the table: %s %q, want damaged naming the bound", r.State, r.Problem)
	}
	if r := runByID(t, list, "runs/edge"); r.State == stateDamaged || r.Rows != maxMetricsLines {
		t.Errorf("the run at the bound: %s %q, %d rows", r.State, r.Problem, r.Rows)
	}
}

// TestMetricsThatCannotBeServed: a metrics.jsonl that is a FIFO, a link to
// a FIFO or a link out of the folder is a 403 naming it, and its run is
// damaged in the table, not a 500 and a run called finished.
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
