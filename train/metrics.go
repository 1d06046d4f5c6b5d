package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/memlimit"
	"github.com/gptg/gptg/internal/quote"
)

// MetricsRow is one line of metrics.jsonl. Loss is the mean training loss
// over the steps since the previous row; TestLoss is set on evaluation rows.
type MetricsRow struct {
	Step         int      `json:"step"`
	Epoch        float64  `json:"epoch"`
	LR           float64  `json:"lr"`
	Loss         float64  `json:"loss"`
	GradNorm     float64  `json:"grad_norm"`
	TokensPerSec float64  `json:"tokens_per_s"`
	ElapsedSecs  float64  `json:"elapsed_s"`
	HeapMB       float64  `json:"heap_mb"` // live heap at the last GC, to show it stays flat
	RSSMB        float64  `json:"rss_mb"`  // resident memory of the process
	TestLoss     *float64 `json:"test_loss,omitempty"`
}

// ReadMetrics reads the metrics.jsonl of the run in dir: the one reader
// of the rows MetricsRow declares. A partial last row (a run killed while
// writing it) is left out, as a resume drops it.
//
// It reads a row at a time and holds at most maxMetricsRows: the file's
// 256 MiB bound alone let 89M rows of "{}" become 8 GB of rows (plot and
// ablate read every row), and reading the file whole doubled the peak.
func ReadMetrics(dir string) ([]MetricsRow, error) {
	path := filepath.Join(dir, MetricsFile)
	f, _, err := inputfile.Open(path, maxMetricsBytes)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer f.Close()
	// Counting the rows first sizes the slice once: growing it by
	// appending held up to twice the rows while copying (1.65M rows: a
	// 650 MB peak for 130 MB of rows).
	lines, err := countLines(f)
	if err != nil {
		return nil, fmt.Errorf("metrics: reading %s: %w", quote.Name(path), err)
	}
	if lines > maxMetricsRows {
		return nil, tooManyRows(path)
	}
	// Measured: 1.65M rows peak at 386 MB of RSS, 230 bytes a row.
	if need := float64(lines)*240 + 64<<20; need > 0 {
		if h, ok := memlimit.Find(); ok && need > h.Bytes {
			return nil, fmt.Errorf("%s: its %d rows need about %.0f MiB to read, more than this process may still use (%.0f MiB, under %s): give the process more memory",
				quote.Name(path), lines, need/(1<<20), h.Bytes/(1<<20), h.Limit)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	rows := make([]MetricsRow, 0, lines)
	if err := eachRow(f, path, func(r MetricsRow) { rows = append(rows, r) }); err != nil {
		return nil, err
	}
	return rows, nil
}

// EachMetricsRow calls fn with each row of the metrics.jsonl of the run in
// dir, as ReadMetrics reads them, without holding them: a reader that
// keeps a few values of each row needs no room for all (ablate's tables
// of runs of 1.65M rows needed 442 MiB each, and under a tight limit
// called finished runs failed).
func EachMetricsRow(dir string, fn func(MetricsRow)) error {
	path := filepath.Join(dir, MetricsFile)
	f, _, err := inputfile.Open(path, maxMetricsBytes)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	defer f.Close()
	return eachRow(f, path, fn)
}

// eachRow reads f, the metrics file at path, a row at a time.
func eachRow(f io.Reader, path string, fn func(MetricsRow)) error {
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			var long []byte
			for err == bufio.ErrBufferFull && len(long) <= maxRowBytes {
				long = append(long, line...)
				line, err = br.ReadSlice('\n')
			}
			line = append(long, line...)
		}
		if err == io.EOF {
			return nil // a partial last row, or none
		}
		if err != nil && err != bufio.ErrBufferFull {
			return fmt.Errorf("metrics: reading %s: %w", quote.Name(path), err)
		}
		if len(line) > maxRowBytes {
			return fmt.Errorf("%s: row %d is longer than %d bytes, so not a metrics row (the file is damaged)", quote.Name(path), n, maxRowBytes)
		}
		if n > maxMetricsRows { // more than a run writes (or grew since it was counted)
			return tooManyRows(path)
		}
		var r MetricsRow
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("%s: row %d: %v", quote.Name(path), n, err)
		}
		fn(r)
	}
}

