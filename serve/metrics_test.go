package serve

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
