// Package runlock keeps two gptg processes out of one run folder.
//
// The lock is flock(2) on a file in the folder: the kernel drops it when
// the holding process exits, however it exits (Ctrl-C, SIGKILL, a crash),
// so a stale lock never blocks a requeued Slurm task or a resumed run.
// The file also records the holder's pid, for the message the second
// process prints.
package runlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Name is the lock file's name inside a run folder.
const Name = ".gptg.lock"

// ErrHeld is wrapped by Acquire's error when another process holds the lock.
var ErrHeld = errors.New("run folder is in use")

// Lock is a held lock; Release gives it up.
type Lock struct {
	f    *os.File
	path string
}

// ErrLost is wrapped by Intact's error when the lock file was removed or
// replaced while the lock was held.
var ErrLost = errors.New("lock file removed or replaced while the run held it")

// Intact reports whether the lock file in the folder is still the one this
// lock holds. flock locks a file, not a name: once the file is deleted
// (someone "cleaning up a stale lock") or replaced, a second gptg creates
// a new one, locks it too, and two processes write one run folder. A
// holder that checks before it writes stops instead.
func (l *Lock) Intact() error {
	if l == nil || l.f == nil {
		return nil
	}
	mine, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	now, err := os.Lstat(l.path)
	if err != nil || !os.SameFile(mine, now) {
		return fmt.Errorf("%s: %w", l.path, ErrLost)
	}
	return nil
}

// Acquire takes the exclusive lock on dir (which must exist) without
// waiting. When another process holds it, the error names that process.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, Name)
	if err := checkRegular(dir, path); err != nil {
		return nil, err
	}
	// No links followed, no blocking: the file is the lock's own, and
	// writing the pid through a link would write wherever it leads.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if err := checkOpened(dir, path, f); err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w by %s (wait for it to finish, or stop it)", dir, ErrHeld, holder(path))
		}
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f, path: path}, nil
}

// Busy reports, without taking the lock or creating its file, whether
// another process holds dir's lock: the same error as Acquire's then, nil
// otherwise. A command that would refuse the folder for another reason
// says first that it is in use.
func Busy(dir string) error {
	path := filepath.Join(dir, Name)
	if err := checkRegular(dir, path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil // no lock file: nobody holds it
	}
	defer f.Close()
	if err := checkOpened(dir, path, f); err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%s: %w by %s (wait for it to finish, or stop it)", dir, ErrHeld, holder(path))
		}
		return nil
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return nil
}

// checkRegular refuses a lock file that exists and is not a regular file:
// a link (the pid would be written where it leads), a FIFO (opening it
// would block), a folder.
func checkRegular(dir, path string) error {
	info, err := os.Lstat(path)
	if err != nil || info.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s: its lock file %s is not a regular file (%s): the folder is damaged; remove %s", dir, Name, info.Mode().Type(), path)
}

// checkOpened is checkRegular of the file opened, against a swap between
// the Lstat and the open, and refuses a lock file with a second name (a
// hard link): Acquire writes its pid into the file, which would overwrite
// the other name's content, wherever it is.
func checkOpened(dir, path string, f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return nil
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: its lock file %s is not a regular file (%s): the folder is damaged; remove %s", dir, Name, info.Mode().Type(), path)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("%s: its lock file %s has %d names (a hard link to another file, whose content gptg would overwrite): remove %s", dir, Name, st.Nlink, path)
	}
	return nil
}

// holder names the process whose pid the lock file records.
func holder(path string) string {
	if b, err := os.ReadFile(path); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return fmt.Sprintf("process %d", pid)
		}
	}
	return "another process"
}

// Release gives the lock up. The file stays: removing it would race with
// a process that has just opened it.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
