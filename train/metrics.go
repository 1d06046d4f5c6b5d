package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gptg/gptg/internal/atomicfile"
)

// metricsRow is one line of metrics.jsonl. Loss is the mean training loss
// over the steps since the previous row; TestLoss is set on evaluation rows.
type metricsRow struct {
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

// metricsLog appends rows to metrics.jsonl and knows how many it holds, so
// a checkpoint can record where a resumed run must continue.
type metricsLog struct {
	path string
	rows int
	f    *os.File
}

// reset keeps the file's first keep rows and drops the rest: rows written
// after the checkpoint a run resumes from would otherwise appear twice.
func (l *metricsLog) reset(keep int) error {
	var kept []byte
	if keep > 0 {
		old, err := os.ReadFile(l.path)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(old))
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		n := 0
		for n < keep && sc.Scan() {
			kept = append(append(kept, sc.Bytes()...), '\n')
			n++
		}
		if n < keep {
			return fmt.Errorf("metrics: %s has %d rows, the checkpoint expects %d", l.path, n, keep)
		}
	}
	if err := atomicfile.WriteFile(l.path, kept); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	l.f, l.rows = f, keep
	return nil
}

func (l *metricsLog) append(r metricsRow) error {
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
