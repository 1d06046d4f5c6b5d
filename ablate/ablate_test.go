package ablate

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/train"
)

// gptgBinary builds the CLI once; ablations run it as a subprocess.
func gptgBinary(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "gptg")
	cmd := exec.Command("go", "build", "-o", exe, "../cmd/gptg")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building gptg: %v\n%s", err, out)
	}
	return exe
}

func writeConfig(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name+".toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAblation runs two working configs (one extending the other) and one
// whose data file is missing: the failure is a row with its error, the
// others finish; the second call reuses the finished runs; --force retrains.
func TestAblation(t *testing.T) {
	exe := gptgBinary(t)
	cfgDir, out := t.TempDir(), filepath.Join(t.TempDir(), "abl")
	data, err := filepath.Abs("../testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	base := writeConfig(t, cfgDir, "base", `
[data]
path = "`+data+`"
stride = 4
[model]
context = 8
embedding = 8
blocks = 1
dtype = "float64"
[train]
batch = 2
max_steps = 80
lr = 0.01
log_every = 5
eval_every = 40
`)
	heads := writeConfig(t, cfgDir, "heads", "extends = \"base.toml\"\n[model]\nheads = 2\nmask = false\n")
	broken := writeConfig(t, cfgDir, "broken", "extends = \"base.toml\"\n[data]\npath = \"/nonexistent/corpus.txt\"\n")
	var log bytes.Buffer
	opts := Options{Out: out, Jobs: 2, Base: base, Exe: exe, Log: &log, SamplePrompt: "ROMEO:", ProgressEvery: time.Hour}
	rows, err := Run(context.Background(), []string{base, heads, broken}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows[:2] {
		if r.Err != nil {
			t.Fatalf("%s failed: %v", r.Name, r.Err)
		}
		if r.Steps != 80 || r.TestLoss <= 0 || r.TrainLoss <= 0 || r.PrefixLoss <= 0 || r.Params == 0 || !strings.HasPrefix(r.Sample, "ROMEO:") {
			t.Errorf("%s: incomplete row %+v", r.Name, r)
		}
	}
	if got := strings.Join(rows[1].Differs, " "); got != "heads=2 mask=false" {
		t.Errorf("differs = %q", got)
	}
	if rows[0].PrefixIsPlain != true || rows[1].PrefixIsPlain {
		t.Errorf("prefix-only: causal %v, unmasked %v", rows[0].PrefixIsPlain, rows[1].PrefixIsPlain)
	}
	// The unmasked model reads the future: its honest loss is worse.
	if !(rows[1].PrefixLoss > rows[1].TestLoss) {
		t.Errorf("unmasked model: prefix-only %v not above test loss %v", rows[1].PrefixLoss, rows[1].TestLoss)
	}
	if rows[2].Err == nil || !strings.Contains(rows[2].Err.Error(), "/nonexistent/corpus.txt") {
		t.Errorf("broken config: %v", rows[2].Err)
	}
	md, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| base |", "| heads | heads=2 mask=false |", "| broken |", "Failed runs:", "/nonexistent/corpus.txt"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(out, "summary.csv"))
	records, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil || len(records) != 4 || records[1][0] != "base" || records[3][len(header)-1] == "" {
		t.Errorf("summary.csv: %v, %d records: %q", err, len(records), records)
	}
	png, _ := os.ReadFile(filepath.Join(out, "loss.png"))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Error("loss.png is not a PNG")
	}

	// Skip-if-done: the finished runs are reused, their model untouched.
	model := filepath.Join(out, "base", train.ModelFile)
	before, _ := os.Stat(model)
	rows, err = Run(context.Background(), []string{base, heads}, opts)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(model)
	if !rows[0].Reused || !rows[1].Reused || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("second run: reused %v %v, model rewritten %v", rows[0].Reused, rows[1].Reused, !after.ModTime().Equal(before.ModTime()))
	}
	if rows[0].TestLoss <= 0 {
		t.Error("a reused run still reports its losses")
	}
	// Another config in the same folder is refused, not passed off as done.
	opts.Sets = []string{"train.max_steps=90"}
	rows, _ = Run(context.Background(), []string{base}, opts)
	if rows[0].Err == nil || !strings.Contains(rows[0].Err.Error(), "another config") {
		t.Errorf("changed config: %v", rows[0].Err)
	}
	// --force retrains it.
	opts.Force = true
	rows, err = Run(context.Background(), []string{base}, opts)
	if err != nil || rows[0].Err != nil || rows[0].Reused || rows[0].Steps != 90 {
		t.Errorf("--force: %v %+v", err, rows[0])
	}
}
