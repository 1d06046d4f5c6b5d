package corpus

import (
	"strings"
	"testing"

	"github.com/gptg/gptg/corpus/builtin"
)

// The seed's windows of the whole tiny-shakespeare corpus, as built into
// gptg (corpus/builtin).
func TestTinyShakespeare(t *testing.T) {
	const path = "builtin:tinyshakespeare"
	d, err := Load(path, Char, 32, 16, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	// cut = int(1115394*0.9) = 1003854; test side has 111540 tokens.
	// Train: (1003854-33+15)//16 = 62739. Test: (111540-33+15)//16 = 6970
	// (the seed notebook's range(0, len-33, 16) gives the same count).
	checks := []struct {
		what      string
		got, want int
	}{
		{"vocab size", d.Vocab.Size(), 65},
		{"tokens", len(d.Tokens()), 1115394},
		{"cut", d.Cut, 1003854},
		{"train windows", d.NumTrain(), 62739},
		{"test windows", d.NumTest(), 6970},
		{"test batches of 4", d.TestBatches(4), 1742},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
	x, y := make([]int, 32), make([]int, 32)
	d.TrainBatch(x, y, []int{0})
	if got, want := d.Vocab.Decode(x), "First Citizen:\nBefore we proceed"; got != want {
		t.Errorf("first window x = %q, want %q", got, want)
	}
	if got, want := d.Vocab.Decode(y), "irst Citizen:\nBefore we proceed "; got != want {
		t.Errorf("first window y = %q, want %q", got, want)
	}
	// The checksum published in shared/README.md.
	if err := Ensure(path, "", "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", nil); err != nil {
		t.Error(err)
	}
}

// A built-in corpus loads as the same bytes in a file would, and a wrong
// checksum or an unknown name is one clear error.
func TestBuiltinLikeAFile(t *testing.T) {
	text, err := builtin.Bytes("toy")
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := Load(writeText(t, string(text)), Word, 16, 0, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	built, err := Load("builtin:toy", Word, 16, 0, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fromFile.Tokens(), built.Tokens(); len(a) != len(b) || fromFile.Vocab.Size() != built.Vocab.Size() || built.Vocab.Size() != 31 {
		t.Fatalf("file: %d tokens, %d words; built in: %d tokens, %d words", len(a), fromFile.Vocab.Size(), len(b), built.Vocab.Size())
	}
	wrong := strings.Repeat("0", 64)
	wantError(t, Ensure("builtin:toy", "", wrong, nil), "the built-in corpus builtin:toy has sha256 4edd5305", "but [data] sha256 expects "+wrong)
	_, err = Load("builtin:nosuch", Char, 8, 0, 0.9)
	wantError(t, err, `there is no built-in corpus "nosuch" (built in: bible-en-es, tinyshakespeare, toy)`)
	wantError(t, Ensure("builtin:nosuch", "https://example.com/x", "", nil), `there is no built-in corpus "nosuch"`)
}
