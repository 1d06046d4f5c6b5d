// Package atomicfile writes files so that readers and crashes never see half of one.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

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
// blocks to flush). On error nothing is left behind.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write is WriteFile for content that write streams out: nothing the size
// of the file is held in memory (a checkpoint of a 10M-parameter model is
// 200 MB). The writer buffers; write's error aborts and removes the file.
func Write(path string, write func(w io.Writer) error) (err error) {
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
