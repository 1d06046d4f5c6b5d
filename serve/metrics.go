package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/gptg/gptg/train"
)

// row is one line of metrics.jsonl as train writes it; only the fields
// the pages draw are read.
type row struct {
	Step         int      `json:"step"`
	LR           float64  `json:"lr"`
	Loss         float64  `json:"loss"`
	TokensPerSec float64  `json:"tokens_per_s"`
	ElapsedSecs  float64  `json:"elapsed_s"`
	TestLoss     *float64 `json:"test_loss,omitempty"`
}

// maxMetricsBytes bounds what is read of one metrics.jsonl (train's own
// bound for a resume: a million rows).
const maxMetricsBytes = 256 << 20

// maxRowBytes bounds one row; real rows are about 250 bytes.
const maxRowBytes = 1 << 20

// chunkBytes is how much of a metrics file one read takes: an SSE event
// carries the rows of at most one chunk.
const chunkBytes = 1 << 20

// maxMetricsLines bounds the lines read of one metrics.jsonl. The byte
// bound alone is not enough: 256 MiB of three-byte lines ("{}") are 89
// million rows, 3.5 GB of columns and minutes of parsing. train's rows
// are about 250 bytes, so a file within train's own bound holds about a
// million; two million lines hold any of them (about 100 MB of columns,
// within metricsMemory). A variable so that the tests can lower it.
var maxMetricsLines = 1 << 21

// tooManyLines is the error of a metrics.jsonl past maxMetricsLines: a
// file train did not write, not drawn (422).
func tooManyLines() error {
	return &requestError{http.StatusUnprocessableEntity, fmt.Sprintf("%s has more than %d lines, more than train writes (its rows are about 250 bytes, and a run's log is at most 256 MiB): not drawn", train.MetricsFile, maxMetricsLines)}
}

// metricsTail reads a metrics.jsonl that train appends to, from where it
// stopped: only complete lines count, so a row being written is read once
// it is whole. A file that shrank or was replaced (a resume rewrites it)
// starts over.
type metricsTail struct {
	ino    uint64
	offset int64
	rows   int // complete rows read so far
	bad    int // lines that were not metrics rows
	last   *row
	test   *row // the last row with a test loss
}

// read returns the rows appended since the last read (at most chunkBytes
// of them; more is left for the next call) and whether the file was
// replaced, in which case the rows are the new file's first ones.
func (t *metricsTail) read(f *os.File, info os.FileInfo) (rows []row, reset bool, more bool, err error) {
	var ino uint64
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	if ino != t.ino || info.Size() < t.offset {
		*t = metricsTail{ino: ino}
		reset = true
	}
	size := min(info.Size(), maxMetricsBytes)
	if size <= t.offset {
		return nil, reset, false, nil
	}
	if t.rows+t.bad >= maxMetricsLines {
		return nil, reset, false, tooManyLines()
	}
	n := min(size-t.offset, chunkBytes)
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, t.offset)
	if err != nil && err != io.EOF {
		return nil, reset, false, err
	}
	buf = buf[:got]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		if int64(got) >= maxRowBytes { // no newline in a whole row's worth: not a metrics file
			t.bad++
			t.offset += int64(got)
			return nil, reset, t.offset < size, nil
		}
		return nil, reset, false, nil // a row being written
	}
	for line := range bytes.Lines(buf[:end+1]) {
		if t.rows+t.bad >= maxMetricsLines {
			return nil, reset, false, tooManyLines()
		}
		var r row
		// The curves are drawn against rising steps, as train writes them
		// (one row a step, a resume rewrites the file): a row whose step
		// is negative, repeats or goes back is not drawn but counted with
		// the lines that are not rows, so the page says so. The curve is
		// that of the rows that rise, in file order.
		if json.Unmarshal(line, &r) != nil || r.Step < 0 || t.last != nil && r.Step <= t.last.Step {
			t.bad++
			continue
		}
		rows = append(rows, r)
		t.rows++
		t.last = &r
		if r.TestLoss != nil {
			t.test = &r
		}
	}
	t.offset += int64(end + 1)
	return rows, reset, t.offset < size, nil
}

