package serve

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"

	"github.com/gptg/gptg/ablate"
	"github.com/gptg/gptg/sweep"
)

// compareAnswer is the answer of /api/compare: the table gptg ablate or
// gptg sweep collect wrote (summary.csv), and each variant's curves as
// mean ± sd over its seeds, from the runs' own metrics.
type compareAnswer struct {
	ID       string     `json:"id"`
	Kind     string     `json:"kind"`
	Header   []string   `json:"header"`
	Rows     [][]string `json:"rows"`
	Note     string     `json:"note,omitempty"`
	Variants []variant  `json:"variants"`
}

type variant struct {
	Name  string   `json:"name"`
	Runs  []string `json:"runs"`    // ids of its run folders that exist
	Train band     `json:"train"`   // training loss
	Test  band     `json:"test"`    // test loss
	Plan  int      `json:"planned"` // runs the comparison planned
}

// band is a mean curve with its sample standard deviation over seeds
// (0 where one seed has the step).
type band struct {
	Step []float64 `json:"step"`
	Mean []float64 `json:"mean"`
	SD   []float64 `json:"sd"`
	N    []int     `json:"n"`
}

// maxCompareRuns bounds the runs one comparison reads the metrics of.
const maxCompareRuns = 400

// maxCompareRows bounds the rows one comparison draws, over all its runs:
// their per-step values are held at once (400 runs of 250,000 rows would
// be 100 million). Two million is 200 runs of 10,000 logged steps.
var maxCompareRows = 1 << 21

func (s *Server) apiCompare(w http.ResponseWriter, r *http.Request) {
	f, _, err := s.lookup(r, kindAblate, kindSweep)
	if err != nil {
		fail(w, err)
		return
	}
	ans := compareAnswer{ID: f.id, Kind: f.kind, Header: []string{}, Rows: [][]string{}, Variants: []variant{}}
	readSummary(f, &ans)
	plan := comparePlan(f, &ans)
	runsOf := s.groupRuns(f, plan, &ans)
	// A few comparisons at a time, as whole metrics reads: each holds its
	// runs' rows and their per-step values.
	select {
	case s.reads <- struct{}{}:
		defer func() { <-s.reads }()
	case <-r.Context().Done():
		return
	}
	s.drawVariants(&ans, runsOf)
	writeJSON(w, ans)
}

// readSummary puts into ans the table ablate.WriteSummary wrote, or a note
// saying why there is none: the curves are drawn either way.
func readSummary(f *folder, ans *compareAnswer) {
	b, _, err := f.root.readFile(path.Join(f.rel, summaryFile), 16<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ans.Note = "no summary.csv yet: gptg sweep collect " + f.id + " writes the table; the curves below are the runs' own"
	case err != nil:
		ans.Note = "summary.csv: " + oneLine(err.Error())
	default:
		recs, err := csv.NewReader(bytesReader(b)).ReadAll()
		if err != nil || len(recs) == 0 {
			ans.Note = "summary.csv is not a table gptg wrote"
		} else {
			ans.Header, ans.Rows = recs[0], recs[1:]
		}
	}

}

// planned is one run of a comparison: its variant, and its folder relative
// to the comparison's.
type planned struct{ variant, rel string }

// comparePlan lists the runs of each variant, each once and at most
// maxCompareRuns of them; a note in ans says what was left out.
func comparePlan(f *folder, ans *compareAnswer) []planned {
	// The runs of each variant: the sweep's manifest, or the layout
	// ablate.Plan gives (name/seed-S) read back from runs.csv.
	var plan []planned
	if f.kind == kindSweep {
		real, err := f.root.realPath(path.Join(f.rel, sweep.ManifestFile))
		if err == nil {
			var entries []sweep.Entry
			if entries, err = sweep.Load(path.Dir(real)); err == nil {
				for _, e := range entries {
					plan = append(plan, planned{e.Variant, path.Join(f.rel, e.Dir)})
				}
			}
		}
		if err != nil {
			ans.Note = oneLine(err.Error())
		}
	} else if b, _, err := f.root.readFile(path.Join(f.rel, runsCSVFile), 16<<20); err == nil {
		recs, _ := csv.NewReader(bytesReader(b)).ReadAll()
		for i, rec := range recs {
			if i == 0 || len(rec) < 2 {
				continue
			}
			rel := path.Join(f.rel, rec[0])
			if seed, err := strconv.ParseInt(rec[1], 10, 64); err == nil && seed != 0 {
				rel = path.Join(rel, "seed-"+rec[1])
			}
			if localPath(rel) {
				plan = append(plan, planned{rec[0], rel})
			}
		}
	}
	// A run is drawn once, in the first variant that names it: a runs.csv
	// or manifest naming one run many times would otherwise count its
	// curve as that many seeds (a mean over "400 seeds" of one run, with
	// sd 0).
	seen := map[string]bool{}
	unique := plan[:0]
	for _, p := range plan {
		if !seen[p.rel] {
			seen[p.rel] = true
			unique = append(unique, p)
		}
	}
	plan = unique
	if len(plan) > maxCompareRuns {
		plan = plan[:maxCompareRuns]
		ans.Note = "only the first " + strconv.Itoa(maxCompareRuns) + " runs are drawn"
	}
	return plan
}

