package train

import (
	"fmt"
	"strings"
	"time"

	"github.com/gptg/gptg/internal/terminal"
)

// progress shows how training goes: one live line redrawn in place on a
// terminal, or a plain line every few percent when the output is a file
// or a pipe.
//
// The live line never grows wider than the terminal (read at every
// redraw, so a resized window is followed): a line that wraps leaves a
// stale copy behind at every redraw. As the terminal narrows, the least
// useful fields go first and the bar shrinks; the step count stays.
type progress struct {
	opts  Options
	live  bool
	total int

	// The time left is estimated from this process's own steps: after a
	// resume, the steps of earlier processes took no time here.
	startStep int
	start     time.Time
	drawn     time.Time
	at        int
	latest    *MetricsRow // the latest metrics row, for the live fields
	shown     bool        // a live line is on the screen
	// evaluatingNow puts "evaluating" on the line while the test loss is
	// computed.
	evaluatingNow bool

	every, next int // steps between plain lines, and the next one
}

// redrawEvery throttles the live line between metrics rows.
const redrawEvery = 100 * time.Millisecond

func newProgress(opts Options, total, step int) *progress {
	p := &progress{opts: opts, live: opts.Progress, total: total, startStep: step, at: step, start: time.Now()}
	if !p.live {
		p.every = max(1, total/50)
		p.next = (step/p.every + 1) * p.every
	}
	return p
}

// step reports a step that wrote no metrics row.
func (p *progress) step(step int, r StepResult) {
	p.at = step
	if p.live && time.Since(p.drawn) >= redrawEvery {
		p.draw()
	}
}

// evaluating says, on the live line, that the test loss of step is being
// computed: on a large test split that takes a while, and the line should
// not look stuck.
func (p *progress) evaluating(step int) {
	p.at = step
	if p.live {
		p.evaluatingNow = true
		p.draw()
		p.evaluatingNow = false
	}
}

// row reports a metrics row: the live line's fields, or a plain line.
func (p *progress) row(r MetricsRow, total int) {
	p.at = r.Step
	test := ""
	if r.TestLoss != nil {
		test = fmt.Sprintf(" test_loss %.4f", *r.TestLoss)
	}
	if p.live {
		p.latest = &r
		if r.TestLoss != nil { // a permanent line: the test losses stay readable
			p.clear()
			fmt.Fprintf(p.opts.Log, "step %d: test loss %.4f\n", r.Step, *r.TestLoss)
		}
		p.draw()
		return
	}
	if r.Step >= p.next || r.TestLoss != nil || r.Step == total {
		eta := ""
		if r.Step < total && r.TokensPerSec > 0 {
			left := time.Duration(float64(total-r.Step) / float64(r.Step) * r.ElapsedSecs * float64(time.Second))
			eta = " eta " + left.Round(time.Second).String()
		}
		fmt.Fprintf(p.opts.Log, "step %d/%d epoch %.2f loss %.4f lr %.2e grad_norm %.3f %.0f tok/s%s%s\n",
			r.Step, total, r.Epoch, r.Loss, r.LR, r.GradNorm, r.TokensPerSec, test, eta)
		for p.next <= r.Step {
			p.next += p.every
		}
	}
}

func (p *progress) finish() {
	p.clear()
}

// clear removes the live line, leaving the cursor at its start.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.opts.Log, "\r\x1b[K")
		p.shown = false
	}
}

func (p *progress) draw() {
	p.drawn = time.Now()
	fmt.Fprint(p.opts.Log, "\r"+p.line(terminal.Width(p.opts.Log))+"\x1b[K")
	p.shown = true
}

// field is one part of the live line; the lower its rank, the longer it
// stays as the terminal narrows.
type field struct {
	text string
	rank int
}

// line lays out the live line in fewer than width columns (the last
// column is left free: writing it makes some terminals wrap at once).
// Fields are dropped from the least useful up (throughput, learning rate,
// epoch, test loss, loss, the bar, the time left, the percentage) until
// the rest fits; the bar takes the room left, up to maxBar.
func (p *progress) line(width int) string {
	const barRank = 3
	fields := []field{
		{fmt.Sprintf("step %d/%d", p.at, p.total), 0},
		{"", barRank}, // drawn last, in the room the others leave
		{fmt.Sprintf("%d%%", 100*p.at/max(1, p.total)), 1},
	}
	if p.evaluatingNow {
		fields = append(fields, field{"evaluating the test loss", 1})
	} else if left, ok := p.left(); ok {
		fields = append(fields, field{formatLeft(left) + " left", 2})
	}
	if r := p.latest; r != nil {
		fields = append(fields, field{fmt.Sprintf("loss %.4f", r.Loss), 4})
		if r.TestLoss != nil {
			fields = append(fields, field{fmt.Sprintf("test %.4f", *r.TestLoss), 5})
		}
		fields = append(fields,
			field{fmt.Sprintf("epoch %.2f", r.Epoch), 6},
			field{fmt.Sprintf("lr %.2e", r.LR), 7},
			field{fmt.Sprintf("%.0f tok/s", r.TokensPerSec), 8})
	}
	const minBar, maxBar = 8, 30 // cells, brackets included
	room := width - 1
	for {
		n, worst := 0, 0
		for i, f := range fields {
			if f.rank == barRank {
				n += minBar + 1
			} else {
				n += len([]rune(f.text)) + 1 // and a space
			}
			if f.rank > fields[worst].rank {
				worst = i
			}
		}
		n-- // no space after the last field
		if n <= room || fields[worst].rank == 0 {
			var out []string
			for _, f := range fields {
				if f.rank == barRank {
					f.text = progressBar(p.at, p.total, min(maxBar, minBar+room-n))
				}
				out = append(out, f.text)
			}
			return terminal.Fit(strings.Join(out, " "), width)
		}
		fields = append(fields[:worst], fields[worst+1:]...)
	}
}

// left estimates the time to the end from this process's pace; false
// until a step has been timed.
func (p *progress) left() (time.Duration, bool) {
	done := p.at - p.startStep
	if done <= 0 || p.at >= p.total {
		return 0, false
	}
	perStep := time.Since(p.start) / time.Duration(done)
	return perStep * time.Duration(p.total-p.at), true
}

// formatLeft rounds a duration to what a reader needs: tenths of a second
// under ten seconds (a short run is not "0s" from its start), seconds
// above.
func formatLeft(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// progressBar draws done/total in cells columns: [#####.....].
func progressBar(done, total, cells int) string {
	inner := cells - 2
	full := inner * done / max(1, total)
	return "[" + strings.Repeat("#", full) + strings.Repeat(".", inner-full) + "]"
}