// columns is rows as the pages draw them: one array per field, null where
// a row has no test loss.
type columns struct {
	Step     []int      `json:"step"`
	Loss     []float64  `json:"loss"`
	TestLoss []*float64 `json:"test_loss"`
	LR       []float64  `json:"lr"`
	Tokens   []float64  `json:"tokens_per_s"`
}

func toColumns(rows []row) columns {
	c := columns{Step: []int{}, Loss: []float64{}, TestLoss: []*float64{}, LR: []float64{}, Tokens: []float64{}}
	c.append(rows)
	return c
}

// metricsMemory bounds the metrics kept parsed for /api/metrics and the
// first rows of a live stream, over all runs (a variable so that the tests
// can lower it). 128 MiB holds about two million rows: eight runs of the
// 10.8M model's 250k steps logged at every step.
var metricsMemory int64 = 128 << 20

// metricsCache keeps each run's metrics.jsonl parsed, as columns, so that
// a page opened on a long run does not parse its whole file again: a
// request reads only the bytes train appended since the last one (the
// file's identity, inode and size, tells a rewrite, which starts over).
// The columns of the least recently used runs are dropped to stay under
// metricsMemory; a run larger than that alone is read for its request and
// not kept.
type metricsCache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	clock   int64
	entries map[string]*metricsEntry // by run id
}

type metricsEntry struct {
	mu    sync.Mutex // held while the file is read
	tail  metricsTail
	cols  columns
	tests int64 // rows with a test loss (each its own 8 bytes)

	// Under metricsCache.mu:
	bytes   int64 // what cols take, as last accounted
	busy    int
	lastUse int64
}

func newMetricsCache(budget int64) *metricsCache {
	return &metricsCache{budget: budget, entries: map[string]*metricsEntry{}}
}

// columns brings the run f's parsed metrics up to date and returns them
// with the tail's state after them (where a live stream goes on from).
// The columns are only ever appended to (a rewrite makes new ones), so
// the caller may read them without a lock while they grow.
func (m *metricsCache) columns(f *folder) (columns, metricsTail, error) {
	m.mu.Lock()
	e := m.entries[f.id]
	if e == nil {
		e = &metricsEntry{cols: toColumns(nil)}
		m.entries[f.id] = e
	}
	e.busy++
	m.mu.Unlock()

	e.mu.Lock()
	err := e.update(f)
	cols, tail := e.cols, e.tail
	bytes := 8 * (int64(cap(cols.Step)+cap(cols.Loss)+cap(cols.TestLoss)+cap(cols.LR)+cap(cols.Tokens)) + e.tests)
	e.mu.Unlock()

	m.mu.Lock()
	defer m.mu.Unlock()
	e.busy--
	m.clock++
	e.lastUse = m.clock
	if m.entries[f.id] == e {
		m.used += bytes - e.bytes
		e.bytes = bytes
	}
	// The least recently used go first; this run's, the most recent, goes
	// last: only when it does not fit alone.
	for m.used > m.budget {
		var lru *metricsEntry
		var lruID string
		for id, o := range m.entries {
			if o.busy == 0 && (lru == nil || o.lastUse < lru.lastUse) {
				lru, lruID = o, id
			}
		}
		if lru == nil {
			break // all being read: dropped by the next request that finds them done
		}
		m.dropLocked(lruID, lru)
	}
	if err != nil {
		return columns{}, metricsTail{}, err
	}
	return cols, tail, nil
}

func (m *metricsCache) dropLocked(id string, e *metricsEntry) {
	m.used -= e.bytes
	e.bytes = 0
	delete(m.entries, id)
}

// forget drops the columns of a run that went away.
func (m *metricsCache) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entries[id]; e != nil && e.busy == 0 {
		m.dropLocked(id, e)
	}
}

