package quote

import (
	"strings"
	"testing"
)

func TestValue(t *testing.T) {
	for in, want := range map[string]string{
		"abc":                          `"abc"`,
		"a\nb\x1b[31m":                 `"a\nb\x1b[31m"`,
		strings.Repeat("é", 150):       `"` + strings.Repeat("é", 100) + `"… (300 bytes)`,
		"x" + strings.Repeat("é", 150): `"x` + strings.Repeat("é", 99) + `"… (301 bytes)`,
	} {
		if got := Value(in); got != want {
			t.Errorf("Value(%.20q) = %.60s, want %.60s", in, got, want)
		}
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"runs/shakespeare": "runs/shakespeare",
		"my file.txt":      "my file.txt",
		"a\x1b[2Jb":        `"a\x1b[2Jb"`,
		"evil\u202etxt":    `"evil\u202etxt"`,
		"bad\xffutf8":      `"bad\xffutf8"`,
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLine(t *testing.T) {
	if got, want := Line("a\x1b[31mb\tc\xff", 0), `a\x1b[31mb\tc\xff`; got != want {
		t.Errorf("Line = %s, want %s", got, want)
	}
	long := strings.Repeat("ab", 5000)
	if got := Line(long, 1000); len(got) > 1100 || !strings.HasSuffix(got, "… (message cut: 10000 bytes)") {
		t.Errorf("Line of 10000 bytes: %d bytes, ends %q", len(got), got[len(got)-40:])
	}
}
