// Package inputfile opens the files gptg reads as input (configs, corpora,
// model files, prompts) and refuses anything that is not a regular file
// of bounded size: /dev/zero would be read forever, and opening a FIFO
// blocks until a writer appears, deaf to Ctrl-C.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/gptg/gptg/internal/quote"
)

// Error is a file refused for its kind or size. Problem reads on from the
// path ("is a named pipe (FIFO), not a regular file"), so a caller that
// names the file already can print Problem alone.
type Error struct {
	Path, Problem string
}

func (e *Error) Error() string { return quote.Name(e.Path) + " " + e.Problem }

// Open opens path for reading if it is a regular file of at most limit
// bytes (limit <= 0: no limit) and returns it with its size. Errors name
// path; a missing file's error still matches fs.ErrNotExist.
func Open(path string, limit int64) (*os.File, int64, error) {
	info, err := os.Stat(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Op = "open" // looking comes first here, but to a user this is opening
	}
	if err != nil {
		return nil, 0, err
	}
	if err := check(path, info, limit); err != nil {
		return nil, 0, err
	}
	// Non-blocking, so that a FIFO put in place between the Stat and the
	// open cannot block; the Stat of the opened file below refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	info, err = f.Stat()
	if err == nil {
		err = check(path, info, limit)
	}
	if err == nil && info.Size() == 0 {
		err = procLike(path, f)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, info.Size(), nil
}

// procLike refuses a "regular" file that says it is empty but is not: the
// files of /proc and /sys are made as they are read and report a size of
// 0, which would read as an empty corpus (or an empty anything). A file
// that is really empty is left for the caller to judge.
func procLike(path string, f *os.File) error {
	var b [1]byte
	n, _ := f.Read(b[:])
	if n == 0 {
		_, err := f.Seek(0, io.SeekStart)
		return err
	}
	return &Error{path, "reports a size of 0 but holds data, as the files of /proc and /sys do; copy it into a regular file first"}
}

// ReadFile is os.ReadFile through Open.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, size, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("reading %s: %w (did it change while being read?)", path, err)
	}
	return b, nil
}

// check refuses what is not a regular file of at most limit bytes.
func check(path string, info fs.FileInfo, limit int64) error {
	m := info.Mode()
	if m.IsRegular() {
		if limit > 0 && info.Size() > limit {
			return &Error{path, fmt.Sprintf("is %d bytes, more than the limit of %d", info.Size(), limit)}
		}
		return nil
	}
	return &Error{path, "is " + Kind(m) + ", not a regular file"}
}

// Kind names what a file that is not a regular file is: "a directory",
// "a named pipe (FIFO)", "a character device", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file"
}