// usage is the bytes held and the runs kept.
func (m *metricsCache) usage() (int64, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used, len(m.entries)
}

// update reads what was appended to the run's metrics.jsonl since the last
// call (none yet: no rows). Callers hold e.mu.
func (e *metricsEntry) update(f *folder) error {
	mf, info, err := f.root.open(path.Join(f.rel, train.MetricsFile))
	if errors.Is(err, fs.ErrNotExist) {
		e.tail, e.cols, e.tests = metricsTail{}, toColumns(nil), 0
		return nil
	}
	if err != nil {
		// A FIFO, a device, a link out of the folder: the run's file
		// cannot be served, which is no fault of the server's (403, as
		// for a model file).
		return unservable(train.MetricsFile, err)
	}
	defer mf.Close()
	for more := true; more; {
		rows, reset, m, err := e.tail.read(mf, info)
		if err != nil {
			// Half read: start over next time rather than keep a gap.
			e.tail, e.cols, e.tests = metricsTail{}, toColumns(nil), 0
			return err
		}
		if reset {
			e.cols, e.tests = toColumns(nil), 0 // new slices: a reader of the old ones keeps them
		}
		e.cols.append(rows)
		for _, r := range rows {
			if r.TestLoss != nil {
				e.tests++
			}
		}
		more = m
	}
	return nil
}

// append adds rows to c.
func (c *columns) append(rows []row) {
	for _, r := range rows {
		c.Step = append(c.Step, r.Step)
		c.Loss = append(c.Loss, r.Loss)
		c.TestLoss = append(c.TestLoss, r.TestLoss)
		c.LR = append(c.LR, r.LR)
		c.Tokens = append(c.Tokens, r.TokensPerSec)
	}
}

// slice is rows [i, j) of c.
func (c columns) slice(i, j int) columns {
	return columns{Step: c.Step[i:j], Loss: c.Loss[i:j], TestLoss: c.TestLoss[i:j], LR: c.LR[i:j], Tokens: c.Tokens[i:j]}
}

// len is the number of rows.
func (c columns) len() int { return len(c.Step) }

// unservable is the error of a run's file that exists but cannot be
// served (not a regular file, or a link that leads out of the folder).
func unservable(name string, err error) error {
	msg := oneLine(unwrapPath(err).Error())
	switch {
	case strings.Contains(msg, "escapes from parent"): // os.Root's refusal
		msg = name + " is a link that leads out of the served folders"
	case !strings.HasPrefix(msg, name):
		msg = name + ": " + msg
	}
	return &requestError{http.StatusForbidden, msg + ": not served"}
}

// columnChunk is how many values of a column are encoded at a time.
const columnChunk = 8192

// writeJSON writes c as json.Marshal would, a chunk of each column at a
// time: a whole run's answer is about 40 bytes a row (69 MB for 1.65
// million rows), and marshalling it whole held that much per request on
// top of the columns (six requests at once: the kernel's OOM kill in a
// 400 MiB cgroup).
func (c columns) writeJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	fields := []struct {
		name  string
		chunk func(i, j int) any
	}{
		{"step", func(i, j int) any { return c.Step[i:j] }},
		{"loss", func(i, j int) any { return c.Loss[i:j] }},
		{"test_loss", func(i, j int) any { return c.TestLoss[i:j] }},
		{"lr", func(i, j int) any { return c.LR[i:j] }},
		{"tokens_per_s", func(i, j int) any { return c.Tokens[i:j] }},
	}
	for k, f := range fields {
		sep := ","
		if k == 0 {
			sep = "{"
		}
		fmt.Fprintf(bw, "%s%q:[", sep, f.name)
		for i := 0; i < c.len(); i += columnChunk {
			b, err := json.Marshal(f.chunk(i, min(i+columnChunk, c.len())))
			if err != nil {
				return err
			}
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.Write(b[1 : len(b)-1]) // without the chunk's brackets
		}
		bw.WriteByte(']')
	}
	bw.WriteByte('}')
	return bw.Flush()
}
