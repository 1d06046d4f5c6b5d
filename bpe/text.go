package bpe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Readable shows a piece as text a person can read: its whole UTF-8
// characters as they are, each byte of an incomplete or invalid sequence
// as <0xE2> (GPT-2 spells a rare character as several tokens of one or two
// of its bytes).
func Readable(piece []byte) string {
	if utf8.Valid(piece) {
		return string(piece)
	}
	var b strings.Builder
	for len(piece) > 0 {
		r, n := utf8.DecodeRune(piece)
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, "<0x%02X>", piece[0])
		} else {
			b.Write(piece[:n])
		}
		piece = piece[n:]
	}
	return b.String()
}

// TextBuffer turns the bytes of tokens decoded one at a time into whole
// UTF-8: a sampler printing each token as it is drawn holds back the
// first bytes of a character until its last arrive, instead of printing
// half a character. Bytes that cannot start or continue a character become
// U+FFFD, as Go's range over a string reads them.
type TextBuffer struct {
	pending []byte
}

// Write adds p and returns the text up to the last whole character.
func (t *TextBuffer) Write(p []byte) string {
	t.pending = append(t.pending, p...)
	end := len(t.pending)
	// An incomplete character at the end is kept: at most 3 bytes, from
	// the last byte that can start one.
	for back := 1; back <= min(utf8.UTFMax-1, end); back++ {
		c := t.pending[end-back]
		if utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(t.pending[end-back:]) && validPrefix(t.pending[end-back:]) {
				end -= back
			}
			break
		}
	}
	out := replaceInvalid(string(t.pending[:end]))
	t.pending = t.pending[:copy(t.pending, t.pending[end:])]
	return out
}

// Flush returns what is held back, an incomplete character as U+FFFD.
func (t *TextBuffer) Flush() string {
	out := replaceInvalid(string(t.pending))
	t.pending = t.pending[:0]
	return out
}

// validPrefix reports whether p, shorter than its character, can still
// become a valid UTF-8 sequence.
func validPrefix(p []byte) bool {
	var full [utf8.UTFMax]byte
	n := copy(full[:], p)
	// Complete it with the smallest continuation bytes the lead allows and
	// see whether that decodes: E0 needs A0.., ED at most 9F, F0 90.., F4
	// at most 8F; trying both ends of the range settles it.
	for _, fill := range []byte{0x80, 0xBF} {
		for i := n; i < len(full); i++ {
			full[i] = fill
		}
		if r, size := utf8.DecodeRune(full[:]); r != utf8.RuneError && size > n {
			return true
		}
	}
	return false
}

// replaceInvalid is s with each byte that is not part of a valid sequence
// replaced by U+FFFD.
func replaceInvalid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}
