package serve

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
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
