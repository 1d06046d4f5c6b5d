package main

// What a new user runs into: run folders in place of model files, prompts
// checked before anything is printed, flags in other tools' styles, the
// version, pictures in the format their name says.

import (
	"bytes"
	"encoding/xml"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
)

// TestRunFolderAsModel: every command that reads a model takes the run
// folder too, and eval finds the corpus in the run's config.toml.
func TestRunFolderAsModel(t *testing.T) {
	run := filepath.Dir(causalModel)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"sample", "--prompt", "First", "--tokens", "20", "--seed", "3"},
		{"inspect"},
		{"attention", "--text", "First Citizen"},
		{"eval", "--data", testmodel.TinyText(), "--prefix-only"},
	} {
		byFile := ok(t, dir, append([]string{args[0], causalModel}, args[1:]...)...)
		byFolder := ok(t, dir, append([]string{args[0], run}, args[1:]...)...)
		if byFile != byFolder {
			t.Errorf("gptg %s: the run folder gave\n%s\nthe model file\n%s", args[0], byFolder, byFile)
		}
	}
	// Without --data, the run's own corpus and split: the loss of the
	// explicit call, and the same prefix-only loss.
	withData := ok(t, dir, "eval", run, "--data", testmodel.TinyText(), "--prefix-only")
	if got := ok(t, dir, "eval", run, "--prefix-only"); got != withData {
		t.Errorf("eval without --data:\n%s\nwith the run's corpus:\n%s", got, withData)
	}
}

