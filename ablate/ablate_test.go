package ablate

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/gptgbin"
	"github.com/gptg/gptg/train"
)

// TestMain removes the CLI gptgbin built for the package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	gptgbin.Remove()
	os.Exit(code)
}

func writeConfig(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name+".toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tinyBase writes a config that trains in well under a second.
func tinyBase(t *testing.T, dir string) string {
	data, err := filepath.Abs("../testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, dir, "base", `
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
}

// TestAblation runs two working configs (one extending the other) at two
// seeds each and one whose data file is missing: the failures are listed,
// the others finish; the second call reuses the finished runs; --force
// retrains. The progress ticker runs every millisecond, so that `go test
// -race` sees it read the results while the workers write them.
func TestAblation(t *testing.T) {
	exe := gptgbin.Path(t)
	cfgDir, out := t.TempDir(), filepath.Join(t.TempDir(), "abl")
	base := tinyBase(t, cfgDir)
	heads := writeConfig(t, cfgDir, "heads", "extends = \"base.toml\"\n[model]\nheads = 2\nmask = false\n[train]\nmin_lr = 3e-4\n")
	broken := writeConfig(t, cfgDir, "broken", "extends = \"base.toml\"\n[data]\npath = \"/nonexistent/corpus.txt\"\n")
	specs, err := Plan([]string{base, heads, broken}, []int64{1, 2}, out)
	// Variant by variant, as the checks below read them.
	specs = []Spec{specs[0], specs[3], specs[1], specs[4], specs[2], specs[5]}
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	opts := Options{Out: out, Jobs: 2, Base: base, Exe: exe, Log: &log, SamplePrompt: "ROMEO:", ProgressEvery: time.Millisecond}
	results, err := Run(context.Background(), specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 6 {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results[:4] {
		if r.Err != nil || r.Status != Finished {
			t.Fatalf("%s seed %d: %v %v", r.Variant, r.Seed, r.Status, r.Err)
		}
		if r.Steps != 80 || r.TestLoss <= 0 || r.TrainLoss <= 0 || r.PrefixLoss <= 0 || r.Params == 0 || !strings.HasPrefix(r.Sample, "ROMEO:") {
			t.Errorf("%s: incomplete result %+v", r.Variant, r)
		}
	}
	// Two seeds train two different models.
	if results[0].TestLoss == results[1].TestLoss {
		t.Errorf("seeds 1 and 2 gave the same test loss %v", results[0].TestLoss)
	}
	if got := strings.Join(results[2].Differs, " "); got != "heads=2 mask=false train.min_lr=0.0003" {
		t.Errorf("differs = %q", got)
	}
	rows := Rows(results, "")
	if len(rows) != 3 || !rows[0].Baseline || rows[1].Test.N != 2 || rows[1].TestDiff.N != 2 || !rows[1].TestDiff.HasInterval() {
		t.Fatalf("rows: %+v", rows)
	}
	if !rows[0].PrefixIsPlain || rows[1].PrefixIsPlain {
		t.Errorf("prefix-only: causal %v, unmasked %v", rows[0].PrefixIsPlain, rows[1].PrefixIsPlain)
	}
	// The unmasked model reads the future: its honest loss is worse.
	if !(rows[1].Prefix.Mean > rows[1].Test.Mean) {
		t.Errorf("unmasked model: prefix-only %v not above test loss %v", rows[1].Prefix.Mean, rows[1].Test.Mean)
	}
	// The row's difference is the mean of the per-seed differences.
	wantDiff := (results[2].TestLoss - results[0].TestLoss + results[3].TestLoss - results[1].TestLoss) / 2
	if math.Abs(rows[1].TestDiff.Mean-wantDiff) > 1e-12 {
		t.Errorf("paired difference %v, want %v", rows[1].TestDiff.Mean, wantDiff)
	}
	if len(rows[2].FailedRuns) != 2 || !strings.Contains(rows[2].FailedRuns[0].Err.Error(), "/nonexistent/corpus.txt") {
		t.Errorf("broken config: %+v", rows[2].FailedRuns)
	}
	md, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| base | ", "| 2/2 |", "| heads | heads=2 mask=false train.min_lr=0.0003 | 2/2 |", " ± ", "baseline",
		"| broken |", "| 0/2 |", "Failed runs:", "broken seed 2: ", "/nonexistent/corpus.txt"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(out, "summary.csv"))
	records, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil || len(records) != 4 || records[1][0] != "base" || records[2][2] != "2" || records[2][13] != "2" || records[3][len(csvHeader)-2] == "" {
		t.Errorf("summary.csv: %v, %d records: %q", err, len(records), records)
	}
	raw, _ = os.ReadFile(filepath.Join(out, "runs.csv"))
	if records, err := csv.NewReader(bytes.NewReader(raw)).ReadAll(); err != nil || len(records) != 7 || records[6][3] != "failed" {
		t.Errorf("runs.csv: %v %q", err, records)
	}
	png, _ := os.ReadFile(filepath.Join(out, "loss.png"))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Error("loss.png is not a PNG")
	}

	// Skip-if-done: the finished runs are reused, their model untouched,
	// their measurements taken from the cache.
	model := filepath.Join(out, "base", "seed-1", train.ModelFile)
	before, _ := os.Stat(model)
	results, err = Run(context.Background(), specs[:4], opts)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(model)
	for _, r := range results {
		if !r.Reused || r.Status != Finished || r.TestLoss <= 0 || r.PrefixLoss <= 0 || r.Sample == "" {
			t.Errorf("second run: %s seed %d reused %v status %v", r.Variant, r.Seed, r.Reused, r.Status)
		}
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("a finished model was rewritten")
	}
	// Another config in the same folder is refused, not passed off as done.
	opts.Sets = []string{"train.max_steps=90"}
	results, _ = Run(context.Background(), specs[:1], opts)
	if results[0].Err == nil || !strings.Contains(results[0].Err.Error(), "another config") {
		t.Errorf("changed config: %v", results[0].Err)
	}
	// --force retrains it.
	opts.Force = true
	results, err = Run(context.Background(), specs[:1], opts)
	if err != nil || results[0].Err != nil || results[0].Reused || results[0].Steps != 90 {
		t.Errorf("--force: %v %+v", err, results[0])
	}
}

// TestNotStarted: runs an interrupt keeps from starting are "not started",
// never failures with "context canceled"; Collect trains nothing.
func TestNotStarted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "abl")
	specs, err := Plan([]string{tinyBase(t, t.TempDir())}, []int64{1, 2}, out)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var log bytes.Buffer
	opts := Options{Out: out, Exe: "/nonexistent/gptg", Log: &log, ProgressEvery: time.Hour}
	results, err := Run(ctx, specs, opts)
	if err != context.Canceled {
		t.Errorf("err = %v", err)
	}
	for _, r := range results {
		if r.Status != NotStarted || r.Err != nil {
			t.Errorf("%s seed %d: %v %v", r.Variant, r.Seed, r.Status, r.Err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if strings.Contains(string(md)+log.String(), "canceled") || !strings.Contains(string(md), "base seed 2: not started") {
		t.Errorf("summary:\n%s\nlog:\n%s", md, log.String())
	}
	results, err = Collect(context.Background(), specs, opts)
	if err != nil || results[0].Status != NotStarted {
		t.Errorf("collect: %v %+v", err, results[0])
	}
	if _, err := os.Stat(specs[0].Dir); err == nil {
		t.Error("collect created a run folder")
	}
}

// TestFailedRunKeepsItsErrorOutput: a run that fails with several lines
// on stderr (a panic's trace begins with its cause, far from the last
// line) gives its last line as the error, and keeps every line in the log
// the error names; a later success removes that log.
func TestFailedRunKeepsItsErrorOutput(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "fake-gptg")
	script := "#!/bin/sh\n[ -e " + filepath.Join(dir, "ok") + " ] && exit 0\n" +
		"echo 'panic: the cause' >&2\necho 'goroutine 1 [running]:' >&2\necho 'main.main()' >&2\necho 'gptg train: the last line' >&2\nexit 2\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	log := stderrLog(filepath.Join(dir, "out", "cfg", "seed-1"), "train")
	err := gptg(context.Background(), exe, nil, log, "train")
	if err == nil || !strings.HasPrefix(err.Error(), "gptg train: the last line") || !strings.Contains(err.Error(), log) {
		t.Fatalf("error %v: want the last line and the log's path %s", err, log)
	}
	kept, rerr := os.ReadFile(log)
	if rerr != nil || !strings.Contains(string(kept), "panic: the cause") || !strings.Contains(string(kept), "main.main()") {
		t.Fatalf("the log holds %q (%v): want the whole error output", kept, rerr)
	}
	os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644)
	if err := gptg(context.Background(), exe, nil, log, "train"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(log); err == nil {
		t.Error("the log of the earlier failure is still there after a success")
	}
}

// TestRunFinishedByAnotherRunner: a second runner (two `gptg sweep run`
// at once, a requeued task) finishes the run between this one's look at
// the folder and its training's start; the training then refuses the
// finished folder. The run is finished, not failed (no failure marker for
// a finished run, exit 0). The wrapper
// binary plays the other runner: it trains the run to the end before the
// training that bringUp asked for.
func TestRunFinishedByAnotherRunner(t *testing.T) {
	real := gptgbin.Path(t)
	exe := filepath.Join(t.TempDir(), "gptg-race")
	script := "#!/bin/sh\nif [ \"$1\" = train ]; then '" + real + "' \"$@\" >/dev/null 2>&1; fi\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgDir, out := t.TempDir(), filepath.Join(t.TempDir(), "abl")
	specs, err := Plan([]string{tinyBase(t, cfgDir)}, nil, out)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	opts := Options{Out: out, Exe: exe, Log: io.Discard, ProgressEvery: time.Hour,
		Event: func(s Spec, e string) { events = append(events, e) }}
	results, err := Run(context.Background(), specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Status != Finished || r.Err != nil || r.Steps != 80 {
		t.Errorf("status %v, error %v, steps %d; events %q", r.Status, r.Err, r.Steps, events)
	}
	if len(events) != 2 || events[1] != "finished by another process" {
		t.Errorf("events %q", events)
	}
}

// TestKilledChildIsNamed: a run killed by SIGKILL it did not get from us
// (the kernel's OOM killer under a cgroup's limit) is
// reported as killed, with the likely cause — not as "signal: killed" or
// as the last progress line it printed.
func TestKilledChildIsNamed(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.stderr.log")
	err := gptg(context.Background(), "/bin/sh", io.Discard, log, "-c", "echo step 10/100 >&2; kill -9 $$")
	if err == nil || !strings.Contains(err.Error(), "killed (SIGKILL)") || !strings.Contains(err.Error(), "out-of-memory") {
		t.Fatalf("err %v; want the kill named with its likely cause", err)
	}
	err = gptg(context.Background(), "/bin/sh", io.Discard, log, "-c", "echo 'gptg train: bad thing' >&2; exit 1")
	if err == nil || err.Error() != "gptg train: bad thing" {
		t.Fatalf("err %v; want gptg's own last line", err)
	}
}
