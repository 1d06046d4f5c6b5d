package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The tests of this file are gptg ablate's: runs that finish without a
// sample, and two ablations sharing a folder.

// TestAblateShortTranslation: an ablation of a translation model trained
// on sentences shorter than the verse its row translates is a finished
// run with no sample, not a failed one.
func TestAblateShortTranslation(t *testing.T) {
	dir := t.TempDir()
	for name, text := range translationFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := gptg(t, dir, "ablate", "toy.toml", "--out", "ab")
	if r.code != 0 || !strings.Contains(r.stdout, "(no sample: cannot translate: the sentence has 12 words") {
		t.Fatalf("exit %d, stderr %q, stdout ends %q; want a finished row without a sample", r.code, r.stderr, r.stdout[max(0, len(r.stdout)-600):])
	}
}

// TestAblateWordConfigWithoutPrompt: a word-level config that keeps the
// default [sample] prompt "\n" trains; its sample cannot start (no word in
// it), which the table says; the run is not listed as failed ("the
// prompt has no tokens"), and ablate exits 0.
func TestAblateWordConfigWithoutPrompt(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"words.txt": strings.Repeat("the cat sees the dog . the dog sees a cat .\n", 80),
		"w.toml":    "[data]\npath = \"words.txt\"\ntokenizer = \"word\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\n[train]\nbatch = 2\nmax_steps = 2\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := gptgEnv(t, dir, nil, "ablate", "w.toml", "--out", "ab")
	summary, _ := os.ReadFile(filepath.Join(dir, "ab/summary.md"))
	if r.code != 0 || !strings.Contains(string(summary), "(no sample: the prompt") {
		t.Errorf("exit %d\n%s\nsummary.md:\n%s", r.code, r.stderr, summary)
	}
}

// TestAblateForceLeavesAnotherRunnersRun: two `ablate --force` at once
// both retrained a run (the run lock is taken only inside each training):
// the second cleared the run the first had just trained. An ablation now
// starts over only the run it saw when it started; one that another
// runner replaced since is measured as it is. Here ablation B trains a
// (slow) then b; while it trains a (B stopped), ablation A retrains b.
func TestAblateForceLeavesAnotherRunnersRun(t *testing.T) {
	dir := t.TempDir()
	const cfg = "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 1\n[sample]\nprompt = \"F\"\n[train]\nbatch = 2\neval_batches = 1\n"
	writeFiles(t, dir, map[string]string{"a.toml": cfg + "max_steps = 1000\n", "b.toml": cfg + "max_steps = 2\n"})
	ok(t, dir, "ablate", "b.toml", "--out", "ab")
	before := runID(t, filepath.Join(dir, "ab", "b"))
	b := gptgCommand(context.Background(), dir, "", "ablate", "a.toml", "b.toml", "--force", "--out", "ab")
	var out, stderr strings.Builder
	b.Stdout, b.Stderr = &out, &stderr
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Process.Kill()
	waitFor(t, filepath.Join(dir, "ab", "a", "metrics.jsonl")) // B has looked at b and trains a
	b.Process.Signal(syscall.SIGSTOP)
	if runID(t, filepath.Join(dir, "ab", "b")) != before {
		t.Fatal("ablation B reached b before it was stopped: the test cannot tell")
	}
	ok(t, dir, "ablate", "b.toml", "--force", "--out", "ab")
	mid := runID(t, filepath.Join(dir, "ab", "b"))
	b.Process.Signal(syscall.SIGCONT)
	if err := b.Wait(); err != nil {
		t.Fatalf("ablation B: %v\n%s\n%s", err, out.String(), stderr.String())
	}
	if mid == before {
		t.Fatalf("ablation A did not retrain b (run id %s before and after)", before)
	}
	if after := runID(t, filepath.Join(dir, "ab", "b")); after != mid || !strings.Contains(out.String(), "| b |") {
		t.Errorf("ablation B retrained b after ablation A had (run %s, then %s; want A's run kept), or left it out:\n%s\n%s", mid, after, out.String(), stderr.String())
	}
}
