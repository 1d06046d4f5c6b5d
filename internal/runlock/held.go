package runlock

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Held reports whether a process holds dir's lock, and its pid when known,
// without taking the lock itself: a reader (gptg serve) that took it for
// an instant would make a `gptg train --resume` starting at that instant
// fail. On Linux it looks the lock file up in /proc/locks; elsewhere, or
// when /proc/locks cannot be read, it falls back to a shared try-lock
// released at once.
func Held(dir string) (pid int, held bool, err error) {
	path := filepath.Join(dir, Name)
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil // never locked: no run has started here
	}
	if err != nil {
		return 0, false, err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return tryShared(path)
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return tryShared(path)
	}
	defer f.Close()
	// A line reads "1: FLOCK  ADVISORY  WRITE 12792 fe:00:9979989 0 EOF":
	// the holder's pid, then the file as major:minor:inode, in hex, hex
	// and decimal.
	dev := uint64(st.Dev)
	want := fmt.Sprintf("%02x:%02x:%d", (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff, st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// "->" marks a process waiting for the lock, not holding it.
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		if fields[5] == want {
			pid, _ := strconv.Atoi(fields[4])
			return pid, true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return tryShared(path)
	}
	return 0, false, nil
}

// tryShared tells whether an exclusive lock is held by trying a shared one.
func tryShared(path string) (int, bool, error) {
	// Never blocking on a FIFO, never through a link.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return 0, false, nil
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		pid := 0
		if b, rerr := os.ReadFile(path); rerr == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return pid, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return 0, false, nil
}
