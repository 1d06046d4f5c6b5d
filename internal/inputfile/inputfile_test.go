package inputfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/testwait"
)

// TestRefusesWhatIsNotARegularFile: a FIFO with no writer, /dev/zero and a
// directory are refused at once (a FIFO would block forever in open, the
// device would be read forever); the timeout fails the test if not.
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "is a named pipe (FIFO), not a regular file",
		"/dev/zero": "is a character device, not a regular file",
		dir:         "is a directory, not a regular file",
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(path, 0); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: got %v, want %q", path, err, want)
			}
		case <-time.After(testwait.Hang):
			t.Fatalf("%s: still reading after %v", path, testwait.Hang)
		}
	}
}

func TestLimitAndMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(path, 5); err != nil || string(b) != "12345" {
		t.Fatalf("got %q, %v", b, err)
	}
	if _, err := ReadFile(path, 4); err == nil || !strings.Contains(err.Error(), "is 5 bytes, more than the limit of 4") {
		t.Fatalf("got %v", err)
	}
	if _, err := ReadFile(path+"x", 4); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
