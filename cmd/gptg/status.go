package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gptg/gptg/internal/progress"
	"github.com/gptg/gptg/internal/terminal"
)

// status shows the progress of a long step (an evaluation over thousands
// of batches) on one line of a terminal, redrawn in place and cleared at
// the end (internal/progress, the line gptg train draws too); on a file or
// a pipe it shows nothing. It also catches Ctrl-C
// and SIGTERM during the step, so that the step stops with a message that
// says what was interrupted (exit 130) instead of a silent death.
type status struct {
	what string
	unit string // what is counted: "batches", "merges"
	line *progress.Line
	ctx  context.Context
	stop context.CancelFunc
}

// redrawEvery throttles the redraws: a line per batch would cost more than
// the batches on a slow terminal.
const redrawEvery = 200 * time.Millisecond

func newStatus(w io.Writer, what string) *status { return newStatusOf(w, what, "batches") }

// newStatusOf is newStatus for a step that counts unit, not batches.
func newStatusOf(w io.Writer, what, unit string) *status {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	return &status{what: what, unit: unit, line: progress.New(w, terminal.Is(w), 0, 0), ctx: ctx, stop: stop}
}

// update is an eval.Progress: done of total batches (units) are finished.
func (s *status) update(done, total int) error {
	if s.ctx.Err() != nil {
		s.line.Clear()
		return interruptedError{fmt.Errorf("interrupted during the %s, after %d of %d %s", s.what, done, total, s.unit)}
	}
	s.line.SetTotal(total)
	s.line.Set(done)
	if !s.line.Due(redrawEvery) {
		return nil
	}
	fields := []progress.Field{
		{Text: fmt.Sprintf("%s: %d/%d %s", s.what, done, total, s.unit), Rank: 0},
		{Bar: true, Rank: 3},
		{Text: fmt.Sprintf("%d%%", 100*done/max(1, total)), Rank: 1},
	}
	if left, ok := s.line.Left(); ok {
		fields = append(fields, progress.Field{Text: progress.FormatLeft(left) + " left", Rank: 2})
	}
	s.line.Draw(fields)
	return nil
}

// done clears the line and stops catching signals.
func (s *status) done() {
	s.line.Clear()
	s.stop()
}
