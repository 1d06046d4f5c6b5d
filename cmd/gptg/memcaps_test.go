package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Fixed caps and memory checks against what the process may still take
// (ulimit -v), through the binary. Each limit is
// sized from the command's own measured address space (peakVM), so the
// tests hold on any machine whatever the Go runtime reserves.

// peakVM runs the binary with args in dir and returns its peak address
// space (VmPeak, KiB), read from /proc while it runs. Most of it is the
// runtime's reservation at start; a late growth the last reading missed is
// what callers' margins cover. A short command (version) may end before
// any reading, or be read before the runtime has reserved its heap: such a
// run is made again, and a reading counts once the runtime runs its second
// thread, which it starts after the reservation.
func peakVM(t *testing.T, dir string, args ...string) int64 {
	t.Helper()
	for range 200 {
		if peak := onePeakVM(t, dir, args...); peak > 0 {
			return peak
		}
	}
	t.Fatalf("gptg %s: no reading of /proc/PID/status after the runtime started, in 200 runs", strings.Join(args, " "))
	return 0
}

// onePeakVM is one run of peakVM: the largest VmPeak read once the process
// has at least two threads, or 0 if no reading was made then.
func onePeakVM(t *testing.T, dir string, args ...string) int64 {
	t.Helper()
	cmd := exec.Command(gptgBin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	start := time.Now()
	var peak int64
	for {
		if vmField(status, "Threads") >= 2 {
			if kib := vmField(status, "VmPeak"); kib > peak {
				peak = kib
			}
		}
		pause := time.Millisecond
		if time.Since(start) < 20*time.Millisecond {
			pause = 20 * time.Microsecond // a short command lives a few milliseconds
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("gptg %s: %v: %s", strings.Join(args, " "), err, stderr.String())
			}
			return peak
		case <-time.After(pause):
		}
	}
}

// vmField is a "Key:   N kB" line of a /proc status file, in KiB (0 if absent).
func vmField(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(rest, "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// bigBatchRun trains, with ablate, a tiny model at a batch that makes its
// training estimate large (about 350 MiB) and sampling it small: the run
// ab/big. One step on the built-in corpus.
func bigBatchRun(t *testing.T, dir string) {
	t.Helper()
	cfg := "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 32\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 4096\nmax_steps = 1\neval_batches = 1\n[sample]\nprompt = \"F\"\n"
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "ablate", "big.toml", "--out", "ab"); r.code != 0 {
		t.Fatalf("gptg ablate big.toml: exit %d: %s", r.code, r.stderr)
	}
}

// TestRunConfigIsNotATrainingCheck: sample, eval and attention read a
// run's config.toml for their settings; reading it applied the training
// memory check, so a run whose training needs more than the process may
// take could not be sampled though sampling needs far less, and an
// ablation run again on its finished folder (to rebuild the table) called
// the trained run "of another config (unreadable config.toml)" or failed
// it with "no usable prompt … train.max_memory". Each command runs under ulimit -v its own measured need plus
// 192 MiB (its estimate counts 64 MiB for the program already running,
// and the threads still to come count against the headroom: +128 MiB
// left 32 MiB once they were counted),
// well under what the training would need (350 MiB).
func TestRunConfigIsNotATrainingCheck(t *testing.T) {
	dir := t.TempDir()
	bigBatchRun(t, dir)
	const margin = 192 << 10 // KiB
	for _, args := range [][]string{
		{"sample", "ab/big", "--tokens", "5"},
		{"eval", "ab/big", "--batch", "4"},
		{"attention", "ab/big", "--text", "First"},
	} {
		limit := peakVM(t, dir, args...) + margin
		r := underVM(t, dir, limit, args...)
		if r.code != 0 {
			t.Errorf("gptg %s under ulimit -v %d (its own peak + 192 MiB): exit %d, stderr %q; want it to run",
				strings.Join(args, " "), limit, r.code, r.stderr)
		}
	}
	// An ablation of a finished folder only measures: the run is reused,
	// measured again and sampled, not failed.
	os.Remove(filepath.Join(dir, "ab", "big", "ablate.json"))
	args := []string{"ablate", "big.toml", "--out", "ab"}
	limit := peakVM(t, dir, args...) + margin
	os.Remove(filepath.Join(dir, "ab", "big", "ablate.json"))
	r := underVM(t, dir, limit, args...)
	if r.code != 0 || strings.Contains(r.stdout, "Failed runs") || !strings.Contains(r.stdout, "| big |") {
		t.Errorf("gptg ablate big.toml --out ab (finished) under ulimit -v %d: exit %d\nstdout %s\nstderr %s; want the trained run in the table",
			limit, r.code, r.stdout, r.stderr)
	}
}
