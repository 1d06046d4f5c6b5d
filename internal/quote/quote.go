// Package quote shows values taken from the input (file names, config
// values, strings from a pickle) inside gptg's messages: a control
// character must not reach the terminal raw (an ESC sequence can repaint
// it, a newline can forge a second line), and a value of megabytes must
// not become a message of megabytes.
package quote

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxBytes is how much of a value a message shows; the rest is counted.
const MaxBytes = 200

// Value is s in Go's double-quoted form (control characters and invalid
// UTF-8 escaped), cut after MaxBytes bytes of s with the full length said:
// "aaaa…" (10000000 bytes).
func Value(s string) string {
	if len(s) <= MaxBytes {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(cutAt(s, MaxBytes)), len(s))
}

// Name is a file name or other identifier as a message shows it: as it is
// when it is short and printable (so that ordinary messages read as
// before), otherwise as Value gives it.
func Name(s string) string {
	if len(s) <= MaxBytes && Printable(s) {
		return s
	}
	return Value(s)
}

// Printable reports whether s is valid UTF-8 without control characters
// (C0, DEL, C1) or other characters that a terminal does not show as
// themselves (such as the bidirectional overrides).
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != ' ' && !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

// Line makes a whole message safe to print as one line: control
// characters are escaped as Go would (\n, \x1b, \u202e), invalid UTF-8
// bytes as \xNN, and a message past maxLine bytes is cut with its length
// said. It is the last guard; values should be quoted where they are put
// into a message.
func Line(s string, maxLine int) string {
	var b []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case r == ' ' || unicode.IsGraphic(r):
			b = append(b, s[i:i+size]...)
		default:
			q := strconv.QuoteRune(r) // '\x1b'
			b = append(b, q[1:len(q)-1]...)
		}
		i += size
	}
	if maxLine > 0 && len(b) > maxLine {
		return fmt.Sprintf("%s… (message cut: %d bytes)", cutAt(string(b), maxLine), len(b))
	}
	return string(b)
}

// cutAt is s's first n bytes, or fewer so as not to split a character.
func cutAt(s string, n int) string {
	n = min(len(s), n)
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
