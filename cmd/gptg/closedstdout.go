package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// A command started with its standard output closed (`gptg graph c.toml
// --dot - >&-`) finds /dev/null there: the Go runtime opens it in place of
// a closed descriptor 0, 1 or 2 before main, so that no file the program
// opens later becomes its stdout. Every write would then succeed and the
// command would exit 0 with its output gone. The runtime opens it for
// reading and writing; a shell's `>/dev/null` (an asked-for discard) opens
// it for writing only, which tells the two apart.

// errStdoutClosed is what a write to a closed standard output returns, as
// C programs report EBADF ("write error: Bad file descriptor").
var errStdoutClosed = errors.New("standard output is closed (started with >&-): its output would be lost; redirect it to a file, or to /dev/null to discard it")

type closedStdout struct{}

func (closedStdout) Write([]byte) (int, error) { return 0, errStdoutClosed }

// stdoutOf is os.Stdout, or a writer that fails every write when the
// process was started with its standard output closed.
func stdoutOf(f *os.File) io.Writer {
	if startedClosed(f) {
		return closedStdout{}
	}
	return f
}

// startedClosed reports whether f is the /dev/null the runtime opened for
// a descriptor that was closed at exec.
func startedClosed(f *os.File) bool {
	var st, null syscall.Stat_t
	fd := int(f.Fd())
	if syscall.Fstat(fd, &st) != nil || syscall.Stat(os.DevNull, &null) != nil || st.Rdev != null.Rdev || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		return false
	}
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	return errno == 0 && flags&syscall.O_ACCMODE == syscall.O_RDWR
}

// printsResult names the commands whose standard output is their result
// (a table, a loss, samples, a translation): one whose writes failed —
// stdout closed, > /dev/full, a disk filling up under a redirect — exits 1
// instead of 0 with the result missing. For the others (train, ablate,
// sweep, serve, plot) stdout is progress, and the result is in files.
var printsResult = map[string]bool{"graph": true, "sample": true, "eval": true, "inspect": true,
	"attention": true, "translate": true, "data": true, "import": true, "version": true, "tokens": true}

// checkedStdout passes writes to w and keeps the first one's error.
type checkedStdout struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

func (c *checkedStdout) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return n, err
}

// Unwrap is the writer underneath, for internal/terminal to see a terminal.
func (c *checkedStdout) Unwrap() io.Writer { return c.w }

// failed is the error of the first write that failed, or nil.
func (c *checkedStdout) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil || errors.Is(c.err, errStdoutClosed) {
		return c.err
	}
	return fmt.Errorf("writing the result to standard output: %w", unwrapPath(c.err))
}
