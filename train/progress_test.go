package train

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestProgressLineFits lays the live line out for terminals from wide to
// very narrow: it never reaches the last column, keeps the step count, and
// gives up the least useful fields first.
func TestProgressLineFits(t *testing.T) {
	test := 2.0123
	p := &progress{live: true, total: 31368, startStep: 0, at: 12345, start: time.Now().Add(-time.Minute),
		latest: &MetricsRow{Step: 12345, Epoch: 0.79, LR: 9.5e-4, Loss: 1.9876, TokensPerSec: 72440, TestLoss: &test}}
	wants := map[int][]string{
		200: {"step 12345/31368", "[", "39%", "left", "loss 1.9876", "test 2.0123", "epoch 0.79", "lr 9.50e-04", "72440 tok/s"},
		80:  {"step 12345/31368", "[", "39%", "left", "loss 1.9876", "test 2.0123"},
		40:  {"step 12345/31368", "39%", "left"},
		12:  {"step 12345…"},
	}
	for width := 200; width >= 5; width-- {
		line := p.line(width)
		if n := utf8.RuneCountInString(line); n >= width {
			t.Errorf("width %d: the line has %d columns: %q", width, n, line)
		}
		for _, want := range wants[width] {
			if !strings.Contains(line, want) {
				t.Errorf("width %d: %q lacks %q", width, line, want)
			}
		}
	}
}

// TestProgressTimeLeftAfterResume: the estimate counts only this process's
// steps, so a resumed run does not start at "0s left".
func TestProgressTimeLeftAfterResume(t *testing.T) {
	p := newProgress(Options{Progress: true}, 1000, 500)
	if _, ok := p.left(); ok {
		t.Error("a time left before any step of this process was timed")
	}
	p.start = time.Now().Add(-10 * time.Second) // 100 steps in 10 s here
	p.at = 600
	left, ok := p.left()
	if !ok || left < 39*time.Second || left > 41*time.Second {
		t.Errorf("time left %v (%v), want 40s: 400 steps at 0.1 s", left, ok)
	}
}
