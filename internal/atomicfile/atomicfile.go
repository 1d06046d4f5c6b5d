// Package atomicfile writes files so that readers and crashes never see half of one,
// and holds the one rule for where gptg's outputs may go (see Target and Check).
package atomicfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
)

// Error is an output path refused: Problem reads on from the path.
type Error struct {
	Path, Problem string
}

func (e *Error) Error() string { return quote.Name(e.Path) + ": " + e.Problem }

// IsStdout reports whether path asks for standard output: "-" or
// /dev/stdout. Commands write there themselves (Write would replace the
// /dev/stdout link, or fail to create a temporary file in /dev).
func IsStdout(path string) bool {
	return path == "-" || path == "/dev/stdout"
}

// Target is the file that writing path replaces: path itself, or, when
// path is a symbolic link, the file it leads to, so that the link stays a
// link and the file it names gets the new content (rename would put a
// regular file where the link was). Anything that exists and is not a
// regular file (a device such as /dev/full, a FIFO, a directory, a link to
// nothing) is refused: renaming over it would replace the device or the
// folder's entry, not write to it.
func Target(path string) (string, error) {
	if strings.HasSuffix(path, "/") {
		return "", &Error{path, "ends in /, which names a folder; give the name of the file to write"}
	}
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return "", &Error{path, "a part of its path before the file name is a file, not a folder"}
	}
	if err != nil {
		return "", err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", &Error{path, "is a symbolic link that leads nowhere; gptg writes through links only to files that exist"}
		}
		if info, err = os.Stat(resolved); err != nil {
			return "", err
		}
		if !info.Mode().IsRegular() {
			return "", &Error{path, fmt.Sprintf("is a link to %s, %s; gptg writes only regular files (- for standard output)", quote.Name(resolved), inputfile.Kind(info.Mode()))}
		}
		return resolved, nil
	}
	if !info.Mode().IsRegular() {
		return "", &Error{path, fmt.Sprintf("exists and is %s; gptg writes only regular files (- for standard output)", inputfile.Kind(info.Mode()))}
	}
	return path, nil
}

// Rules say which existing files an output may replace without --force.
type Rules struct {
	Force bool
	// Inputs are the files the command reads (a config, a checkpoint, a
	// vocabulary): replacing one would destroy what the output was made
	// from.
	Inputs []string
	// Own recognises, from its first bytes, a file this command writes
	// (a picture it drew before, a Graphviz file); it may be replaced.
	// Anything else (a trained model, a corpus, a config) needs Force.
	// Nil: every existing file needs Force.
	Own func(head []byte) bool
}

