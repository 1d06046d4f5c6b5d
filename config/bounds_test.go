package config

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/cputime"
)

// TestBoundsBeforeParsing feeds the shapes that blew the TOML parser up
// (a 100,000-part header took 8 GB, nested inline tables a fatal OOM) and
// requires a quick one-line refusal with little memory.
func TestBoundsBeforeParsing(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
	}{
		{"dotted header", "[" + strings.Repeat("a.", 100_000) + "a]\n", "line 1: a key of more than 8 dotted parts"},
		{"dotted key", "[model]\n" + strings.Repeat("a.", 20) + "a = 1\n", "line 2: a key of more than 8 dotted parts"},
		{"nested inline tables", "x = " + strings.Repeat("{a=", 100_000) + "1" + strings.Repeat("}", 100_000) + "\n", "line 1: more than 8 nested tables or arrays"},
		{"nested arrays over lines", "x = " + strings.Repeat("[\n", 50) + "1" + strings.Repeat("]\n", 50), "line 9: more than 8 nested tables or arrays"},
		{"too big", "# " + strings.Repeat("x", MaxConfigSize) + "\n", "is 1048579 bytes, more than the limit of 1048576"},
		{"long line", "[sample]\nprompt = \"" + strings.Repeat("x", 70_000) + "\"\n", "line 2: longer than 65536 characters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := cputime.Process()
			_, err := loadOne(t, c.text)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if d := cputime.Process() - start; d > 2*time.Second {
				t.Errorf("took %v of CPU", d)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
				t.Errorf("allocated %d MB before refusing", grown>>20)
			}
		})
	}
}

// TestBoundsLetRealConfigsThrough: brackets, dots and quotes inside
// strings and comments are text, and a long prompt in a multi-line string
// is fine.
func TestBoundsLetRealConfigsThrough(t *testing.T) {
	text := `# [[[[[[[[[[ a.b.c.d.e.f.g.h.i.j ]]]]]]]]]]
[model]
heads = 2 # {{{{{{{{{{{{ 1.2.3.4.5.6.7.8.9.10
[train]
lr = 1.5e-3
min_lr = 1.5e-4
[sample]
prompt = """
` + strings.Repeat("[[[[{{{{ a.b.c.d.e.f.g.h.i.j \"x\" ''' \n", 3000) + `"""
`
	c, err := loadOne(t, text)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.Heads != 2 || c.Train.LR != 1.5e-3 || !strings.HasPrefix(c.Sample.Prompt, "[[[[") {
		t.Fatalf("loaded %+v", c)
	}
	if _, err := loadOne(t, "[sample]\nprompt = 'a.b.c.d.e.f.g.h.i.j.k [[[[[[[[[[['\n"); err != nil {
		t.Fatal(err)
	}
}

// TestRunNameFromFileName: a file name that gives no plain folder name is
// refused unless train.out is set (`...toml` would write into "..").
func TestRunNameFromFileName(t *testing.T) {
	for name, ok := range map[string]bool{"...toml": false, ".toml": false, ".hidden.toml": false, "a b.toml": true, "x.toml": true} {
		dir := writeFiles(t, map[string]string{name: ""})
		c, err := Load(filepath.Join(dir, name), nil)
		if ok != (err == nil) {
			t.Errorf("%q: got %v", name, err)
			continue
		}
		if !ok {
			if !strings.Contains(err.Error(), "train.out: the file name gives the run name") {
				t.Errorf("%q: got %v", name, err)
			}
			if _, err := Load(filepath.Join(dir, name), []string{"train.out=runs/x"}); err != nil {
				t.Errorf("%q with train.out: %v", name, err)
			}
		} else if c.Train.Out != filepath.Join("runs", strings.TrimSuffix(name, ".toml")) {
			t.Errorf("%q: out %q", name, c.Train.Out)
		}
	}
}

// TestParse: a resolved config read back from text is the config itself.
func TestParse(t *testing.T) {
	c, err := loadOne(t, "[model]\nheads = 4\n[train]\nlr = 0.002\n")
	if err != nil {
		t.Fatal(err)
	}
	text, err := c.TOML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("checkpoint", text)
	if err != nil {
		t.Fatal(err)
	}
	if d := back.Diff(c); len(d) != 0 {
		t.Fatalf("differs in %v", d)
	}
	if _, err := Parse("checkpoint", []byte("extends = \"x.toml\"\n")); err == nil || !strings.Contains(err.Error(), "self-contained") {
		t.Fatalf("extends: %v", err)
	}
}
