package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProcessMemoryLimit: a model within train.max_memory (8 GiB by
// default) but beyond what the process may use (here ulimit -v 2.4 GiB,
// as a small container would give) is refused in one line with exit 2
// before anything is allocated; it used to train into the Go runtime's
// "fatal error: out of memory" trace (issue #24, the audit of round six).
func TestProcessMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 512\nembedding = 256\nblocks = 4\nheads = 8\n[train]\nbatch = 32\nmax_steps = 2\nout = \"runs/big\"\n"
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "graph", "big.toml"); r.code != 0 {
		t.Fatalf("gptg graph big.toml without a process limit: exit %d: %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"graph", "big.toml"}, {"train", "big.toml"}} {
		cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 2500000 && exec "$0" "$@"`, gptgBin}, args...)...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		want := "more than this process may still use"
		if err == nil || code != 2 || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "ulimit -v 2500000 KiB") ||
			strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("gptg %s under ulimit -v 2500000: exit %d, stderr %q; want exit 2 and one line with %q",
				strings.Join(args, " "), code, stderr.String(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "big")); err == nil {
		t.Error("the refused training left a run folder")
	}
}