func tooManyRows(path string) error {
	return fmt.Errorf("%s has more than %d rows, more than a run writes (its rows are about 250 bytes, and its log is at most 256 MiB): the file is damaged or not a run's metrics",
		quote.Name(path), maxMetricsRows)
}

// countLines counts the newlines of r.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte("\n"))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// metricsLog appends rows to metrics.jsonl and knows how many it holds, so
// a checkpoint can record where a resumed run must continue.
type metricsLog struct {
	path string
	rows int
	f    *os.File
}

// maxRowBytes bounds one metrics row; real rows are about 250 bytes.
const maxRowBytes = 1 << 20

// maxMetricsBytes bounds the metrics.jsonl a resume reads: a million rows.
const maxMetricsBytes = 256 << 20

// maxMetricsRows bounds the rows ReadMetrics holds (about 100 bytes each):
// twice the rows of real size that fit in maxMetricsBytes, as serve's
// reader of the same file allows.
const maxMetricsRows = 1 << 21

// reset keeps the file's first keep rows and drops the rest: rows written
// after the checkpoint a run resumes from would otherwise appear twice.
// A trailing partial row (a crash in the middle of writing it) is dropped;
// when rows the checkpoint counted are gone, the run goes on without them
// and says so on log.
//
// Each kept row must be a metrics row of a step after the one before and
// at most step, the checkpoint's: a damaged row or a jump in the steps
// would otherwise be carried along silently into the run's curves.
func (l *metricsLog) reset(keep, step int, log io.Writer) error {
	var kept []byte
	if keep > 0 {
		old, err := inputfile.ReadFile(l.path, maxMetricsBytes)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s is missing, and the checkpoint counts %d rows in it: put it back, or create an empty one (touch %s) to resume without the earlier rows",
				l.path, keep, l.path)
		}
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		n, prev := 0, 0
		for len(old) > 0 && n < keep {
			line, rest, complete := bytes.Cut(old, []byte("\n"))
			if len(line) > maxRowBytes {
				return fmt.Errorf("%s: row %d is longer than %d bytes, so not a metrics row (the file is damaged): delete that line, or start over with --force",
					l.path, n+1, maxRowBytes)
			}
			if !complete {
				fmt.Fprintf(log, "%s: dropped a partial last row (row %d, cut off mid-write)\n", l.path, n+1)
				break
			}
			var row MetricsRow
			if err := json.Unmarshal(line, &row); err != nil {
				return fmt.Errorf("%s: row %d is not a metrics row (%v): the file is damaged; restore it, or start over with --force", quote.Name(l.path), n+1, err)
			}
			if row.Step <= prev || row.Step > step {
				return fmt.Errorf("%s: row %d is of step %d, after a row of step %d, in a run checkpointed at step %d: the file is damaged; restore it, or start over with --force",
					quote.Name(l.path), n+1, row.Step, prev, step)
			}
			prev = row.Step
			kept = append(append(kept, line...), '\n')
			old = rest
			n++
		}
		if n < keep {
			fmt.Fprintf(log, "%s holds %d rows, the checkpoint counts %d: the resumed run goes on without rows %d to %d\n",
				l.path, n, keep, n+1, keep)
			keep = n
		}
	}
	// The run names this file itself: whatever is at its path (a link
	// planted in the folder) is replaced, never written through, and the
	// append that follows follows no link either.
	if err := atomicfile.WriteOwnFile(l.path, kept); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	f, err := atomicfile.OpenAppend(l.path)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	l.f, l.rows = f, keep
	return nil
}

func (l *metricsLog) append(r MetricsRow) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	l.rows++
	return nil
}

func (l *metricsLog) close() {
	if l.f != nil {
		l.f.Close()
	}
}
