package terminal

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		line  string
		width int
		want  string
	}{
		{"step 1/10", 80, "step 1/10"},
		{"step 1/10", 10, "step 1/10"},
		{"step 1/10", 9, "step 1/…"},
		{"añb·c", 4, "añ…"},
		{"abc", 1, ""},
	} {
		got := Fit(tc.line, tc.width)
		if got != tc.want || (got != "" && utf8.RuneCountInString(got) >= tc.width) {
			t.Errorf("Fit(%q, %d) = %q, want %q", tc.line, tc.width, got, tc.want)
		}
	}
}

func TestNotATerminal(t *testing.T) {
	var b bytes.Buffer
	if Is(&b) || Width(&b) != 80 {
		t.Errorf("a buffer: Is %v, Width %d; want false, 80", Is(&b), Width(&b))
	}
}
