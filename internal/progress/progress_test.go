package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestLeftLeavesOutTheFirstUnit: the first unit of a process pays for
// warming up (it took 13 ms against 1.75 ms for the seed model's steps),
// and an estimate that counted it said 6m57s for a 55 s run. The clock
// starts when the first unit is done.
func TestLeftLeavesOutTheFirstUnit(t *testing.T) {
	l := New(&bytes.Buffer{}, true, 1001, 0)
	clock := time.Unix(1000, 0)
	l.now = func() time.Time { return clock }
	if _, ok := l.Left(); ok {
		t.Error("a time left before any unit was done")
	}
	clock = clock.Add(time.Second) // a slow first unit
	l.Set(1)
	if _, ok := l.Left(); ok {
		t.Error("a time left from the first unit alone")
	}
	clock = clock.Add(time.Second) // then 100 units in 1 s
	l.Set(101)
	left, ok := l.Left()
	if !ok || left != 9*time.Second {
		t.Errorf("time left %v (%v), want 9s: 900 units at 10 ms, the first unit not counted", left, ok)
	}
	l.Set(1001)
	if _, ok := l.Left(); ok {
		t.Error("a time left at the end")
	}
}

// TestLeftAfterResume: a resumed job counts only this process's units, so
// it does not start at "0s left".
func TestLeftAfterResume(t *testing.T) {
	l := New(&bytes.Buffer{}, true, 1000, 500)
	clock := time.Unix(1000, 0)
	l.now = func() time.Time { return clock }
	l.Set(501)
	clock = clock.Add(10 * time.Second) // 100 steps in 10 s here
	l.Set(601)
	left, ok := l.Left()
	if !ok || left != 39900*time.Millisecond {
		t.Errorf("time left %v (%v), want 39.9s: 399 steps at 0.1 s", left, ok)
	}
}

// TestLayoutFits: the line stays under the width at every width, keeps
// its rank-0 field, and drops the others from the highest rank down.
func TestLayoutFits(t *testing.T) {
	fields := []Field{{Text: "step 5/10", Rank: 0}, {Bar: true, Rank: 3}, {Text: "50%", Rank: 1}, {Text: "1.0s left", Rank: 2}, {Text: "loss 2.0000", Rank: 4}}
	if got := Layout(fields, 5, 10, 80); got != "step 5/10 [##############..............] 50% 1.0s left loss 2.0000" {
		t.Errorf("80 columns: %q", got)
	}
	for width := 80; width >= 3; width-- {
		got := Layout(fields, 5, 10, width)
		if n := utf8.RuneCountInString(got); n >= width {
			t.Errorf("width %d: %d columns: %q", width, n, got)
		}
		if !strings.HasPrefix(got, "step"[:min(4, width-2)]) {
			t.Errorf("width %d: %q lost the step count", width, got)
		}
		if strings.Contains(got, "[") && !strings.Contains(got, "left") {
			t.Errorf("width %d: %q kept the bar (rank 3) and dropped the time left (rank 2)", width, got)
		}
	}
}

// TestNotATerminal: a line that is not live writes nothing.
func TestNotATerminal(t *testing.T) {
	var b bytes.Buffer
	l := New(&b, false, 10, 0)
	l.Set(5)
	l.Draw([]Field{{Text: "x"}})
	l.Clear()
	if b.Len() != 0 || l.Due(0) {
		t.Errorf("wrote %q, due %v", b.String(), l.Due(0))
	}
}
