package train

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gptg/gptg/internal/progress"
)

// TestProgressLineFits lays the live line out for terminals from wide to
// very narrow: it never reaches the last column, keeps the step count, and
// gives up the least useful fields first.
func TestProgressLineFits(t *testing.T) {
	test := 2.0123
	p := newProgress(Options{Progress: true, Log: &bytes.Buffer{}}, 31368, 0)
	p.line.Set(1) // the clock starts after the first step
	p.line.Set(12345)
	p.latest = &MetricsRow{Step: 12345, Epoch: 0.79, LR: 9.5e-4, Loss: 1.9876, TokensPerSec: 72440, TestLoss: &test}
	wants := map[int][]string{
		200: {"step 12345/31368", "[", "39%", "left", "loss 1.9876", "test 2.0123", "epoch 0.79", "lr 9.50e-04", "72440 tok/s"},
		80:  {"step 12345/31368", "[", "39%", "left", "loss 1.9876", "test 2.0123"},
		40:  {"step 12345/31368", "39%", "left"},
		12:  {"step 12345…"},
	}
	for width := 200; width >= 5; width-- {
		line := progress.Layout(p.fields(), p.line.At(), p.total, width)
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

// TestProgressPlainLines: piped to a file, training writes a line every
// 2 % of the steps with its time left, and the last step's line.
func TestProgressPlainLines(t *testing.T) {
	var log bytes.Buffer
	p := newProgress(Options{Log: &log}, 1000, 0)
	for s := 1; s <= 1000; s++ {
		if s%10 == 0 {
			p.row(MetricsRow{Step: s, Loss: 2}, 1000)
		} else {
			p.step(s, StepResult{})
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d plain lines for 1000 steps, want 50 (every 2 %%):\n%s", len(lines), log.String())
	}
	if !strings.HasPrefix(lines[0], "step 20/1000 ") || !strings.Contains(lines[0], " eta ") {
		t.Errorf("first line %q: want step 20/1000 with an eta", lines[0])
	}
	if !strings.HasPrefix(lines[49], "step 1000/1000 ") || strings.Contains(lines[49], " eta ") {
		t.Errorf("last line %q: want step 1000/1000 without an eta", lines[49])
	}
}
