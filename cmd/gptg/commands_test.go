package main

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/sample"
)

// ok runs gptg and requires exit 0 and an empty stderr.
func ok(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := gptg(t, dir, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("gptg %s: exit %d, stderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// TestGraphShakespeare checks the parameter count of the seed chapter's
// model against the reference's, and the Graphviz output.
func TestGraphShakespeare(t *testing.T) {
	cfg, err := filepath.Abs("../../configs/shakespeare.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := ok(t, dir, "graph", cfg, "--set", "model.vocab=65", "--dot", "g.dot")
	total := ""
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "total" {
			total = f[1]
		}
	}
	if total != "109889" {
		t.Errorf("total parameters %q, want 109889 (the reference's count); output:\n%s", total, out)
	}
	dot, err := os.ReadFile(filepath.Join(dir, "g.dot"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(dot, []byte("digraph")) {
		t.Errorf("g.dot starts with %q, want digraph", dot[:min(len(dot), 40)])
	}
	if bytes.Contains(dot, []byte("%!")) || bytes.Contains(dot, []byte("NIL")) {
		t.Errorf("g.dot holds unformatted values (%%!s(NIL), Ptr: NIL): Gorgonia's runtime rows were not left out")
	}
	if regexp.MustCompile(`0x[0-9a-f]{6,}`).Match(dot) || !bytes.Contains(dot, []byte("\tn3 -> n6 [headlabel=\"0\"];")) {
		t.Errorf("g.dot names its nodes by memory address or lacks the edge from the embedding (n3) to the first query projection (n6)")
	}
	if !strings.Contains(out, "dot -Tsvg g.dot") {
		t.Errorf("the output does not say how to draw g.dot:\n%s", out)
	}
	if files := listFiles(t, dir); !slices.Equal(files, []string{"g.dot"}) {
		t.Errorf("files written: %v, want only g.dot", files)
	}

	// --forward: the forward graph alone, fewer nodes, no gradient nodes.
	nodes := func(out string) int {
		for _, line := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(line, "graph nodes ("); ok {
				n, err := strconv.Atoi(rest[strings.LastIndex(rest, " ")+1:])
				if err == nil {
					return n
				}
			}
		}
		t.Fatalf("no node count in:\n%s", out)
		return 0
	}
	fwd := ok(t, dir, "graph", cfg, "--set", "model.vocab=65", "--dot", "f.dot", "--forward")
	if !strings.Contains(fwd, "graph nodes (forward, batch 4)") || nodes(fwd) >= nodes(out) {
		t.Errorf("--forward: %d nodes against %d for the whole graph:\n%s", nodes(fwd), nodes(out), fwd)
	}
	fdot, err := os.ReadFile(filepath.Join(dir, "f.dot"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(fdot, []byte("digraph")) || len(fdot) >= len(dot) {
		t.Errorf("f.dot: %d bytes against %d for the whole graph", len(fdot), len(dot))
	}
}

// TestGraphDotReproducible: graph --dot writes the same bytes for the same
// config, so that two configs' graphs can be compared with diff: one more
// head changes only the lines of the two blocks' attention weights (their
// shape), not the names or order of anything else. Gorgonia's ToDot named
// nodes by memory address and sorted by those names.
func TestGraphDotReproducible(t *testing.T) {
	cfg, err := filepath.Abs("../../configs/shakespeare.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	read := func(name string, sets ...string) []string {
		t.Helper()
		ok(t, dir, append([]string{"graph", cfg, "--set", "model.vocab=65", "--dot", name}, sets...)...)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(b), "\n")
	}
	a, b := read("a.dot"), read("b.dot")
	if !slices.Equal(a, b) {
		t.Fatalf("two runs of graph --dot on one config differ")
	}
	c := read("c.dot", "--set", "model.heads=2")
	if len(c) != len(a) {
		t.Fatalf("model.heads=2: %d lines against %d", len(c), len(a))
	}
	var changed []string
	for i := range a {
		if a[i] != c[i] {
			changed = append(changed, c[i])
		}
	}
	if len(changed) != 2 {
		t.Fatalf("model.heads=2 changed %d lines, want 2 (the attention weights' shapes):\n%s", len(changed), strings.Join(changed, "\n"))
	}
	for _, l := range changed {
		if !strings.Contains(l, "AttentionWeights") || !strings.Contains(l, "(8, 32, 32)") {
			t.Errorf("model.heads=2 changed a line other than an attention weights' shape: %s", l)
		}
	}
}

func TestHelp(t *testing.T) {
	out := ok(t, t.TempDir(), "help")
	for _, want := range []string{"Usage: gptg <command>", "Exit codes:"} {
		if !strings.Contains(out, want) {
			t.Errorf("gptg help lacks %q:\n%s", want, out)
		}
	}
	for name, c := range commands {
		if !strings.Contains(out, name) || !strings.Contains(out, c.summary) {
			t.Errorf("gptg help does not list %s: %s", name, c.summary)
		}
	}
	if out := ok(t, t.TempDir(), "help", "train"); !strings.HasPrefix(out, "Usage: gptg train CONFIG.toml") {
		t.Errorf("gptg help train:\n%s", out)
	}
	if out := ok(t, t.TempDir(), "sample", "--help"); !strings.HasPrefix(out, "Usage: gptg sample MODEL.safetensors") {
		t.Errorf("gptg sample --help:\n%s", out)
	}
	// No command at all is a usage error, but the help is what helps.
	if r := gptg(t, t.TempDir()); r.code != 2 || !strings.Contains(r.stdout, "Usage: gptg <command>") {
		t.Errorf("gptg without arguments: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

// TestSampleDefaultsFromRunFolder: in a run folder the flags default to the
// run's [sample] table (prompt "First", 7 tokens, temperature 0), flags
// given still win, and a model file alone takes the built-in defaults.
func TestSampleDefaultsFromRunFolder(t *testing.T) {
	dir := t.TempDir()
	alone := filepath.Join(dir, "alone.safetensors")
	copyFile(t, causalModel, alone)

	fromRun := ok(t, dir, "sample", causalModel)
	fromFlags := ok(t, dir, "sample", alone, "--prompt", "First", "--tokens", "7", "--temperature", "0")
	if fromRun != fromFlags {
		t.Errorf("the run's [sample] table gave %q, the same settings as flags %q", fromRun, fromFlags)
	}
	if !strings.HasPrefix(fromRun, "First") || utf8.RuneCountInString(fromRun) != len("First")+7+1 {
		t.Errorf("want the prompt First, 7 tokens and a newline, got %q", fromRun)
	}

	// Greedy generation is a prefix of itself: 3 tokens are the first 3 of 7.
	short := ok(t, dir, "sample", causalModel, "--tokens", "3")
	if want := string([]rune(fromRun)[:len("First")+3]) + "\n"; short != want {
		t.Errorf("--tokens 3 in the run folder gave %q, want %q", short, want)
	}
	// A flag given overrides the table; the rest still comes from it.
	if out := ok(t, dir, "sample", causalModel, "--prompt", "All:"); !strings.HasPrefix(out, "All:") ||
		utf8.RuneCountInString(out) != len("All:")+7+1 {
		t.Errorf("--prompt All: in the run folder gave %q", out)
	}

	// Built-in defaults: prompt "\n", 256 tokens, temperature 1 (seeded).
	out := ok(t, dir, "sample", alone)
	if !strings.HasPrefix(out, "\n") || utf8.RuneCountInString(out) != 1+256+1 {
		t.Errorf("a model without a run folder gave %d runes, want 258: %q", utf8.RuneCountInString(out), out)
	}
	if again := ok(t, dir, "sample", alone); again != out {
		t.Error("the same seed gave another text")
	}
	if other := ok(t, dir, "sample", alone, "--seed", "7"); other == out {
		t.Error("seed 7 gave the same 256 tokens as seed 42")
	}
}

// TestSampleBrokenRunConfig: a config.toml beside the model that does not
// load is reported, not silently replaced by the built-in defaults.
func TestSampleBrokenRunConfig(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, causalModel, filepath.Join(dir, "model.safetensors"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("[sample]\ntokens = -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := gptg(t, dir, "sample", "model.safetensors")
	if r.code != 2 || !strings.Contains(r.stderr, "config.toml: sample.tokens: -1 is invalid") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestAttentionText reads the tables back: every row sums to 1 over the
// real positions (none of the padding's weight shows up), a causal model
// puts nothing right of the diagonal, and an unmasked model does.
func TestAttentionText(t *testing.T) {
	for _, tc := range []struct {
		name   string
		model  string
		causal bool
	}{{"causal", causalModel, true}, {"unmasked", unmaskedModel, false}} {
		t.Run(tc.name, func(t *testing.T) {
			out := ok(t, t.TempDir(), "attention", tc.model, "--text", "Citizen")
			tables := parseTables(t, out)
			if len(tables) != 2 || tables[0].title != "block 0, head 0" || tables[1].title != "block 0, head 1" {
				t.Fatalf("want tables for block 0, heads 0 and 1; got:\n%s", out)
			}
			for _, tab := range tables {
				if !slices.Equal(tab.labels, []string{`"C"`, `"i"`, `"t"`, `"i"`, `"z"`, `"e"`, `"n"`}) {
					t.Fatalf("%s: labels %v", tab.title, tab.labels)
				}
				future := 0.0
				for i, row := range tab.rows {
					sum := 0.0
					for j, w := range row {
						sum += w
						if j > i {
							future += w
						}
					}
					if math.Abs(sum-1) > 0.005 { // printed with 3 decimals
						t.Errorf("%s: row %d sums to %v", tab.title, i, sum)
					}
				}
				if tc.causal && future != 0 {
					t.Errorf("%s: a causal model gives %v of weight to later positions", tab.title, future)
				}
				if !tc.causal && future < 0.1 {
					t.Errorf("%s: an unmasked model gives only %v of weight to later positions", tab.title, future)
				}
			}
		})
	}
	// A text longer than the context keeps its last 8 tokens.
	tables := parseTables(t, ok(t, t.TempDir(), "attention", causalModel, "--text", "First Citizen"))
	if want := []string{`" "`, `"C"`, `"i"`, `"t"`, `"i"`, `"z"`, `"e"`, `"n"`}; !slices.Equal(tables[0].labels, want) {
		t.Errorf("labels %v, want the last 8 characters %v", tables[0].labels, want)
	}
}

type table struct {
	title  string
	labels []string
	rows   [][]float64
}

// parseTables reads the output of gptg attention --format text: after
// each "block B, head H" title, one or more bands of columns ("columns
// a–b of n" before each when there are several), each a line of labels and
// a row per label.
func parseTables(t *testing.T, out string) []table {
	t.Helper()
	var tables []table
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "block ") {
			continue
		}
		tab := table{title: lines[i]}
		for i++; i < len(lines) && lines[i] != ""; {
			if strings.HasPrefix(lines[i], "columns ") {
				i++
			}
			band := quotedPrefixes(t, lines[i])
			tab.labels = append(tab.labels, band...)
			for r := 0; ; r++ {
				i++
				if i >= len(lines) || lines[i] == "" || strings.HasPrefix(lines[i], "columns ") {
					break
				}
				// The row's label is quoted and may hold a space; the
				// weights are the last fields.
				f := strings.Fields(lines[i])
				if r == len(tab.rows) {
					tab.rows = append(tab.rows, nil)
				}
				for _, s := range f[len(f)-len(band):] {
					w, err := strconv.ParseFloat(s, 64)
					if err != nil {
						t.Fatalf("row %q: %v", lines[i], err)
					}
					tab.rows[r] = append(tab.rows[r], w)
				}
			}
		}
		if len(tab.rows) != len(tab.labels) {
			t.Fatalf("%s: %d rows for %d columns", tab.title, len(tab.rows), len(tab.labels))
		}
		tables = append(tables, tab)
	}
	return tables
}

// TestAttentionTextFits80Columns: on a pipe (or an 80-column terminal) no
// line of the tables reaches the 80th column, however long the text; the
// columns go into bands and read back whole.
func TestAttentionTextFits80Columns(t *testing.T) {
	out := ok(t, t.TempDir(), "attention", causalModel, "--text", "Citizen")
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n >= 80 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	var b strings.Builder
	labels := []string{`"a"`, `"b"`, `"c"`, `"d"`, `"e"`, `"f"`, `"g"`, `"h"`, `"i"`, `"j"`, `"k"`, `"l"`, `"m"`, `"n"`, `"o"`, `"p"`}
	n := len(labels)
	m := sample.Matrix{N: n, W: make([]float64, n*n)}
	for i := range n {
		for j := 0; j <= i; j++ {
			m.W[i*n+j] = 1 / float64(i+1)
		}
	}
	printMatrix(&b, labels, labels, m, 80)
	for _, line := range strings.Split(b.String(), "\n") {
		if n := utf8.RuneCountInString(line); n >= 80 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	tabs := parseTables(t, "block 0, head 0\n"+b.String())
	if len(tabs) != 1 || !slices.Equal(tabs[0].labels, labels) {
		t.Fatalf("read back %+v from:\n%s", tabs, b.String())
	}
	for i, row := range tabs[0].rows {
		for j, w := range row {
			if math.Abs(w-m.At(i, j)) > 0.0005+1e-12 { // printed with 3 decimals
				t.Errorf("(%d, %d): %v, want %v", i, j, w, m.At(i, j))
			}
		}
	}
	if !strings.Contains(b.String(), "columns 13–16 of 16") {
		t.Errorf("16 columns of 6 at 80: want a second band from column 13:\n%s", b.String())
	}
}

// TestAttentionPNG checks that the image is a PNG laid out as blocks ×
// heads (one block of two heads side by side: wider than high), that it
// shows a picture rather than a blank canvas, and that nothing but the
// image is written.
func TestAttentionPNG(t *testing.T) {
	dir := t.TempDir()
	out := ok(t, dir, "attention", causalModel, "--text", "First Citizen", "--out", "heads.png")
	if !strings.Contains(out, "wrote heads.png") {
		t.Errorf("stdout: %q", out)
	}
	img := readPNG(t, filepath.Join(dir, "heads.png"))
	b := img.Bounds()
	if b.Dx() < 400 || b.Dy() < 200 || b.Dx() < 3*b.Dy()/2 {
		t.Errorf("image is %dx%d, want two heatmaps side by side", b.Dx(), b.Dy())
	}
	colors := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			colors[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colors) < 50 {
		t.Errorf("image has only %d colours: no heatmap drawn?", len(colors))
	}
	if files := listFiles(t, dir); !slices.Equal(files, []string{"heads.png"}) {
		t.Errorf("files written: %v", files)
	}

	// --format png alone writes att.png; --out alone means png.
	dir = t.TempDir()
	ok(t, dir, "attention", causalModel, "--text", "First", "--format", "png")
	readPNG(t, filepath.Join(dir, "att.png"))
	if files := listFiles(t, dir); !slices.Equal(files, []string{"att.png"}) {
		t.Errorf("files written: %v, want att.png", files)
	}
}

// quotedPrefixes splits a table's header into its Go-quoted labels.
func quotedPrefixes(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	for line = strings.TrimLeft(line, " "); line != ""; line = strings.TrimLeft(line, " ") {
		q, err := strconv.QuotedPrefix(line)
		if err != nil {
			t.Fatalf("header %q: %v", line, err)
		}
		out = append(out, q)
		line = line[len(q):]
	}
	return out
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// TestInspectAndEval runs the two read-only commands on the tiny models:
// the prefix-only loss of the causal model equals its plain test loss,
// while the unmasked model's differs.
func TestInspectAndEval(t *testing.T) {
	dir := t.TempDir()
	out := ok(t, dir, "inspect", causalModel)
	for _, want := range []string{"format: gptg/1", "vocab: 55 char tokens", "tok.weight", "[55, 8]"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	losses := func(model string) (plain, prefix float64) {
		out := ok(t, dir, "eval", model, "--data", testmodel.TinyText(), "--prefix-only")
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			switch {
			case strings.HasPrefix(line, "test loss "):
				plain, _ = strconv.ParseFloat(f[2], 64)
			case strings.HasPrefix(line, "prefix-only test loss "):
				prefix, _ = strconv.ParseFloat(f[3], 64)
			}
		}
		if plain == 0 || prefix == 0 {
			t.Fatalf("eval output without both losses:\n%s", out)
		}
		return plain, prefix
	}
	if plain, prefix := losses(causalModel); plain != prefix {
		t.Errorf("causal model: test loss %v, prefix-only %v; they must agree", plain, prefix)
	}
	// After 30 steps the unmasked model has barely learnt to read ahead;
	// how much that helps it is the eval package's test. Here the two
	// numbers must merely come from different computations.
	if plain, prefix := losses(unmaskedModel); plain == prefix {
		t.Errorf("unmasked model: test loss and prefix-only loss are both %v", plain)
	}
}
