package train

import (
	"context"
	"errors"
	"fmt"
	"github.com/gptg/gptg/internal/gptgbin"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/testwait"
)

// TestSecondProcessAndSIGHUP runs the real binary: while one gptg trains
// into a folder, a second one (fresh with --force, or --resume) stops at
// once with one line naming the first one's pid and exit code 1, touching
// nothing; then SIGHUP (a closed terminal) makes the first one save and
// exit 130, after which the folder is free and the run resumes.
func TestSecondProcessAndSIGHUP(t *testing.T) {
	exe, cfg := gptgbin.Path(t), killConfig(t)
	dir := filepath.Join(t.TempDir(), "run")
	first := exec.Command(exe, "train", cfg, "--quiet", "--set", "train.out="+dir,
		"--set", "train.max_steps=100000", "--set", "train.checkpoint_every=100000")
	var firstOut strings.Builder
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	testwait.Until(t, "the first run's metrics", func() bool { _, err := readMetricsRows(dir); return err == nil })

	for _, args := range [][]string{
		{"train", cfg, "--quiet", "--force", "--set", "train.out=" + dir},
		{"train", "--resume", dir, "--quiet"},
	} {
		// The second process gives up at once: were it to wait for the
		// folder, it would wait for the first run (100,000 steps), and
		// testwait.Hang ends the wait as a hang.
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
		defer cancel()
		var stderr strings.Builder
		second := exec.CommandContext(ctx, exe, args...)
		second.Stderr = &stderr
		err := second.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%v: %v, want exit code 1; stderr %q", args, err, stderr.String())
		}
		want := fmt.Sprintf("%s: run folder is in use by process %d (wait for it to finish, or stop it)\n", dir, first.Process.Pid)
		if !strings.HasSuffix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Fatalf("%v: stderr %q, want one line ending %q", args, stderr.String(), want)
		}
	}
	if n, err := readMetricsRows(dir); err != nil || n == 0 {
		t.Fatalf("the first run's metrics: %d rows, %v", n, err)
	}

	first.Process.Signal(syscall.SIGHUP)
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 130 {
			t.Fatalf("after SIGHUP: %v, want exit code 130; output %q", err, firstOut.String())
		}
	case <-time.After(testwait.Hang):
		t.Fatalf("still running %v after SIGHUP", testwait.Hang)
	}
	step, _, err := Progress(dir)
	if err != nil || step == 0 {
		t.Fatalf("no checkpoint after SIGHUP: step %d, %v", step, err)
	}
	out, err := exec.Command(exe, "train", "--resume", dir, "--quiet", "--set", fmt.Sprintf("train.max_steps=%d", step+2)).CombinedOutput()
	if err != nil {
		t.Fatalf("resume after SIGHUP: %v\n%s", err, out)
	}
}

// readMetricsRows counts the rows of dir's metrics.jsonl.
func readMetricsRows(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, errors.New("no rows yet")
	}
	return strings.Count(string(b), "\n"), nil
}

// TestSIGTERMWhileLoading: a signal while a large corpus loads stops gptg
// within moments with exit code 130, and nothing is written.
func TestSIGTERMWhileLoading(t *testing.T) {
	exe := gptgbin.Path(t)
	dir := t.TempDir()
	base, err := os.ReadFile("../testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "big.txt")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 96<<20; n += len(base) {
		f.Write(base)
	}
	f.Close()
	cfg := filepath.Join(dir, "c.toml")
	os.WriteFile(cfg, []byte("[data]\npath = \""+data+"\"\n"), 0o644)
	cmd := exec.Command(exe, "train", cfg, "--quiet", "--set", "train.out="+filepath.Join(dir, "run"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The signal goes when gptg is reading the corpus, however busy the
	// machine: a fixed delay landed before the signal handler or after the
	// load when the machine was loaded.
	if err := waitReading(cmd.Process.Pid, data, testwait.Hang); err != nil {
		cmd.Process.Kill()
		t.Fatalf("%v; stderr %q", err, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 130 {
			t.Fatalf("%v, want exit code 130; stderr %q", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "interrupted while loading") {
			t.Errorf("stderr %q", stderr.String())
		}
	case <-time.After(testwait.Hang): // the whole load takes ~1 s on an idle core
		cmd.Process.Kill()
		t.Fatalf("still running %v after SIGTERM", testwait.Hang)
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); err == nil {
		t.Error("the run folder was made")
	}
}

// waitReading waits until process pid holds path open with its offset past
// the start: it is inside the corpus loader, which keeps the file open from
// its first read to its last.
func waitReading(pid int, path string, limit time.Duration) error {
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		entries, err := os.ReadDir(fds)
		if err != nil {
			return fmt.Errorf("gptg ended before reading %s: %v", path, err)
		}
		for _, e := range entries {
			if target, _ := os.Readlink(filepath.Join(fds, e.Name())); target != path {
				continue
			}
			info, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
			if pos, ok := strings.CutPrefix(string(info), "pos:"); ok && strings.TrimSpace(strings.SplitN(pos, "\n", 2)[0]) != "0" {
				return nil
			}
		}
	}
	return fmt.Errorf("gptg did not start reading %s within %v", path, limit)
}
