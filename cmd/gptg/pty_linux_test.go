package main

// Tests of what gptg draws on a terminal: the binary runs on a
// pseudo-terminal of a chosen size (opened with golang.org/x/sys/unix,
// no cgo), and the bytes it writes there are read back.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/testwait"
)

// openPTY returns the two ends of a new pseudo-terminal of cols×rows.
func openPTY(t *testing.T, cols, rows int) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN) // ptsname
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's terminal end: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}); err != nil {
		t.Fatalf("setting the pty's size: %v", err)
	}
	return master, slave
}

// ptyRun is a gptg process whose stdout and stderr are a terminal.
type ptyRun struct {
	cmd    *exec.Cmd
	read   chan struct{} // closed when the output has been read to its end
	master *os.File
	mu     sync.Mutex // guards output, written by the reading goroutine
	output bytes.Buffer
}

func (r *ptyRun) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.output.Write(p)
}

// snapshot is what the process has written so far.
func (r *ptyRun) snapshot() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.output.String()
}

// startOnPTY starts gptg with args in dir on a cols-wide terminal.
func startOnPTY(t *testing.T, dir string, cols int, args ...string) *ptyRun {
	t.Helper()
	master, slave := openPTY(t, cols, 24)
	cmd := exec.Command(gptgBin, args...)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the child holds it; reads end (EIO) when it exits
	r := &ptyRun{cmd: cmd, read: make(chan struct{}), master: master}
	go func() {
		defer close(r.read)
		io.Copy(r, master) // ends with EIO once the child is gone
	}()
	return r
}

// wait returns the exit code and everything written to the terminal,
// with the terminal's \r\n for a newline turned back into \n.
func (r *ptyRun) wait(t *testing.T) (int, string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(testwait.Hang):
		r.cmd.Process.Kill()
		<-done
		t.Fatalf("gptg %s: still running after %v", strings.Join(r.cmd.Args[1:], " "), testwait.Hang)
	}
	<-r.read
	r.master.Close()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, strings.ReplaceAll(r.snapshot(), "\r\n", "\n")
}

// ansi matches the escape sequences gptg writes (erase to end of line).
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// liveLine matches the start of training's live line.
var liveLine = regexp.MustCompile(`^step \d+/\d+ `)

// redrawnWidths returns the width of every text a line was redrawn with:
// each piece of a line that a carriage return ends (it is drawn over), and
// a last piece that is a live line.
func redrawnWidths(out string) (widths []int, pieces []string) {
	for _, line := range strings.Split(ansi.ReplaceAllString(out, ""), "\n") {
		parts := strings.Split(line, "\r")
		for i, piece := range parts {
			if i < len(parts)-1 || liveLine.MatchString(piece) {
				widths = append(widths, utf8.RuneCountInString(piece))
				pieces = append(pieces, piece)
			}
		}
	}
	return widths, pieces
}

// ptyTrainConfig is a tiny run long enough to redraw its line many times,
// with test losses in it.
func ptyTrainConfig(t *testing.T, dir string, steps int) string {
	c := testmodel.Config(filepath.Join(dir, "run"), true, steps)
	c.Train.LogEvery, c.Train.EvalEvery, c.Train.Epochs = 25, 500, 100
	text, err := c.TOML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProgressFitsTheTerminal trains on terminals of 80 and 40 columns:
// the live line is redrawn in place and never reaches the last column
// (a line as wide as the terminal wraps, and every redraw would leave a
// copy behind), it still shows the test loss at 80 columns, and it says
// when it is computing one.
func TestProgressFitsTheTerminal(t *testing.T) {
	for _, cols := range []int{80, 40} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			dir := t.TempDir()
			cfg := ptyTrainConfig(t, dir, 2000)
			code, out := startOnPTY(t, dir, cols, "train", cfg).wait(t)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			widths, pieces := redrawnWidths(out)
			if len(widths) < 10 {
				t.Fatalf("only %d redraws of the live line:\n%q", len(widths), out)
			}
			sawTest := false
			for i, w := range widths {
				if w >= cols {
					t.Errorf("a redraw of %d columns on a %d-column terminal: %q", w, cols, pieces[i])
				}
				sawTest = sawTest || strings.Contains(pieces[i], "test ")
			}
			if cols == 80 && !sawTest {
				t.Errorf("no redraw shows the test loss at 80 columns:\n%q", out)
			}
			if !strings.Contains(out, "evaluating the test loss") {
				t.Errorf("the line does not say when the test loss is being computed:\n%q", out)
			}
			if !strings.Contains(out, "step 500: test loss ") || !strings.Contains(out, "done: 2000 steps") {
				t.Errorf("the permanent lines are missing:\n%s", out)
			}
		})
	}
}

// TestProgressTimeLeftAfterResume extends a finished run on a terminal:
// the first estimate of the time left is not 0 although the run starts
// at step 1500 (its earlier steps took no time in this process).
func TestProgressTimeLeftAfterResume(t *testing.T) {
	dir := t.TempDir()
	cfg := ptyTrainConfig(t, dir, 1500)
	if r := gptg(t, dir, "train", cfg); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	code, out := startOnPTY(t, dir, 80, "train", "--resume", "run", "--set", "train.max_steps=5000").wait(t)
	if code != 0 {
		t.Fatalf("resume: exit %d:\n%s", code, out)
	}
	first := regexp.MustCompile(`step (\d+)/5000 .*? (\S+) left`).FindStringSubmatch(ansi.ReplaceAllString(out, ""))
	if first == nil {
		t.Fatalf("no estimate of the time left:\n%q", out)
	}
	if d, err := time.ParseDuration(first[2]); err != nil || d <= 0 {
		t.Errorf("the first estimate at step %s of 5000 is %q, want a time above 0", first[1], first[2])
	}
}

// TestPrefixOnlyProgressAndInterrupt: the prefix-only loss of a two-block
// unmasked model over a larger corpus shows its progress on the terminal,
// and Ctrl-C there says what it interrupted (exit 130).
func TestPrefixOnlyProgressAndInterrupt(t *testing.T) {
	dir := t.TempDir()
	c := testmodel.Config(filepath.Join(dir, "run"), false, 5)
	c.Model.Blocks = 2
	model, err := testmodel.Train(c)
	if err != nil {
		t.Fatal(err)
	}
	tiny, err := os.ReadFile(testmodel.TinyText())
	if err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt") // the same characters, 200 times as many
	if err := os.WriteFile(big, bytes.Repeat(tiny, 200), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startOnPTY(t, dir, 80, "eval", model, "--data", big, "--prefix-only")
	if !testwait.For(func() bool { return strings.Contains(r.snapshot(), "prefix-only loss: ") }) {
		t.Fatalf("no progress shown after %v:\n%q", testwait.Hang, r.snapshot())
	}
	r.cmd.Process.Signal(os.Interrupt)
	code, out := r.wait(t)
	if code != 130 || !regexp.MustCompile(`gptg eval: interrupted during the prefix-only loss, after \d+ of \d+ batches\n`).MatchString(out) {
		t.Errorf("exit %d, want 130 and the interrupted step named:\n%q", code, out)
	}
	widths, pieces := redrawnWidths(out)
	for i, w := range widths {
		if w >= 80 {
			t.Errorf("a progress line of %d columns: %q", w, pieces[i])
		}
	}
}
