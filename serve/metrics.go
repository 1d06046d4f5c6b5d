package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"syscall"
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
		var r row
		if json.Unmarshal(line, &r) != nil {
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
	for _, r := range rows {
		c.Step = append(c.Step, r.Step)
		c.Loss = append(c.Loss, r.Loss)
		c.TestLoss = append(c.TestLoss, r.TestLoss)
		c.LR = append(c.LR, r.LR)
		c.Tokens = append(c.Tokens, r.TokensPerSec)
	}
	return c
}
