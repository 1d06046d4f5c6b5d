package corpus

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/cputime"
)

// bigText writes about mb MiB of text: Shakespeare's tiny.txt repeated.
func bigText(t *testing.T, mb int) string {
	t.Helper()
	base, err := os.ReadFile("../testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for n := 0; n < mb<<20; n += len(base) {
		f.Write(base)
	}
	return path
}

// TestLoadStaysWithinTwiceTheFile: the whole load allocates at most about
// twice the file (its token ids, two bytes each, and one read buffer),
// and gives the same dataset as the text loaded in one piece.
func TestLoadStaysWithinTwiceTheFile(t *testing.T) {
	path := bigText(t, 4)
	info, _ := os.Stat(path)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, err := Load(path, Char, 32, 16, 0.9)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(2*info.Size())+8<<20 {
		t.Errorf("loading %d MB allocated %d MB, more than twice the file", info.Size()>>20, alloc>>20)
	}
	text, _ := os.ReadFile(path)
	v, err := BuildVocab(Char, string(text))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := v.Encode(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Vocab.Tokens(), v.Tokens()) || !slices.Equal(d.Tokens(), ids) {
		t.Fatal("the streamed load differs from encoding the whole text")
	}
}

// TestLoadWordsAcrossChunks: words cut by the 1 MiB read boundary, and
// multi-byte characters cut by it, come out whole.
func TestLoadWordsAcrossChunks(t *testing.T) {
	var b strings.Builder
	for b.Len() < 3*chunkSize {
		b.WriteString("größer wörter\u00a0and\tmore ")
	}
	path := filepath.Join(t.TempDir(), "w.txt")
	os.WriteFile(path, []byte(b.String()), 0o644)
	for _, kind := range []string{Word, Char} {
		d, err := Load(path, kind, 4, 0, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := BuildVocab(kind, b.String())
		ids, _ := v.Encode(b.String())
		if !slices.Equal(d.Vocab.Tokens(), v.Tokens()) || !slices.Equal(d.Tokens(), ids) {
			t.Fatalf("%s: the streamed load differs from encoding the whole text", kind)
		}
	}
}

// TestLoadStopsWhenCancelled: a cancelled load returns at once with the
// context's error.
func TestLoadStopsWhenCancelled(t *testing.T) {
	path := bigText(t, 8)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := cputime.Process()
	_, err := LoadContext(ctx, path, Char, 32, 16, 0.9)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if d := cputime.Process() - start; d > time.Second {
		t.Errorf("took %v of CPU to stop", d)
	}
}