// groupRuns puts the plan's variants into ans, in the plan's order, with
// the ids of their runs that exist, and returns those runs' folders by
// variant.
func (s *Server) groupRuns(f *folder, plan []planned, ans *compareAnswer) map[string][]*folder {
	s.mu.Lock()
	s.rescan(false)
	byVariant := map[string]int{} // index in ans.Variants
	runsOf := map[string][]*folder{}
	for _, p := range plan {
		k, ok := byVariant[p.variant]
		if !ok {
			k = len(ans.Variants)
			ans.Variants = append(ans.Variants, variant{Name: p.variant, Runs: []string{}})
			byVariant[p.variant] = k
		}
		v := &ans.Variants[k]
		v.Plan++
		id := f.root.label
		if p.rel != "." {
			id += "/" + p.rel
		}
		if rf := s.folders[id]; rf != nil && rf.kind == kindRun {
			v.Runs = append(v.Runs, id)
			runsOf[p.variant] = append(runsOf[p.variant], rf)
		}
	}
	s.mu.Unlock()
	return runsOf
}

// drawVariants reads the metrics of each variant's runs, up to
// maxCompareRows rows over all of them, into its mean and spread bands.
func (s *Server) drawVariants(ans *compareAnswer, runsOf map[string][]*folder) {
	rows := 0
	for i := range ans.Variants {
		v := &ans.Variants[i]
		var all []columns
		for _, rf := range runsOf[v.Name] {
			if rows >= maxCompareRows {
				ans.Note = fmt.Sprintf("only the runs of the first %d rows are drawn", maxCompareRows)
				break
			}
			if cols, _, err := s.metrics.columns(rf); err == nil {
				all = append(all, cols)
				rows += cols.len()
			}
		}
		v.Train = meanBand(all, func(c columns, i int) (float64, bool) { return c.Loss[i], true })
		v.Test = meanBand(all, func(c columns, i int) (float64, bool) {
			if c.TestLoss[i] == nil {
				return 0, false
			}
			return *c.TestLoss[i], true
		})
	}
}

// maxBandSteps bounds the steps a band is drawn at: a page draws no more
// (gptg plot thins its curves as much), and a band at every step of a
// 1.65M-row run held 591 MB for one request (a map of per-step slices,
// then its JSON): four at once were OOM-killed in a 400 MiB cgroup. A
// variable so that the tests can lower it.
var maxBandSteps = 4000

// meanBand is, at each step some run logged, the mean and sample standard
// deviation (ablate.Summarize) of pick over the runs that have it — at
// every step when there are at most maxBandSteps of them, else at evenly
// spaced ones among them, the last included.
func meanBand(runs []columns, pick func(c columns, i int) (float64, bool)) band {
	var steps []int
	for _, c := range runs {
		for i, step := range c.Step {
			if _, ok := pick(c, i); ok {
				steps = append(steps, step)
			}
		}
	}
	steps = ablate.DrawnSteps(steps, maxBandSteps)
	values := make([][]float64, len(steps))
	for _, c := range runs {
		for i, step := range c.Step {
			k, found := slices.BinarySearch(steps, step)
			if !found {
				continue
			}
			if v, ok := pick(c, i); ok {
				values[k] = append(values[k], v)
			}
		}
	}
	b := band{Step: []float64{}, Mean: []float64{}, SD: []float64{}, N: []int{}}
	for k, st := range steps {
		sm := ablate.Summarize(values[k])
		b.Step = append(b.Step, float64(st))
		b.Mean, b.SD, b.N = append(b.Mean, sm.Mean), append(b.SD, sm.SD), append(b.N, sm.N)
	}
	return b
}
