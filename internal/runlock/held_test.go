package runlock

import (
	"os"
	"testing"
)

func TestHeld(t *testing.T) {
	dir := t.TempDir()
	if _, held, err := Held(dir); held || err != nil {
		t.Fatalf("a folder never locked: held %v, err %v", held, err)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	pid, held, err := Held(dir)
	if !held || err != nil || pid != os.Getpid() {
		t.Fatalf("while locked: pid %d held %v err %v, want pid %d held", pid, held, err, os.Getpid())
	}
	// Held must not take the lock: the holder keeps it, a second Acquire fails.
	if _, err := Acquire(dir); err == nil {
		t.Fatal("a second Acquire succeeded while the lock was held")
	}
	l.Release()
	if _, held, err := Held(dir); held || err != nil {
		t.Fatalf("after Release: held %v, err %v", held, err)
	}
	// The fallback agrees.
	l, _ = Acquire(dir)
	if _, held, _ := tryShared(dir + "/" + Name); !held {
		t.Fatal("tryShared: not held while locked")
	}
	l.Release()
	if _, held, _ := tryShared(dir + "/" + Name); held {
		t.Fatal("tryShared: held after Release")
	}
}
