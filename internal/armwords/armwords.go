// Package armwords checks the arm64 instructions that the project's
// assembly writes as WORDs — the NEON forms Go's assembler lacks (vector
// FADD, FMUL, FDIV, FMAX, FADDP, …) — against binutils' disassembler. Each
// such WORD carries the instruction it encodes in a comment,
//
//	WORD $0x4e20d700 // fadd v0.4s, v24.4s, v0.4s
//
// or, inside a #define (where a // comment would swallow the rest of the
// macro), WORD $0x4e20d700 /* fadd v0.4s, v24.4s, v0.4s */; \ (a remark
// may follow the instruction after another //) — and Check fails where aarch64-linux-gnu-objdump (Debian's
// binutils-aarch64-linux-gnu, which .ci/run installs) reads another. The
// check runs on any machine: it reads the source, not a binary.
package armwords

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Objdump is the disassembler Check runs.
const Objdump = "aarch64-linux-gnu-objdump"

// word is one WORD of a source file and the instruction its comment names.
type word struct {
	where string // file:line
	code  uint32
	want  string
}

var (
	wordLine = regexp.MustCompile(`^\s*WORD\s+\$0x([0-9a-fA-F]{8})\s*(?://\s*(.*)|/\*\s*(.*?)\s*\*/\s*;?\s*\\?)?\s*$`)
	anyWord  = regexp.MustCompile(`^\s*WORD\b`)
)

// Check fails t for every WORD in files (paths of arm64 assembly) whose
// comment does not name the instruction objdump decodes, or that has no
// such comment. It skips t where objdump is not installed; in CI a skip
// fails the run.
func Check(t testing.TB, files ...string) {
	t.Helper()
	needObjdump(t)
	problems, n, err := Mismatches(files...)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no WORDs in %v: nothing checked", files)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func needObjdump(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath(Objdump); err != nil {
		t.Skipf("%s not installed (apt-get install binutils-aarch64-linux-gnu)", Objdump)
	}
}

// Mismatches returns one line per WORD in files whose comment does not
// match objdump's reading of it, and the number of WORDs read.
func Mismatches(files ...string) (problems []string, n int, err error) {
	var words []word
	for _, f := range files {
		ws, bad, err := read(f)
		if err != nil {
			return nil, 0, err
		}
		words = append(words, ws...)
		problems = append(problems, bad...)
	}
	if len(words) == 0 {
		return problems, 0, nil
	}
	got, err := disassemble(words)
	if err != nil {
		return nil, 0, err
	}
	for i, w := range words {
		if normal(w.want) != normal(got[i]) {
			problems = append(problems, fmt.Sprintf("%s: WORD $0x%08x is %q, its comment says %q", w.where, w.code, got[i], w.want))
		}
	}
	return problems, len(words), nil
}

// read returns the WORDs of one file, and a problem for each WORD
// without the comment naming its instruction.
func read(file string) (words []word, bad []string, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		where := fmt.Sprintf("%s:%d", filepath.Base(file), line)
		m := wordLine.FindStringSubmatch(sc.Text())
		switch {
		case m == nil && anyWord.MatchString(sc.Text()):
			bad = append(bad, where+": a WORD not of the form WORD $0x12345678 // instruction")
		case m == nil:
		case m[2] == "" && m[3] == "":
			bad = append(bad, where+": a WORD without the instruction it encodes in a comment")
		default:
			var code uint32
			fmt.Sscanf(m[1], "%x", &code)
			insn, _, _ := strings.Cut(m[2]+m[3], "//") // a remark may follow
			words = append(words, word{where, code, strings.TrimSpace(insn)})
		}
	}
	return words, bad, sc.Err()
}

// disassemble returns objdump's text for each word, in order.
func disassemble(words []word) ([]string, error) {
	dir, err := os.MkdirTemp("", "armwords")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "words.bin")
	buf := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(buf[4*i:], w.code)
	}
	if err := os.WriteFile(bin, buf, 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(Objdump, "-D", "-b", "binary", "-m", "aarch64", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", Objdump, err)
	}
	// Lines "   4:	4e20d700 	fadd	v0.4s, v24.4s, v0.4s".
	insn := regexp.MustCompile(`^\s*([0-9a-f]+):\s+([0-9a-f]{8})\s+(.*)$`)
	got := make([]string, len(words))
	for _, l := range strings.Split(string(out), "\n") {
		m := insn.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var off int
		fmt.Sscanf(m[1], "%x", &off)
		if off%4 == 0 && off/4 < len(got) {
			got[off/4] = m[3]
		}
	}
	return got, nil
}

// normal lowercases s and makes its spacing single spaces, with none
// after commas, so that spacing alone never mismatches.
func normal(s string) string {
	s = strings.Join(strings.Fields(strings.ToLower(s)), " ")
	return strings.ReplaceAll(s, ", ", ",")
}
