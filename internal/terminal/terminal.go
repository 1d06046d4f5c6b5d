// Package terminal answers what a live status line needs to know about
// where it is written: whether that is a terminal, and how wide it is.
package terminal

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Is tells whether w is a terminal, where a line can be redrawn in place;
// a file or a pipe gets plain lines instead.
func Is(w io.Writer) bool {
	f, ok := file(w)
	return ok && term.IsTerminal(int(f.Fd()))
}

// file is the *os.File that w writes to: w itself, or the file under a
// wrapper that has an Unwrap method (cmd/gptg's standard output, which
// keeps its writes' first error).
func file(w io.Writer) (*os.File, bool) {
	for {
		switch v := w.(type) {
		case *os.File:
			return v, true
		case interface{ Unwrap() io.Writer }:
			w = v.Unwrap()
		default:
			return nil, false
		}
	}
}

// Width is the column count of the terminal w writes to, asked anew at
// every call so that a resized window is followed; 80 when it cannot be
// told.
func Width(w io.Writer) int {
	if f, ok := file(w); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// Fit cuts line to fewer than width columns, ending it with "…" when cut.
// One column stays free: writing the last one makes some terminals wrap
// at once, and a wrapped line leaves a copy behind at every redraw.
func Fit(line string, width int) string {
	r := []rune(line)
	if len(r) < width {
		return line
	}
	if width < 2 {
		return ""
	}
	return string(r[:width-2]) + "…"
}
