package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWriteFileSyncsDirectoryAfterRename checks the order that makes the
// write survive a power loss: the directory is synced once the new name
// is in it, not before.
func TestWriteFileSyncsDirectoryAfterRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	orig := syncDir
	defer func() { syncDir = orig }()
	var synced []string
	syncDir = func(d string) error {
		b, err := os.ReadFile(path)
		if err != nil || string(b) != "new" {
			t.Errorf("directory synced before the rename: %q, %v", b, err)
		}
		synced = append(synced, d)
		return orig(d)
	}
	if err := WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Errorf("synced %v, want [%s]", synced, dir)
	}
}

// TestWriteFileDirectorySyncFailure: the error is reported, and the file
// written stays (it is complete) with no temporary beside it.
func TestWriteFileDirectorySyncFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	orig := syncDir
	defer func() { syncDir = orig }()
	syncDir = func(string) error { return errors.New("EIO") }
	if err := WriteFile(path, []byte("new")); err == nil {
		t.Fatal("no error from a failed directory sync")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "f.txt" {
		t.Errorf("directory holds %v, want only f.txt", entries)
	}
}

// TestSignalDuringWrite: a SIGTERM that arrives while the temporary file
// exists ends the process only once the file is in place, so no temporary
// file is left behind (the process re-executes itself as the writer).
func TestSignalDuringWrite(t *testing.T) {
	if out := os.Getenv("ATOMICFILE_SIGNAL_OUT"); out != "" {
		err := Write(out, func(w io.Writer) error {
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
			time.Sleep(200 * time.Millisecond) // the signal is held, not acted on
			_, err := io.WriteString(w, "complete\n")
			return err
		})
		fmt.Println("Write returned", err) // not reached: the signal ends the process
		os.Exit(0)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalDuringWrite$")
	cmd.Env = append(os.Environ(), "ATOMICFILE_SIGNAL_OUT="+out)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("the writer was not ended by its SIGTERM: %v\n%s", err, b)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != "complete\n" {
		t.Errorf("out.txt: %q, %v; want the complete file", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the folder holds %v; want out.txt alone", names)
	}
}
