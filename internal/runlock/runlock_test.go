package runlock

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHelperHold is run as a child process by TestSecondProcessRefused.
func TestHelperHold(t *testing.T) {
	dir := os.Getenv("RUNLOCK_HOLD")
	if dir == "" {
		return
	}
	if _, err := Acquire(dir); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(time.Minute)
}

func TestSecondProcessRefused(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHold$")
	cmd.Env = append(os.Environ(), "RUNLOCK_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child did not take the lock: %q %v", buf, err)
	}
	_, err = Acquire(dir)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "process "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("second Acquire: %v, want ErrHeld naming pid %d", err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The lock died with its process.
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
