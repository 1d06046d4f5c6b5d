package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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
