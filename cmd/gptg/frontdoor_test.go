package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/ablate"
	"github.com/gptg/gptg/internal/testmodel"
)

// TestEvalUsesTheRunsBatch: a run trained at batch 3 is evaluated at batch
// 3, so gptg eval prints the test loss its training wrote.
func TestEvalUsesTheRunsBatch(t *testing.T) {
	c := testmodel.Config(filepath.Join(t.TempDir(), "run"), true, 10)
	c.Train.Batch = 3
	if _, err := testmodel.Train(c); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(c.Train.Out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var row struct {
		TestLoss float64 `json:"test_loss"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &row); err != nil {
		t.Fatal(err)
	}
	out := ok(t, t.TempDir(), "eval", c.Train.Out)
	if !strings.Contains(out, "batches of 3\n") {
		t.Errorf("eval of a batch-3 run:\n%s", out)
	}
	if want := "test loss " + strings.TrimRight(strings.TrimRight(formatLoss(row.TestLoss), "0"), "."); !strings.HasPrefix(out, want[:len("test loss ")+6]) {
		t.Errorf("eval printed %q, training wrote %v", out, row.TestLoss)
	}
}

func formatLoss(x float64) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// TestSampleNamesTheSeedFolders: an ablation's folder of one config holds
// a run per seed; sample given it names them, in seed order.
func TestSampleNamesTheSeedFolders(t *testing.T) {
	dir := t.TempDir()
	model, err := os.ReadFile(causalModel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"seed-10", "seed-2", "seed-1", "seed-3"} {
		if err := os.MkdirAll(filepath.Join(dir, "qkv", s), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "qkv", s, "model.safetensors"), model, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := gptg(t, dir, "sample", "qkv")
	want := "gptg sample: qkv holds 4 run folders, not a model: give one of them (qkv/seed-1, qkv/seed-2, qkv/seed-3, … and 1 more)"
	if r.code != 2 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("exit %d, %q\nwant exit 2, %q", r.code, r.stderr, want)
	}
	ok(t, dir, "sample", "qkv/seed-10", "--tokens", "5")
}

// TestDiffersComparesWithTheBaseline: the "differs" column is taken
// against the baseline's config, the same one Δ is measured against.
func TestDiffersComparesWithTheBaseline(t *testing.T) {
	specs, err := ablate.Plan([]string{"a/1-x.toml", "a/2-y.toml", "a/3-z.toml"}, []int64{1, 2}, "out")
	if err != nil {
		t.Fatal(err)
	}
	if got := baselineConfig(specs, ""); got != "a/1-x.toml" {
		t.Errorf("default baseline config %q, want the first", got)
	}
	if got := baselineConfig(specs, "3-z"); got != "a/3-z.toml" {
		t.Errorf("--baseline 3-z: config %q", got)
	}
}
