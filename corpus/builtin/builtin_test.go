package builtin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The digest shared/README.md publishes for the tiny-shakespeare corpus
// (and data.sha256 of the configs that download it).
const tinyShakespeareSHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"

func TestTinyShakespeareIsTheKnownCorpus(t *testing.T) {
	c, ok := Lookup("tinyshakespeare")
	if !ok {
		t.Fatal("no built-in tinyshakespeare")
	}
	if c.Size != 1115394 || c.SHA256 != tinyShakespeareSHA256 {
		t.Errorf("tinyshakespeare: %d bytes, sha256 %s; want 1115394 bytes, sha256 %s", c.Size, c.SHA256, tinyShakespeareSHA256)
	}
	if got, ok := BySHA256(strings.ToUpper(tinyShakespeareSHA256)); !ok || got.Name != "tinyshakespeare" {
		t.Errorf("BySHA256 found %q, %v", got.Name, ok)
	}
	if c.Path() != "builtin:tinyshakespeare" {
		t.Errorf("Path() = %q", c.Path())
	}
}

// Every embedded corpus has a row in README.md (its source and licence),
// whose size and digest are the file's.
func TestEveryCorpusHasItsRow(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for line := range strings.Lines(string(text)) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 8 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		rows[cells[1]] = cells[1:7] // name, file, bytes, sha256, source, licence
	}
	if len(All()) < 2 {
		t.Fatalf("%d built-in corpora, want tinyshakespeare and toy at least", len(All()))
	}
	for _, c := range All() {
		row, ok := rows[c.Name]
		if !ok {
			t.Errorf("%s (%s) has no row in README.md: add its source and licence", c.Name, c.File)
			continue
		}
		size, _ := strconv.ParseInt(strings.ReplaceAll(row[2], ",", ""), 10, 64)
		if row[1] != c.File || size != c.Size || row[3] != c.SHA256 || row[4] == "" || row[5] == "" {
			t.Errorf("README.md's row for %s is %q; the file is %s, %d bytes, sha256 %s", c.Name, row, c.File, c.Size, c.SHA256)
		}
		delete(rows, c.Name)
	}
	for name := range rows {
		t.Errorf("README.md has a row for %s, which is not embedded", name)
	}
}

// Open reads and seeks through the embedded bytes; Bytes gives the same
// content; unknown names wrap fs.ErrNotExist.
func TestOpen(t *testing.T) {
	for _, c := range All() {
		f, err := Open(c.Name)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != c.SHA256 {
			t.Errorf("%s read as sha256 %s, want %s", c.Name, got, c.SHA256)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 10)
		if _, err := io.ReadFull(f, head); err != nil {
			t.Fatal(err)
		}
		f.Close()
		b, err := Bytes(c.Name)
		if err != nil || int64(len(b)) != c.Size || string(b[:10]) != string(head) {
			t.Errorf("Bytes(%s): %d bytes, %v", c.Name, len(b), err)
		}
	}
	for _, name := range []string{"nosuch", "", "tinyshakespeare.txt", "../builtin"} {
		if _, err := Open(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%q): %v, want fs.ErrNotExist", name, err)
		}
		if _, err := Bytes(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Bytes(%q): %v, want fs.ErrNotExist", name, err)
		}
	}
	if name, ok := Parse("builtin:toy"); !ok || name != "toy" {
		t.Errorf("Parse(builtin:toy) = %q, %v", name, ok)
	}
	if _, ok := Parse("data/builtin:toy"); ok {
		t.Error("a path with builtin: inside is a file")
	}
}

// TestNamesReadsNoCorpus: Names runs as gptg starts (the train command's
// help text), so it must not copy and hash the corpora (3.6 MB: every
// command would pay it, and under a tight ulimit -v run out of memory
// before main); it names what All lists. The allocation is measured
// in a fresh process of this test alone: another test may have read the
// corpora already.
func TestNamesReadsNoCorpus(t *testing.T) {
	if os.Getenv("GPTG_NAMES_CHILD") == "1" {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		Names()
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
			t.Fatalf("Names allocated %d bytes; it should read the folder only", grew)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNamesReadsNoCorpus$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GPTG_NAMES_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var want []string
	for _, c := range All() {
		want = append(want, c.Name)
	}
	if names := Names(); !slices.Equal(names, want) {
		t.Errorf("Names() = %q, All() names %q", names, want)
	}
}
