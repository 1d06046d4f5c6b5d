package cputime

import (
	"testing"
	"time"
)

// TestProcessCountsWork: spinning on this goroutine adds its time to the
// process's, and sleeping adds next to nothing.
func TestProcessCountsWork(t *testing.T) {
	start := Process()
	for spun := time.Now(); time.Since(spun) < 50*time.Millisecond; {
	}
	// Some of it: a busy machine may take the core away for most of the
	// 50 ms, never for all of it.
	if used := Process() - start; used < time.Millisecond {
		t.Errorf("spinning used %v of CPU, want some", used)
	}
	before := Process()
	time.Sleep(50 * time.Millisecond)
	if used := Process() - before; used > 40*time.Millisecond {
		t.Errorf("sleeping 50 ms used %v of CPU", used)
	}
}
