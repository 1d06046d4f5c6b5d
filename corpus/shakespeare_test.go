package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedData finds the directory with tinyshakespeare.txt: $GPTG_DATA, or
// the shared folder beside the project when run from a checkout.
func sharedData(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("GPTG_DATA"); dir != "" {
		return dir
	}
	dir := filepath.Join("..", "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("GPTG_DATA not set and ../shared/data missing: skipping the tiny-shakespeare checks")
	}
	return dir
}

func TestTinyShakespeare(t *testing.T) {
	path := filepath.Join(sharedData(t), "tinyshakespeare.txt")
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
