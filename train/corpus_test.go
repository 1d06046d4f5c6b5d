package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus/builtin"
)

// project makes a folder laid out as a user's project: configs/c.toml
// (tinyConfig, data.path = "data/t.txt" relative to the project, the run
// in runs/r) and data/t.txt holding text. It returns the project's path.
func project(t *testing.T, text []byte, steps int) string {
	t.Helper()
	proj := filepath.Join(t.TempDir(), "proj")
	c := tinyConfig(t, "runs/r")
	c.Data.Path = "data/t.txt"
	c.Train.MaxSteps, c.Train.EvalEvery, c.Train.LogEvery = steps, 0, steps
	toml, err := c.TOML()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"configs/c.toml": toml, "data/t.txt": text} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(proj, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proj, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proj
}

// trainIn runs `gptg train configs/c.toml` from the project folder.
func trainIn(t *testing.T, proj string) {
	t.Helper()
	t.Chdir(proj)
	cfg, err := config.Load("configs/c.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestRunFolderTravels: a run records its corpus by content and by place;
// after the project folder moved, a resume started from elsewhere finds the
// corpus through the run folder, and refuses it once it is edited, naming
// both digests.
func TestRunFolderTravels(t *testing.T) {
	text, err := os.ReadFile("../testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	proj := project(t, text, 10)
	trainIn(t, proj)
	run := filepath.Join(proj, "runs", "r")
	saved, err := os.ReadFile(filepath.Join(run, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`sha256 = "` + sumOf(text) + `"`, "size = " + strconv.Itoa(len(text)), `path = "data/t.txt"`,
		dataFilePrefix + `"` + filepath.Join(proj, "data", "t.txt") + `"`,
		fromRunPrefix + `"../../data/t.txt"`,
		madeFromPrefix + `"` + filepath.Join(proj, "configs", "c.toml") + `"`,
	} {
		if !strings.Contains(string(saved), want) {
			t.Errorf("config.toml lacks %q:\n%s", want, saved)
		}
	}

	// The project moves; gptg runs from an unrelated folder.
	moved := filepath.Join(filepath.Dir(proj), "moved")
	if err := os.Rename(proj, moved); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	run = filepath.Join(moved, "runs", "r")
	cfg, err := config.Load(filepath.Join(run, ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := FindCorpus(run, cfg); err != nil || got != filepath.Join(run, "../../data/t.txt") {
		t.Errorf("FindCorpus = %q, %v; want the file through the run folder", got, err)
	}
	res, err := Resume(context.Background(), run, []string{"train.max_steps=20"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 20 {
		t.Errorf("resumed to step %d, want 20", res.Steps)
	}
	// The rewritten config.toml keeps the record, with the new place.
	saved, _ = os.ReadFile(filepath.Join(run, ConfigFile))
	if o := readOrigin(saved); o.File != filepath.Join(moved, "data", "t.txt") || o.FromRun != "../../data/t.txt" ||
		o.MadeFrom != filepath.Join(proj, "configs", "c.toml") {
		t.Errorf("after the resume, config.toml records %+v", o)
	}

	// An edited corpus is refused, by resume and by FindCorpus (eval).
	edited := append([]byte("Edited. "), text...)
	if err := os.WriteFile(filepath.Join(moved, "data", "t.txt"), edited, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Resume(context.Background(), run, []string{"train.max_steps=30"}, Options{})
	want := "is not the corpus run " + run + " was trained on: it has sha256 " + sumOf(edited) + ", " + strconv.Itoa(len(edited)) +
		" bytes, the run's has sha256 " + sumOf(text) + ", " + strconv.Itoa(len(text)) + " bytes"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("resume on an edited corpus: %v\nwant one line with %q", err, want)
	}
	if _, err := FindCorpus(run, cfg); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("FindCorpus on an edited corpus: %v", err)
	}
	if _, err := os.Stat(filepath.Join(run, CheckpointFile)); err != nil {
		t.Error(err)
	}

	// Gone altogether: not found, with where it looked.
	if err := os.Remove(filepath.Join(moved, "data", "t.txt")); err != nil {
		t.Fatal(err)
	}
	_, err = FindCorpus(run, cfg)
	if err == nil || !strings.Contains(err.Error(), "the corpus of run "+run+" (sha256 "+sumOf(text)) ||
		!strings.Contains(err.Error(), "is not found: it is not at data/t.txt, ") {
		t.Errorf("FindCorpus without the corpus: %v", err)
	}
}

// A run trained on a file copy of a built-in corpus finds the built-in
// copy when the file is gone; one trained on the built-in corpus needs no
// file; a run from before the record takes the file at data.path.
func TestFindCorpusFallbacks(t *testing.T) {
	toy, _ := builtin.Lookup("toy")
	dir := t.TempDir()
	t.Chdir(dir)
	d := config.Data{Path: "data/toy.txt", SHA256: toy.SHA256, Size: toy.Size}
	if got, err := findCorpus("runs/r", d, corpusOrigin{}); err != nil || got != "builtin:toy" {
		t.Errorf("a missing copy of the toy corpus: %q, %v; want builtin:toy", got, err)
	}
	d = config.Data{Path: "builtin:toy", SHA256: toy.SHA256, Size: toy.Size}
	if got, err := findCorpus("runs/r", d, corpusOrigin{}); err != nil || got != "builtin:toy" {
		t.Errorf("the built-in toy corpus: %q, %v", got, err)
	}
	d.SHA256 = strings.Repeat("a", 64)
	if _, err := findCorpus("runs/r", d, corpusOrigin{}); err == nil || !strings.Contains(err.Error(),
		"builtin:toy is not the corpus run runs/r was trained on: it has sha256 "+toy.SHA256) {
		t.Errorf("a built-in corpus of other content: %v", err)
	}
	if err := os.WriteFile("old.txt", []byte("some text"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := findCorpus("runs/r", config.Data{Path: "old.txt"}, corpusOrigin{}); err != nil || got != "old.txt" {
		t.Errorf("a run without a record: %q, %v", got, err)
	}
	// Missing, but data.url can fetch it: loading downloads it.
	if got, err := findCorpus("runs/r", config.Data{Path: "gone.txt", URL: "https://example.com/x", Size: 5}, corpusOrigin{}); err != nil || got != "gone.txt" {
		t.Errorf("a missing file with a url: %q, %v", got, err)
	}
	// The size alone tells a file apart; the message still names its digest.
	if _, err := findCorpus("runs/r", config.Data{Path: "old.txt", SHA256: sumOf([]byte("other")), Size: 5}, corpusOrigin{}); err == nil ||
		!strings.Contains(err.Error(), "it has sha256 "+sumOf([]byte("some text"))+", 9 bytes") {
		t.Errorf("a file of another size: %v", err)
	}
}

// Any path survives config.toml's comment lines, newlines and quotes too.
func TestOriginRoundTrip(t *testing.T) {
	o := corpusOrigin{File: "/a b/\"c\"\n.txt", FromRun: "../x # y", MadeFrom: `C:\cfg.toml`}
	text := o.header() + "[data]\npath = \"x\"\n"
	if got := readOrigin([]byte(text)); got != o {
		t.Errorf("read back %+v, want %+v", got, o)
	}
	if _, err := config.Parse("config.toml", []byte(text)); err != nil {
		t.Errorf("the header breaks the TOML: %v", err)
	}
}

// TestOriginFrom: the origin lines' absolute paths under the base are
// shown relative to it, the rest as they are, and the text keeps its
// other lines and the data file line's remark.
func TestOriginFrom(t *testing.T) {
	base := filepath.Join(t.TempDir(), "project")
	o := corpusOrigin{File: filepath.Join(base, "data", "a b.txt"), FromRun: "../../data/a b.txt",
		ValFile: "/elsewhere/val.bin", MadeFrom: filepath.Join(base, "configs", "x.toml")}
	body := "[data]\npath = \"x\"\n# made from config: \"" + filepath.Join(base, "y.toml") + "\"\n"
	got := OriginFrom(o.header()+body, base)
	want := corpusOrigin{File: filepath.Join("data", "a b.txt"), FromRun: o.FromRun, ValFile: o.ValFile, MadeFrom: filepath.Join("configs", "x.toml")}
	if r := readOrigin([]byte(got)); r != want {
		t.Errorf("read back %+v, want %+v from:\n%s", r, want, got)
	}
	if !strings.HasSuffix(got, body) {
		t.Errorf("a line below the comments changed:\n%s", got)
	}
	if !strings.Contains(got, `"data/a b.txt" (where data.path led`) {
		t.Errorf("the data file line lost its remark:\n%s", got)
	}
	// A base that is the path's sibling, not its parent, leaves it absolute.
	if got := OriginFrom(o.header(), base+"2"); got != o.header() {
		t.Errorf("paths outside the base changed:\n%s", got)
	}
}
