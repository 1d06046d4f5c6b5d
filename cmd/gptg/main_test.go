package main

// The tests of this package run the real gptg binary, built once by
// TestMain, on two tiny models trained by TestMain: what a user sees (exit
// code, stdout, stderr, files) is what is checked.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/testmodel"
)

var (
	gptgBin string // the binary under test

	// causalModel and unmaskedModel are model.safetensors files inside run
	// folders, each beside the config.toml it was trained with; wordModel
	// is a word-level model of the toy grammar (lower-case words).
	causalModel, unmaskedModel, wordModel string

	// runSampleTable is the [sample] table of the causal model's run, chosen
	// unlike the built-in defaults so that a test can tell them apart.
	runSampleTable = config.Sample{Prompt: "First", Tokens: 7, Temperature: 0}
)

func TestMain(m *testing.M) {
	os.Exit(setUpAndRun(m))
}

func setUpAndRun(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "gptg-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := setUp(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the CLI tests:", err)
		return 1
	}
	return m.Run()
}

func setUp(tmp string) error {
	gptgBin = filepath.Join(tmp, "gptg")
	build := exec.Command("go", "build", "-o", gptgBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as gptg.sh builds it
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	causal := testmodel.Config(filepath.Join(tmp, "causal"), true, 30)
	causal.Sample = runSampleTable
	var err error
	if causalModel, err = testmodel.Train(causal); err != nil {
		return err
	}
	if unmaskedModel, err = testmodel.Train(testmodel.Config(filepath.Join(tmp, "unmasked"), false, 30)); err != nil {
		return err
	}
	toy := filepath.Join(tmp, "toy.txt")
	if err := os.WriteFile(toy, []byte(corpus.ToySentences(300, 1)), 0o644); err != nil {
		return err
	}
	words := testmodel.Config(filepath.Join(tmp, "words"), true, 5)
	words.Data.Path, words.Data.Tokenizer = toy, corpus.Word
	wordModel, err = testmodel.Train(words)
	return err
}

// result is what one run of the binary showed.
type result struct {
	code           int
	stdout, stderr string
	maxRSSKB       int64 // the process's peak resident memory
}

// Every run of the binary is bounded twice. commandCPU bounds the CPU
// time it used (user and system, all threads), which a busy machine does
// not inflate: it is what catches a command grown slow. commandTimeout
// bounds its wall time only so that a hang is a failure, not a stuck
// test: it is far beyond what any command takes on a machine ten times
// busier than its cores (commandCPU at a tenth of a core is 200 s), since
// the tests run on busy machines (CI's shared cores, a laptop at work),
// where a bound of seconds fails commands that take one when idle.
const (
	commandTimeout = 5 * time.Minute
	commandCPU     = 20 * time.Second
)

// gptg runs the binary with args in dir.
func gptg(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runGptg(t, dir, nil, commandCPU, args...)
}

// runGptg runs the binary in dir with extra environment variables, and
// fails the test when it ran past commandTimeout or used more than cpu.
func runGptg(t *testing.T, dir string, env []string, cpu time.Duration, args ...string) result {
	t.Helper()
	return runGptgWith(t, dir, runOptions{env: env, cpu: cpu}, args...)
}

// runOptions are what a run of the binary gets beyond its arguments.
type runOptions struct {
	env []string      // added to the test's environment
	cpu time.Duration // the CPU time allowed; commandCPU when 0
	// stdin is the file in dir given as standard input (/dev/null when
	// empty): a file, as a shell's < gives it, so that /dev/stdin is a
	// link to a regular file.
	stdin string
	// ulimit, when set, is a limit of the process itself, which exec.Cmd
	// cannot set, given to the shell's ulimit before the binary runs:
	// "-v 2500000" (KiB of address space), "-d 300000", "-f 0".
	ulimit string
}

// underVM runs the binary with args in dir under ulimit -v kib (KiB of
// address space), as runGptgWith does.
func underVM(t *testing.T, dir string, kib int64, args ...string) result {
	t.Helper()
	return runGptgWith(t, dir, runOptions{ulimit: fmt.Sprintf("-v %d", kib)}, args...)
}

// gptgCommand is the binary's command with args in dir, run under the
// shell's ulimit when one is given.
func gptgCommand(ctx context.Context, dir, ulimit string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, gptgBin, args...)
	if ulimit != "" {
		cmd = exec.CommandContext(ctx, "sh", append([]string{"-c", "ulimit " + ulimit + ` && exec "$0" "$@"`, gptgBin}, args...)...)
	}
	cmd.Dir = dir
	return cmd
}

// runGptgWith runs the binary in dir as opts say, bounded by
// commandTimeout and the CPU time.
func runGptgWith(t *testing.T, dir string, opts runOptions, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cpu := opts.cpu
	if cpu == 0 {
		cpu = commandCPU
	}
	env := opts.env
	cmd := gptgCommand(ctx, dir, opts.ulimit, args...)
	if opts.stdin != "" {
		f, err := os.Open(filepath.Join(dir, opts.stdin))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	// The test may itself run as a Slurm or Kubernetes task.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLURM_ARRAY_TASK_ID=") && !strings.HasPrefix(kv, "JOB_COMPLETION_INDEX=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	lowerPeakRSS()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gptg %s: still running after %v", strings.Join(args, " "), commandTimeout)
	}
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("gptg %s: %v", strings.Join(args, " "), err)
	}
	if used := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(); used > cpu {
		t.Fatalf("gptg %s: used %v of CPU, more than %v", strings.Join(args, " "), used.Round(time.Millisecond), cpu)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss // KiB on Linux
	}
	return result{code, stdout.String(), stderr.String(), rss}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lowerPeakRSS makes the child's measured peak memory its own. Go starts a
// child with vfork, sharing this process's memory until exec, and at exec
// Linux carries the shared memory's high-water mark into the child's
// maxrss: a test that had built a large input in this process (a
// 256 MiB zip bomb, a huge sweep grid) saw its own peak reported as the
// child's. Returning freed memory to the system and resetting the
// high-water mark (clear_refs 5, Linux ≥ 4.0) leaves only this process's
// current size in the child's figure. Where /proc/self/clear_refs cannot
// be written (qemu-user, other systems) the figure stays an upper bound.
func lowerPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
