//go:build !mpi

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDistributedNeedsMPIBuild: the default build (pure Go, no cgo) has no
// MPI, so --distributed is refused with one line saying how to build it,
// exit 2, before anything is written. The MPI build's tests are in
// internal/mpi (go test -tags mpi, .ci/mpi).
func TestDistributedNeedsMPIBuild(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\npath = \"builtin:toy\"\ntokenizer = \"word\"\n[model]\ncontext = 8\nembedding = 16\nblocks = 1\nheads = 2\n[train]\nbatch = 2\ngrad_accum = 2\nmax_steps = 2\n"
	if err := os.WriteFile(filepath.Join(dir, "small.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := gptg(t, dir, "train", "small.toml", "--distributed")
	if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 ||
		!strings.Contains(r.stderr, "this gptg was built without MPI, so --distributed cannot run: build it with `go build -tags mpi ./cmd/gptg`") {
		t.Errorf("exit %d, stderr %q: want one line saying how to build with MPI, exit 2", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Error("the refused run left a run folder")
	}
}

// TestSweepRanksNeedsMPIBuild: sweep run and emit slurm --ranks R refuse a
// build without MPI, whose trainings could not run on R ranks.
func TestSweepRanksNeedsMPIBuild(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\npath = \"builtin:toy\"\ntokenizer = \"word\"\n[model]\ncontext = 8\nembedding = 16\nblocks = 1\nheads = 2\n[train]\nbatch = 2\ngrad_accum = 2\nmax_steps = 2\n"
	if err := os.WriteFile(filepath.Join(dir, "small.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sw.toml"), []byte("configs = [\"small.toml\"]\nout = \"sw\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "sweep", "sw.toml"); r.code != 0 {
		t.Fatalf("sweep: exit %d: %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"sweep", "run", "sw", "--ranks", "2"}, {"sweep", "emit", "slurm", "sw", "--ranks", "2"}} {
		r := gptg(t, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "this gptg was built without MPI") {
			t.Errorf("%s: exit %d, stderr %q: want the MPI build refusal, exit 2", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sw", "sweep.sbatch")); err == nil {
		t.Error("the refused emit wrote sweep.sbatch")
	}
}
