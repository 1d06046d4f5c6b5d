package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue #24, session 11's fresh round (testdata/hostile/probes_audit3.py):
// every command under a process memory limit. What it found outside the
// memory lanes' items is tested here.

func round6Audit3Inputs(t *testing.T) []badInput {
	both := func(t *testing.T, dir string) { nanoMeta(t, dir); nanoCheckpoint(t, dir) }
	return []badInput{
		// import checked no memory at all: a 600 MB checkpoint (50M
		// parameters, 810 MB to convert) under ulimit -v 2.3 GB ended in the
		// runtime's out-of-memory trace, under a 600 MiB cgroup in the
		// kernel's OOM kill.
		{name: "import: a model whose conversion needs more than GPTG_MAX_MEMORY", setup: both, env: []string{"GPTG_MAX_MEMORY=0.0001"},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2,
			msg: "ckpt.pt: importing this model needs about 125 KiB (7728 parameters"},
		{name: "import: GPTG_MAX_MEMORY not a number", setup: both, env: []string{"GPTG_MAX_MEMORY=lots"},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: `GPTG_MAX_MEMORY="lots" is not a number of GiB`},
	}
}

// TestDataToyStreams: gptg data toy built its whole file in memory before
// writing it (10M sentences, 400 MB of text: a peak of 1 GB), so a process
// limited below that crashed with the runtime's out-of-memory trace; it
// now writes as it draws, in a few MiB whatever the size. Under ulimit -d
// 300 MB, 3M sentences (120 MB) crashed before.
func TestDataToyStreams(t *testing.T) {
	dir := t.TempDir()
	r := runGptgWith(t, dir, runOptions{ulimit: "-d 300000"}, "data", "toy", "--out", "t.txt", "--sentences", "3000000")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("data toy of 3M sentences under ulimit -d 300000: exit %d, stderr %.300s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "wrote 3000000 sentences") {
		t.Errorf("stdout %q", r.stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "t.txt"))
	if err != nil || bytes.Count(b, []byte("\n")) != 3_000_000 {
		t.Errorf("t.txt: %d lines (%v), want 3000000", bytes.Count(b, []byte("\n")), err)
	}
}
