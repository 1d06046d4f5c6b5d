package train

import (
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how training goes: a live bar on a terminal, or a plain
// line every few percent when the output is a file or a pipe.
type progress struct {
	opts  Options
	bar   *progressbar.ProgressBar
	every int // steps between plain lines
	next  int
	start time.Time
	done  bool
}

func newProgress(opts Options, total, step int) *progress {
	p := &progress{opts: opts, start: time.Now()}
	if opts.Progress {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(opts.Log),
			progressbar.OptionSetDescription("training"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		p.bar.Set(step)
		return p
	}
	p.every = max(1, total/50)
	p.next = (step/p.every + 1) * p.every
	return p
}

// step reports a step that wrote no metrics row.
func (p *progress) step(step int, r StepResult) {
	if p.bar != nil {
		p.bar.Set(step)
	}
}

// row reports a metrics row: the bar's description, or a plain line.
func (p *progress) row(r metricsRow, total int) {
	test := ""
	if r.TestLoss != nil {
		test = fmt.Sprintf(" test_loss %.4f", *r.TestLoss)
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("epoch %.2f loss %.4f lr %.2e %.0f tok/s%s", r.Epoch, r.Loss, r.LR, r.TokensPerSec, test))
		p.bar.Set(r.Step)
		if r.TestLoss != nil {
			fmt.Fprintf(p.opts.Log, "\nstep %d: test loss %.4f\n", r.Step, *r.TestLoss)
		}
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
	if p.bar != nil && !p.done {
		p.bar.Finish()
		p.done = true
	}
}
