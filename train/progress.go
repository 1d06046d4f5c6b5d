package train

import (
	"fmt"
	"time"

	"github.com/gptg/gptg/internal/progress"
)

// trainProgress shows how training goes: one live line redrawn in place on
// a terminal (internal/progress, shared with gptg eval), or a plain line
// every 2 % when the output is a file or a pipe. As the terminal narrows,
// the least useful fields go first and the bar shrinks; the step count
// stays.
type trainProgress struct {
	opts   Options
	line   *progress.Line
	total  int
	latest *MetricsRow // the latest metrics row, for the live fields
	// evaluatingNow puts "evaluating" on the line while the test loss is
	// computed.
	evaluatingNow bool

	every, next int // steps between plain lines, and the next one
}

// redrawEvery throttles the live line between metrics rows.
const redrawEvery = 100 * time.Millisecond

func newProgress(opts Options, total, step int) *trainProgress {
	p := &trainProgress{opts: opts, line: progress.New(opts.Log, opts.Progress, total, step), total: total}
	if !opts.Progress {
		p.every = max(1, total/50)
		p.next = (step/p.every + 1) * p.every
	}
	return p
}

// step reports a step that wrote no metrics row.
func (p *trainProgress) step(step int, r StepResult) {
	p.line.Set(step)
	if p.line.Due(redrawEvery) {
		p.draw()
	}
}

// evaluating says, on the live line, that the test loss of step is being
// computed: on a large test split that takes a while, and the line should
// not look stuck.
func (p *trainProgress) evaluating(step int) {
	p.line.Set(step)
	p.evaluatingNow = true
	p.draw()
	p.evaluatingNow = false
}

// row reports a metrics row: the live line's fields, or a plain line.
func (p *trainProgress) row(r MetricsRow, total int) {
	p.line.Set(r.Step)
	if p.line.Live() {
		p.latest = &r
		if r.TestLoss != nil { // a permanent line: the test losses stay readable
			p.line.Clear()
			fmt.Fprintf(p.opts.Log, "step %d: test loss %.4f\n", r.Step, *r.TestLoss)
		}
		p.draw()
		return
	}
	if r.Step >= p.next || r.TestLoss != nil || r.Step == total {
		test, eta := "", ""
		if r.TestLoss != nil {
			test = fmt.Sprintf(" test_loss %.4f", *r.TestLoss)
		}
		if left, ok := p.line.Left(); ok {
			eta = " eta " + progress.FormatLeft(left)
		}
		fmt.Fprintf(p.opts.Log, "step %d/%d epoch %.2f loss %.4f lr %.2e grad_norm %.3f %.0f tok/s%s%s\n",
			r.Step, total, r.Epoch, r.Loss, r.LR, r.GradNorm, r.TokensPerSec, test, eta)
		for p.next <= r.Step {
			p.next += p.every
		}
	}
}

func (p *trainProgress) finish() { p.line.Clear() }

func (p *trainProgress) draw() { p.line.Draw(p.fields()) }

// fields are the live line's parts, ranked from the most useful (kept on
// the narrowest terminal) to the least: the step count, the percentage,
// the time left, the bar, the loss, the test loss, the epoch, the
// learning rate, the throughput.
func (p *trainProgress) fields() []progress.Field {
	at := p.line.At()
	fields := []progress.Field{
		{Text: fmt.Sprintf("step %d/%d", at, p.total), Rank: 0},
		{Rank: 3, Bar: true},
		{Text: fmt.Sprintf("%d%%", 100*at/max(1, p.total)), Rank: 1},
	}
	if p.evaluatingNow {
		fields = append(fields, progress.Field{Text: "evaluating the test loss", Rank: 1})
	} else if left, ok := p.line.Left(); ok {
		fields = append(fields, progress.Field{Text: progress.FormatLeft(left) + " left", Rank: 2})
	}
	if r := p.latest; r != nil {
		fields = append(fields, progress.Field{Text: fmt.Sprintf("loss %.4f", r.Loss), Rank: 4})
		if r.TestLoss != nil {
			fields = append(fields, progress.Field{Text: fmt.Sprintf("test %.4f", *r.TestLoss), Rank: 5})
		}
		fields = append(fields,
			progress.Field{Text: fmt.Sprintf("epoch %.2f", r.Epoch), Rank: 6},
			progress.Field{Text: fmt.Sprintf("lr %.2e", r.LR), Rank: 7},
			progress.Field{Text: fmt.Sprintf("%.0f tok/s", r.TokensPerSec), Rank: 8})
	}
	return fields
}
