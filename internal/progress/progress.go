// Package progress draws the one live line that shows how a long job goes
// (training steps, evaluation batches) on a terminal: redrawn in place,
// never wider than the terminal, with a bar and the time left.
//
// gptg train and gptg eval both use it, so the two lines look alike and
// estimate the time left the same way.
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gptg/gptg/internal/terminal"
)

// Line is a live line on w for a job of total units (steps, batches).
// Its methods do nothing visible when w is not a terminal, so a caller
// that also writes plain lines to a file need not check.
type Line struct {
	w     io.Writer
	live  bool
	total int
	at    int

	// The clock starts when the first unit of this process is done, not
	// when the job starts: the first unit pays for allocating buffers and
	// warming caches (several times a steady unit), and counting it made
	// the first estimate of a 55 s run read 6m57s. After a resume the
	// units of earlier processes took no time here and are not counted
	// either.
	clockAt    int       // units done when the clock started; -1: not yet
	clockStart time.Time //
	startAt    int       // units done when the line was made

	drawn time.Time
	shown bool

	now func() time.Time // the clock: time.Now, a fake one in tests
}

// New makes a line for a job of total units of which at are done already
// (a resumed training); live says whether to draw (a terminal).
func New(w io.Writer, live bool, total, at int) *Line {
	return &Line{w: w, live: live, total: total, at: at, startAt: at, clockAt: -1, now: time.Now}
}

// Live says whether the line is drawn (w is a terminal).
func (l *Line) Live() bool { return l.live }

// Set records that at units are done.
func (l *Line) Set(at int) {
	l.at = at
	if l.clockAt < 0 && at > l.startAt {
		l.clockAt, l.clockStart = at, l.now()
	}
}

// SetTotal changes the job's size, for a caller that learns it late.
func (l *Line) SetTotal(total int) { l.total = total }

// At returns the units done.
func (l *Line) At() int { return l.at }

// Left estimates the time to the end from the pace of the units after
// this process's first; false until one of those has been timed.
func (l *Line) Left() (time.Duration, bool) {
	if l.clockAt < 0 || l.at <= l.clockAt || l.at >= l.total {
		return 0, false
	}
	perUnit := l.now().Sub(l.clockStart) / time.Duration(l.at-l.clockAt)
	return perUnit * time.Duration(l.total-l.at), true
}

// Due says whether a redraw is due: at most one every `every`, since a
// line per step would cost more than the steps on a slow terminal.
func (l *Line) Due(every time.Duration) bool {
	return l.live && time.Since(l.drawn) >= every
}

// Field is one part of the line; the lower its Rank, the longer it stays
// as the terminal narrows. A field with Bar set is the bar, drawn in the
// room the others leave.
type Field struct {
	Text string
	Rank int
	Bar  bool
}

// Draw redraws the line with the fields, laid out to the terminal's
// current width (asked at every redraw, so a resized window is followed).
func (l *Line) Draw(fields []Field) {
	if !l.live {
		return
	}
	l.drawn = time.Now()
	fmt.Fprint(l.w, "\r"+Layout(fields, l.at, l.total, terminal.Width(l.w))+"\x1b[K")
	l.shown = true
}

// Clear removes the line, leaving the cursor at its start, so that a
// permanent line can be written.
func (l *Line) Clear() {
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
}

// Layout lays the fields out in fewer than width columns (the last column
// is left free: writing it makes some terminals wrap at once, and a
// wrapped line leaves a stale copy behind at every redraw). Fields are
// dropped from the highest rank down until the rest fits; a field of rank
// 0 is never dropped (it is cut with "…" instead). The bar shows
// done/total and takes the room left, up to maxBar cells.
func Layout(fields []Field, done, total, width int) string {
	const minBar, maxBar = 8, 30 // cells, brackets included
	fields = append([]Field(nil), fields...)
	room := width - 1
	for {
		n, worst := 0, 0
		for i, f := range fields {
			if f.Bar {
				n += minBar + 1
			} else {
				n += len([]rune(f.Text)) + 1 // and a space
			}
			if f.Rank > fields[worst].Rank {
				worst = i
			}
		}
		n-- // no space after the last field
		if n <= room || fields[worst].Rank == 0 {
			var out []string
			for _, f := range fields {
				if f.Bar {
					f.Text = Bar(done, total, min(maxBar, minBar+room-n))
				}
				out = append(out, f.Text)
			}
			return terminal.Fit(strings.Join(out, " "), width)
		}
		fields = append(fields[:worst], fields[worst+1:]...)
	}
}

// Bar draws done/total in cells columns: [#####.....].
func Bar(done, total, cells int) string {
	inner := cells - 2
	full := inner * min(done, total) / max(1, total)
	return "[" + strings.Repeat("#", full) + strings.Repeat(".", inner-full) + "]"
}

// FormatLeft rounds a duration to what a reader needs: tenths of a second
// under ten seconds (a short job is not "0s" from its start), seconds
// above.
func FormatLeft(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
