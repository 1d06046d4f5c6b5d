package ablate

import (
	"bytes"
	"context"
	"github.com/gptg/gptg/internal/gptgbin"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/memlimit"
)

// TestJobsShareTheMemory: with --jobs 2 under a cgroup whose headroom
// holds one training but not two, the trainings run one at a time, and
// the log says why (each would pass its own check at start, and the
// kernel kill one). The wrapper marks a training in progress
// with a folder: a second one starting meanwhile finds it taken.
func TestJobsShareTheMemory(t *testing.T) {
	real := gptgbin.Path(t)
	tmp := t.TempDir()
	mark, overlaps := filepath.Join(tmp, "training"), filepath.Join(tmp, "overlaps")
	exe := filepath.Join(tmp, "gptg-mark")
	script := "#!/bin/sh\nif [ \"$1\" = train ]; then\n  mkdir '" + mark + "' 2>/dev/null || echo overlap >> '" + overlaps + "'\n" +
		"  sleep 0.3; '" + real + "' \"$@\"; rc=$?; rmdir '" + mark + "' 2>/dev/null; exit $rc\nfi\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgDir := t.TempDir()
	base := tinyBase(t, cfgDir)
	cfg, err := config.Load(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	need := cfg.TrainMemory().Total() + childRuntime
	for _, tc := range []struct {
		name     string
		room     memlimit.Headroom
		together bool // may the two overlap
	}{
		{"a cgroup with room for one", memlimit.Headroom{Bytes: 1.5 * need, Limit: "the memory limit of cgroup /test"}, false},
		{"ulimit -v: each child has its own", memlimit.Headroom{Bytes: 1.5 * need, Limit: "ulimit -v 1 KiB", AddressSpace: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headroom = func() (memlimit.Headroom, bool) { return tc.room, true }
			defer func() { headroom = memlimit.Find }()
			os.Remove(overlaps)
			out := filepath.Join(t.TempDir(), "abl")
			specs, err := Plan([]string{base}, []int64{1, 2}, out)
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			results, err := Run(context.Background(), specs, Options{Out: out, Jobs: 2, Exe: exe, Log: &log, ProgressEvery: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if r.Status != Finished {
					t.Fatalf("%s: %v %v", r.Dir, r.Status, r.Err)
				}
			}
			_, err = os.Stat(overlaps)
			overlapped := err == nil
			waited := strings.Contains(log.String(), "waits: its training needs about")
			if !tc.together && (overlapped || !waited) {
				t.Errorf("overlapped %v, said it waits %v; want one at a time, said. Log:\n%s", overlapped, waited, log.String())
			}
			if tc.together && waited {
				t.Errorf("waited under an address-space limit; log:\n%s", log.String())
			}
		})
	}
}

// TestKilledWhileWritingTheModel: a training killed by SIGKILL after its
// last checkpoint but before its model file was written (the OOM killer
// while it wrote model.safetensors) is a failed run named as killed —
// not "finished by another process" with a missing model later.
func TestKilledWhileWritingTheModel(t *testing.T) {
	real := gptgbin.Path(t)
	exe := filepath.Join(t.TempDir(), "gptg-killed")
	script := "#!/bin/sh\nif [ \"$1\" = train ]; then '" + real + "' \"$@\" >/dev/null 2>&1; for a; do last=$a; done; rm \"${last#train.out=}/model.safetensors\" || exit 3; kill -9 $$; fi\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "abl")
	specs, err := Plan([]string{tinyBase(t, t.TempDir())}, nil, out)
	if err != nil {
		t.Fatal(err)
	}
	results, err := Run(context.Background(), specs, Options{Out: out, Exe: exe, Log: io.Discard, ProgressEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Status != Failed || r.Err == nil || !strings.Contains(r.Err.Error(), "killed (SIGKILL)") {
		t.Errorf("status %v, error %v; want failed, killed named", r.Status, r.Err)
	}
	// Run again: the resume writes the model from the checkpoint (a run
	// counted as finished would fail its measuring on the missing model,
	// run after run).
	results, err = Run(context.Background(), specs, Options{Out: out, Exe: real, Log: io.Discard, ProgressEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Status != Finished || r.Err != nil || r.Steps != 80 {
		t.Errorf("second run: status %v, error %v, steps %d; want finished at 80", r.Status, r.Err, r.Steps)
	}
}
