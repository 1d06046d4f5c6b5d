package armwords

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMismatches: a right WORD passes, a wrong one, one without its
// comment and a malformed one are each reported, by line.
func TestMismatches(t *testing.T) {
	needObjdump(t)
	src := strings.Join([]string{
		"TEXT ·f(SB), 0, $0",
		"\tWORD $0x4e20d700 // fadd v0.4s, v24.4s, v0.4s",          // right
		"\tWORD $0x4e20d700 // fadd v1.4s, v24.4s, v0.4s",          // wrong register
		"\tWORD $0x6e22d420 //   FADDP  V0.4S,V1.4S, V2.4S",        // right, other spacing and case
		"\tWORD $0x4e20d700 /* fadd v0.4s, v24.4s, v0.4s */; \\",   // right, in a macro
		"\tWORD $0x4e20d700 // fadd v0.4s, v24.4s, v0.4s // m + t", // right, with a remark
		"\tWORD $0x4e20d700 /* fadd v0.4s, v24.4s, v2.4s */; \\",   // wrong, in a macro
		"\tWORD $0x4e20d700",                                       // no comment
		"\tWORD $(1<<3)",                                           // not a literal
		"\tRET",
	}, "\n")
	file := filepath.Join(t.TempDir(), "f_arm64.s")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, n, err := Mismatches(file)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("%d WORDs read, want 6", n)
	}
	want := []string{"f_arm64.s:8:", "f_arm64.s:9:", "f_arm64.s:3:", "f_arm64.s:7:"}
	if len(problems) != len(want) {
		t.Fatalf("problems %q, want ones at %q", problems, want)
	}
	for i, p := range problems {
		if !strings.HasPrefix(p, want[i]) {
			t.Errorf("problem %d: %q, want it at %s", i, p, want[i])
		}
	}
}