// TestSampleIgnoresRunConfigWhenEveryFlagIsGiven: the config.toml beside
// the model is read only for defaults; with every one given, a broken one
// does not stop sampling.
func TestSampleIgnoresRunConfigWhenEveryFlagIsGiven(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, causalModel, filepath.Join(dir, "model.safetensors"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("this is not TOML ["), 0o644); err != nil {
		t.Fatal(err)
	}
	out := ok(t, dir, "sample", ".", "--prompt", "First", "--tokens", "5", "--temperature", "0", "--top-k", "0", "--top-p", "0")
	if !strings.HasPrefix(out, "First") || len([]rune(out)) != len("First")+5+1 {
		t.Errorf("stdout %q, want First and 5 tokens", out)
	}
	r := gptg(t, dir, "sample", ".", "--prompt", "First")
	if r.code != 2 || !strings.Contains(r.stderr, "reading config.toml for the defaults of the flags not given") {
		t.Errorf("with defaults needed: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestBadPromptPrintsNothing: the prompt is checked before it is echoed.
func TestBadPromptPrintsNothing(t *testing.T) {
	for _, prompt := range []string{"Good King Xerxes", "Fir\xffst", ""} {
		r := gptg(t, t.TempDir(), "sample", causalModel, "--prompt", prompt, "--tokens", "3")
		if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("prompt %q: exit %d, stdout %q, stderr %q; want exit 2 (a wrong argument), nothing on stdout, one line", prompt, r.code, r.stdout, r.stderr)
		}
	}
	// A word model's prompt is echoed as given: the same check applies.
	r := gptg(t, t.TempDir(), "sample", wordModel, "--prompt", "the Cat", "--tokens", "3")
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, `"Cat" is "cat"`) {
		t.Errorf("word model: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestInspectVocab lists the vocabulary in id order, quoted, and every
// token listed encodes: what a prompt may contain.
func TestInspectVocab(t *testing.T) {
	out := ok(t, t.TempDir(), "inspect", filepath.Dir(wordModel), "--vocab")
	var words []string
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		id, tok, found := strings.Cut(line, "\t")
		w, err := strconv.Unquote(tok)
		if !found || err != nil || id != strconv.Itoa(i) {
			t.Fatalf("line %d: %q, want id<TAB>quoted token", i, line)
		}
		words = append(words, w)
	}
	if !slices.Contains(words, "cat") || !slices.Contains(words, ".") || !slices.IsSorted(words) {
		t.Errorf("vocabulary %q: want the toy grammar's words, sorted", words)
	}
	prompt := strings.Join(words, " ")
	if r := gptg(t, t.TempDir(), "sample", wordModel, "--prompt", prompt, "--tokens", "1"); r.code != 0 {
		t.Errorf("a prompt of every listed word: exit %d, %s", r.code, r.stderr)
	}
}

// TestSetFlagStyles: --section.key=value and --section.key value are
// --set section.key=value.
func TestSetFlagStyles(t *testing.T) {
	cfg, err := filepath.Abs("../../configs/shakespeare.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	want := ok(t, dir, "graph", cfg, "--set", "model.vocab=65", "--set", "model.heads=4", "--set", "model.blocks=1")
	for _, args := range [][]string{
		{"--model.vocab=65", "--model.heads=4", "--model.blocks=1"},
		{"--model.vocab", "65", "--model.heads", "4", "-model.blocks=1"},
		{"--set=model.vocab=65", "--model.heads=4", "--set", "model.blocks=1"},
	} {
		if got := ok(t, dir, append([]string{"graph", cfg}, args...)...); got != want {
			t.Errorf("gptg graph %s:\n%s\nwant\n%s", strings.Join(args, " "), got, want)
		}
	}
	if !strings.Contains(want, "blocks.0.att.q.weight") || strings.Contains(want, "blocks.1.") {
		t.Errorf("the overrides did not apply:\n%s", want)
	}
}

// TestVersion: gptg version and gptg --version print what the Go
// toolchain recorded in the binary (go version -m shows the same).
func TestVersion(t *testing.T) {
	out := ok(t, t.TempDir(), "version")
	if alt := ok(t, t.TempDir(), "--version"); alt != out {
		t.Errorf("--version %q, version %q", alt, out)
	}
	info, err := exec.Command("go", "version", "-m", gptgBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var modVersion, revision string
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod" && f[1] == "github.com/gptg/gptg":
			modVersion = f[2]
		case len(f) >= 2 && strings.HasPrefix(f[1], "vcs.revision="):
			revision = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	if modVersion == "" || !strings.HasPrefix(out, "gptg "+modVersion+", ") {
		t.Errorf("version %q, want it to start with the module version %q\n%s", out, modVersion, info)
	}
	if revision != "" && !strings.Contains(out, "revision "+revision) {
		t.Errorf("version %q lacks the VCS revision %s", out, revision)
	}
	if revision == "" && !strings.Contains(out, "revision unknown") {
		t.Errorf("version %q: the binary has no VCS revision and must say so", out)
	}
}

// TestVersionLine: the line names the revision, and says when the work
// tree had changes or when no revision was recorded.
func TestVersionLine(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}
	if got, want := versionLine(info), "v1.2.3, revision unknown (built without VCS information), go1.26.8"; got != want {
		t.Errorf("without VCS: %q, want %q", got, want)
	}
	info.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-11-30T04:51:28Z"}}
	if got, want := versionLine(info), "v1.2.3, revision abc123+dirty (2026-11-30T04:51:28Z), go1.26.8"; got != want {
		t.Errorf("with VCS: %q, want %q", got, want)
	}
}

// TestAttentionSVG: a .svg name gets SVG (an XML document whose root is
// svg, with the title naming the model and the text), never PNG bytes;
// --format svg alone writes att.svg.
func TestAttentionSVG(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, causalModel, filepath.Join(dir, "m.safetensors"))
	ok(t, dir, "attention", "m.safetensors", "--text", "Citizen", "--out", "heads.svg")
	b, err := os.ReadFile(filepath.Join(dir, "heads.svg"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(b, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("heads.svg is not SVG (%v, root %q): starts %q", err, doc.XMLName.Local, b[:min(len(b), 40)])
	}
	if title := "attention of m.safetensors over &#34;Citizen&#34;"; !bytes.Contains(b, []byte(title)) {
		t.Errorf("heads.svg lacks the title %s: %s", title, regexp.MustCompile("attention of[^<]*").Find(b))
	}
	if files := listFiles(t, dir); !slices.Equal(files, []string{"heads.svg", "m.safetensors"}) {
		t.Errorf("files: %v", files)
	}
	dir = t.TempDir()
	ok(t, dir, "attention", causalModel, "--text", "First", "--format", "svg")
	if files := listFiles(t, dir); !slices.Equal(files, []string{"att.svg"}) {
		t.Errorf("files written: %v, want att.svg", files)
	}
}

// TestCommandsWriteToRunsWriters calls run in this process: what a
// command prints must land in the writers run was given, and no file of
// the command writes to os.Stdout or os.Stderr, or prints with fmt.Print*,
// itself (only main hands run the process's own).
func TestCommandsWriteToRunsWriters(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"inspect", causalModel}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "format: gptg/1") {
		t.Errorf("inspect: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "gptg ") {
		t.Errorf("version: exit %d, stdout %q", code, stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"sample", "--oops"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-oops") {
		t.Errorf("a bad flag: exit %d, stderr %q", code, stderr.String())
	}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if fn, ok := n.(*ast.FuncDecl); ok && fn.Name.Name == "main" && fn.Recv == nil {
				return false // main passes os.Stdout and os.Stderr to run
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if (pkg.Name == "os" && (sel.Sel.Name == "Stdout" || sel.Sel.Name == "Stderr")) ||
				(pkg.Name == "fmt" && strings.HasPrefix(sel.Sel.Name, "Print")) {
				t.Errorf("%s: %s.%s: write to the writers run passes instead", fset.Position(sel.Pos()), pkg.Name, sel.Sel.Name)
			}
			return true
		})
	}
}
