package tokenfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestBytesAreNanoGPTs: a token file is numpy's uint16 tofile, little
// endian, no header: written here byte by byte as numpy writes
// np.array([0, 1, 256, 50256, 65535], dtype=np.uint16).tofile(f).
func TestBytesAreNanoGPTs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.bin")
	ids := []int{0, 1, 256, 50256, 65535}
	if err := Write(path, ids); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 0, 1, 0, 0, 1, 0x50, 0xc4, 0xff, 0xff}
	if !slices.Equal(got, want) {
		t.Fatalf("file holds % x, want % x", got, want)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Len() != 5 || f.Size() != 10 {
		t.Fatalf("Len %d Size %d, want 5 and 10", f.Len(), f.Size())
	}
	back := make([]uint16, 3)
	if err := f.ReadAt(back, 2); err != nil || !slices.Equal(back, []uint16{256, 50256, 65535}) {
		t.Fatalf("ReadAt(2) = %v, %v", back, err)
	}
	if err := f.ReadAt(back, 3); err == nil || !strings.Contains(err.Error(), "past its 5 tokens") {
		t.Fatalf("ReadAt past the end: %v", err)
	}
	sum, err := f.Check(context.Background(), MaxVocab)
	h := sha256.Sum256(want)
	if err != nil || sum != hex.EncodeToString(h[:]) {
		t.Fatalf("Check = %s, %v; want the file's SHA-256 %x", sum, err, h)
	}
}

// TestWindowsAcrossBuffers reads windows that cross ReadAt's internal
// buffer and Check's chunks, against the ids written.
func TestWindowsAcrossBuffers(t *testing.T) {
	ids := make([]int, chunkTokens+5000)
	for i := range ids {
		ids[i] = (i*7919 + 13) % 50257
	}
	path := filepath.Join(t.TempDir(), "t.bin")
	if err := Write(path, ids); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []struct{ start, n int }{{0, 1}, {2040, 4000}, {chunkTokens - 3, 10}, {len(ids) - 3000, 3000}} {
		got := make([]uint16, w.n)
		if err := f.ReadAt(got, int64(w.start)); err != nil {
			t.Fatal(err)
		}
		for i, id := range got {
			if int(id) != ids[w.start+i] {
				t.Fatalf("token %d is %d, want %d", w.start+i, id, ids[w.start+i])
			}
		}
	}
	if _, err := f.Check(context.Background(), 50257); err != nil {
		t.Fatal(err)
	}
	// The largest id is 50256: a vocabulary one smaller refuses it, at its
	// first place.
	first := slices.Index(ids, 50256)
	_, err = f.Check(context.Background(), 50256)
	var te *Error
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "holds id 50256 at token "+strconv.Itoa(first)+" (byte offset "+strconv.Itoa(2*first)+"), not below the vocabulary's 50256 tokens") {
		t.Fatalf("Check with vocabulary 50256: %v", err)
	}
}

// TestBadFiles: every file that is not a token file is refused with one
// line that names it and says what is wrong.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo.bin")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.bin"), "nope.bin does not exist"},
		{"empty", write("empty.bin", nil), "empty.bin is empty"},
		{"odd", write("odd.bin", []byte{1, 0, 2}), "odd.bin has 3 bytes, an odd number: a token file holds 2-byte ids"},
		{"directory", dir, dir + " is a directory, not a regular file"},
		{"fifo", fifo, "fifo.bin is a named pipe (FIFO), not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(c.path)
			if err == nil {
				f.Close()
				t.Fatal("opened")
			}
			var te *Error
			if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "token file ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want a *tokenfile.Error with %q", err, c.want)
			}
		})
	}
}

// TestWriteRefusesWideIDs: an id that does not fit two bytes leaves no
// file behind.
func TestWriteRefusesWideIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.bin")
	for _, id := range []int{-1, MaxVocab} {
		if err := Write(path, []int{1, id}); err == nil || !strings.Contains(err.Error(), "does not fit a token file") {
			t.Fatalf("Write id %d: %v", id, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Write of id %d left a file: %v", id, err)
		}
	}
}

// TestCheckHoldsAChunk: checking a 128 MiB token file (sparse: all
// zeros, 128 chunks) allocates a chunk, not the file (32 times the bound
// on what it may allocate).
func TestCheckHoldsAChunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 128<<20); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := f.Check(context.Background(), 65); err != nil {
		t.Fatal(err)
	}
	buf := make([]uint16, 65)
	if err := f.ReadAt(buf, f.Len()-65); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Fatalf("checking and reading a 128 MiB token file allocated %d bytes", grew)
	}
}

func TestCheckStopsWhenCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.bin")
	if err := Write(path, make([]int, 10)); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Check(ctx, 65); !errors.Is(err, context.Canceled) {
		t.Fatalf("Check after cancel: %v", err)
	}
}
