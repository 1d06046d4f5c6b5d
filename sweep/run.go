package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gptg/gptg/ablate"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/inputfile"
)

// IndexFromEnv gives the entry a cluster task is for: SLURM_ARRAY_TASK_ID
// (a Slurm job array), then JOB_COMPLETION_INDEX (a Kubernetes Indexed
// Job); ok is false when neither is set.
func IndexFromEnv() (index int, from string, ok bool, err error) {
	for _, name := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"} {
		v, set := os.LookupEnv(name)
		if !set || v == "" {
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			return 0, name, false, errorf("%s=%q is not an entry index", name, v)
		}
		return i, name, true, nil
	}
	return 0, "", false, nil
}

// RunOptions configure Run.
type RunOptions struct {
	Index       int  // the entry to run; -1 = all
	Jobs        int  // runs at once when running all
	RetryFailed bool // run entries whose last attempt failed again
	Exe         string
	// Launch starts each training over MPI (ablate.Options.Launch): mpirun
	// -np N for a sweep run --ranks N.
	Launch  []string
	Log     io.Writer
	Backend graph.Backend // for the samples of the table
	// ProgressEvery is the time between progress lines (0: 30 s).
	ProgressEvery time.Duration
}

// Run brings entries of the sweep in dir to finished runs: the one at
// opts.Index, or all. A finished entry is skipped, an interrupted one
// resumed; one whose last attempt failed is skipped unless RetryFailed.
// Each attempt's failure is kept in failed/I.txt until one succeeds.
func Run(ctx context.Context, dir string, opts RunOptions) ([]*ablate.Result, error) {
	entries, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if opts.Index >= len(entries) {
		return nil, errorf("entry %d: the sweep in %s has entries 0 to %d", opts.Index, dir, len(entries)-1)
	}
	if opts.Index >= 0 {
		entries = entries[opts.Index : opts.Index+1]
	}
	events, err := atomicfile.OpenAppend(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, fmt.Errorf("sweep folder: %w", err)
	}
	defer events.Close()
	if err := atomicfile.OwnFolder(filepath.Join(dir, FailedDir)); err != nil {
		return nil, fmt.Errorf("sweep folder: %w", err)
	}
	host, _ := os.Hostname()
	var mu sync.Mutex
	byDir := map[string]Entry{}
	var specs []ablate.Spec
	var skipped []*ablate.Result
	for _, e := range entries {
		s := e.Spec(dir)
		if msg, failed := lastFailure(dir, e.Index); failed && !opts.RetryFailed {
			fmt.Fprintf(opts.Log, "entry %d (%s): its last attempt failed (%s); --retry-failed runs it again\n", e.Index, e.Variant, msg)
			skipped = append(skipped, &ablate.Result{Spec: s, Status: ablate.Failed, Err: errors.New(msg)})
			continue
		}
		byDir[s.Dir] = e
		specs = append(specs, s)
	}
	logEvent := func(s ablate.Spec, event string) {
		mu.Lock()
		defer mu.Unlock()
		// One write per line: O_APPEND keeps lines of tasks on other nodes whole.
		fmt.Fprintf(events, "%s entry %d host %s pid %d: %s\n", time.Now().UTC().Format(time.RFC3339), byDir[s.Dir].Index, host, os.Getpid(), oneLine(event))
	}
	results, err := ablate.Execute(ctx, specs, ablate.Options{
		Jobs: opts.Jobs, Exe: opts.Exe, Launch: opts.Launch, Log: opts.Log,
		ProgressEvery: opts.ProgressEvery, Event: logEvent, Backend: opts.Backend,
	})
	for _, r := range results {
		e := byDir[r.Dir]
		marker := failedPath(dir, e.Index)
		switch {
		case r.Status == ablate.Finished:
			if rmErr := os.Remove(marker); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
				return results, fmt.Errorf("entry %d: %w", e.Index, rmErr)
			}
		case r.Status == ablate.Failed && !ablate.Busy(r.Err):
			// Another task training this run right now is not a failure of
			// the run: no marker, or it would be skipped when requeued.
			atomicfile.WriteOwnFile(marker, []byte(oneLine(r.Err.Error())+"\n"))
		}
	}
	return append(skipped, results...), err
}

func failedPath(dir string, index int) string {
	return filepath.Join(dir, FailedDir, strconv.Itoa(index)+".txt")
}

// lastFailure reads entry index's failure marker.
func lastFailure(dir string, index int) (string, bool) {
	b, err := inputfile.ReadFile(failedPath(dir, index), 1<<20) // a FIFO must not block
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// Collect builds the table and plot of the sweep in dir from whatever has
// finished, without training: summary.md, summary.csv, runs.csv and
// loss.png in dir. Unfinished and failed runs are listed, not fatal.
func Collect(ctx context.Context, dir string, baseline string, exe string, log io.Writer, be graph.Backend) ([]*ablate.Result, error) {
	entries, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if baseline == "" {
		baseline = Baseline(dir)
	}
	specs := make([]ablate.Spec, len(entries))
	for i, e := range entries {
		specs[i] = e.Spec(dir)
	}
	// "differs" is against the first run, so the columns show what the
	// grid varies, not what every run shares.
	opts := ablate.Options{Out: dir, Baseline: baseline, Base: specs[0].Config, BaseSets: specs[0].Sets,
		Exe: exe, Log: log, ProgressEvery: time.Hour, Backend: be}
	results, err := ablate.Measure(ctx, specs, opts)
	if results == nil {
		return nil, err
	}
	for i, r := range results {
		if msg, failed := lastFailure(dir, entries[i].Index); failed && r.Status != ablate.Finished {
			r.Status, r.Err = ablate.Failed, errors.New(msg)
		}
	}
	if werr := ablate.WriteSummary(dir, results, baseline); werr != nil {
		return results, werr
	}
	return results, err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