// Check settles, before any work, whether a command may write path under
// the rules: standard output always; otherwise what Target allows, and
// among existing files only those the rules let it replace.
func Check(path string, r Rules) error {
	if IsStdout(path) {
		return nil
	}
	target, err := Target(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.Force {
		return nil
	}
	for _, in := range r.Inputs {
		if other, err := os.Stat(in); err == nil && os.SameFile(info, other) {
			return &Error{path, fmt.Sprintf("is %s, which this command reads; choose another output (--force replaces it)", quote.Name(in))}
		}
	}
	if r.Own != nil {
		head := make([]byte, 512)
		f, err := os.Open(target)
		if err != nil {
			return err
		}
		n, _ := io.ReadFull(f, head)
		f.Close()
		if r.Own(head[:n]) {
			return nil
		}
	}
	return &Error{path, "already exists and is not a file this command wrote; choose another output, or give --force to replace it"}
}

// HasPrefix is an Own for files that start with one of the prefixes,
// after any leading white space.
func HasPrefix(prefixes ...string) func([]byte) bool {
	return func(head []byte) bool {
		head = bytes.TrimLeft(head, " \t\r\n")
		for _, p := range prefixes {
			if bytes.HasPrefix(head, []byte(p)) {
				return true
			}
		}
		return false
	}
}

// syncDir makes a rename in dir durable. A variable so that the test can
// see it called after the rename; nothing else replaces it.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// WriteFile writes data to a temporary file beside path, syncs it,
// renames it over path and syncs the directory: a reader, or a crash, sees
// the old file or the new one, never a mix, and after a power loss the new
// name is there (the rename lives in the directory, which has its own
// blocks to flush). On error nothing is left behind. Path is first taken
// through Target: a link is written through, a device or folder refused.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write is WriteFile for content that write streams out: nothing the size
// of the file is held in memory (a checkpoint of a 10M-parameter model is
// 200 MB). The writer buffers; write's error aborts and removes the file.
//
// INT, TERM and HUP, which end a command that does not handle them, are
// held while the temporary file exists and raised again once it is renamed
// or removed: an interrupted command leaves the old file or the new one,
// never a temporary one (only SIGKILL can). A command that handles them
// itself (train saves a checkpoint and exits 130) receives them as before.
func Write(path string, write func(w io.Writer) error) (err error) {
	if path, err = Target(path); err != nil {
		return err
	}
	return replace(path, write)
}

// WriteOwnFile is WriteFile for a file that a command names itself inside
// a folder it writes (a sweep's manifest and scripts, an ablation's
// tables, a run's cache): the user named the folder, not the file, so
// whatever is at path — a link, a FIFO, a device node — is replaced by the
// new file, never followed or opened. A link planted there would otherwise
// lead the write anywhere (over the config the command read, or /etc).
func WriteOwnFile(path string, data []byte) error {
	return WriteOwn(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteOwn is WriteOwnFile for content that write streams out.
func WriteOwn(path string, write func(w io.Writer) error) error {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return &Error{path, "a part of its path before the file name is a file, not a folder"}
	case err == nil && info.IsDir():
		return &Error{path, "is a folder where gptg writes a file of its own; move the folder away"}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return replace(path, write)
}

// OwnFolder makes dir, a folder a command names itself inside a folder it
// writes (a sweep's failed/), unless it is there; one that exists must be
// a folder, not a link to one, so that the files written into it stay
// where the user's folder is.
func OwnFolder(dir string) error {
	if err := os.Mkdir(dir, 0o755); err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return &Error{dir, fmt.Sprintf("is %s where gptg keeps a folder of its own; remove it", inputfile.Kind(info.Mode()))}
	}
	return nil
}

// OpenAppend opens path, a log a command names itself inside a folder it
// writes (a sweep's events.log), for appending, creating it if needed. It
// follows no link and never blocks: a link, a FIFO or a device there is
// refused, not written through or waited on.
func OpenAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, &Error{path, "is a symbolic link where gptg keeps a log of its own; remove it"}
	case errors.Is(err, syscall.ENXIO): // a FIFO nobody reads
		return nil, &Error{path, "is a named pipe (FIFO) where gptg keeps a log of its own; remove it"}
	}
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = &Error{path, fmt.Sprintf("is %s where gptg keeps a log of its own; remove it", inputfile.Kind(info.Mode()))}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// replace writes path's new content to a temporary file beside it and
// renames it over path (see Write).
func replace(path string, write func(w io.Writer) error) (err error) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer func() { // registered first, so it runs after the cleanup below
		signal.Stop(sigs)
		select {
		case s := <-sigs:
			// Delivered asynchronously: the pause keeps the command from
			// going on (and exiting 0) before its default action ends it.
			if p, err := os.FindProcess(os.Getpid()); err == nil && p.Signal(s) == nil {
				time.Sleep(500 * time.Millisecond)
			}
		default:
		}
	}()
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	buf := bufio.NewWriterSize(tmp, 1<<20)
	if err = write(buf); err != nil {
		return err
	}
	if err = buf.Flush(); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil { // CreateTemp makes it private
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The new file is in place; a failed directory sync must not delete it
	// (the deferred cleanup only removes the temporary name, now gone).
	if serr := syncDir(dir); serr != nil {
		return fmt.Errorf("syncing directory %s after writing %s: %w", dir, filepath.Base(path), serr)
	}
	return nil
}
