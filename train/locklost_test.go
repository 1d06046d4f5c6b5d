package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/internal/runlock"
)

// TestLockLostStops: flock locks a file, not a name. When the run folder's
// lock file is deleted (or replaced) while a run holds it, a second gptg
// can lock a new one and train into the same folder; the first run must
// stop at its next write instead of writing the folder's metrics and
// checkpoints beside it.
func TestLockLostStops(t *testing.T) {
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			lock := filepath.Join(dir, runlock.Name)
			lostAt := 0
			opts := Options{CheckpointEvery: 25, AfterStep: func(s int) {
				if s == 12 {
					lostAt = s
					if err := os.Remove(lock); err != nil {
						t.Error(err)
					}
					if how == "replaced" {
						writeFile(t, lock, "4242\n")
					}
				}
			}}
			_, err := Run(context.Background(), tinyConfig(t, dir), opts)
			if !errors.Is(err, runlock.ErrLost) {
				t.Fatalf("got %v, want the lock lost", err)
			}
			wantErr(t, err, "another gptg may now be writing into", "gptg train --resume "+dir)
			if lostAt == 0 {
				t.Fatal("the lock file was never removed")
			}
			rows, rerr := readMetricsRows(dir)
			if rerr != nil {
				t.Fatal(rerr)
			}
			// log_every 10: the row of step 10 is written, that of step 20 is not.
			if rows != 1 {
				t.Errorf("metrics.jsonl holds %d rows, want 1: the run wrote after its lock was lost", rows)
			}
			if step, _, err := Progress(dir); err == nil && step > 0 {
				t.Errorf("a checkpoint of step %d was written after the lock was lost", step)
			}
		})
	}
}
