package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gptg/gptg/internal/terminal"
)

// status shows the progress of a long step (an evaluation over thousands
// of batches) on one line of a terminal, redrawn in place and cleared at
// the end; on a file or a pipe it shows nothing. It also catches Ctrl-C
// and SIGTERM during the step, so that the step stops with a message that
// says what was interrupted (exit 130) instead of a silent death.
type status struct {
	w     io.Writer
	tty   bool
	what  string
	start time.Time
	drawn time.Time
	ctx   context.Context
	stop  context.CancelFunc
}

// redrawEvery throttles the redraws: a line per batch would cost more than
// the batches on a slow terminal.
const redrawEvery = 200 * time.Millisecond

func newStatus(w io.Writer, what string) *status {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	return &status{w: w, tty: terminal.Is(w), what: what, start: time.Now(), ctx: ctx, stop: stop}
}

// update is an eval.Progress: done of total batches are finished.
func (s *status) update(done, total int) error {
	if s.ctx.Err() != nil {
		s.clear()
		return interruptedError{fmt.Errorf("interrupted during the %s, after %d of %d batches", s.what, done, total)}
	}
	if !s.tty || time.Since(s.drawn) < redrawEvery {
		return nil
	}
	s.drawn = time.Now()
	elapsed := time.Since(s.start)
	left := time.Duration(float64(elapsed) / float64(done) * float64(total-done)).Round(time.Second)
	line := fmt.Sprintf("%s: %d/%d batches (%d%%), %s left", s.what, done, total, 100*done/total, left)
	fmt.Fprint(s.w, "\r"+terminal.Fit(line, terminal.Width(s.w))+"\x1b[K")
	return nil
}

// done clears the line and stops catching signals.
func (s *status) done() {
	s.clear()
	s.stop()
}

func (s *status) clear() {
	if s.tty && !s.drawn.IsZero() {
		fmt.Fprint(s.w, "\r\x1b[K")
	}
}
