package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
)

// TestModelVocab: the model's vocabulary size comes from the data when the
// config leaves it out, a matching one is kept, and a different one is
// refused naming both sizes. (LoadFor takes the config by value: it
// cannot write into it.)
func TestModelVocab(t *testing.T) {
	path := filepath.Join(t.TempDir(), "abc.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("abcab\n", 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Data.Path, cfg.Data.URL, cfg.Data.Tokenizer = path, "", "char"
	cfg.Model.Vocab, cfg.Model.Context = 0, 8
	data, err := LoadFor(*cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ vocab, want int }{{0, 4}, {4, 4}, {5, 0}} {
		cfg.Model.Vocab = c.vocab
		got, err := ModelVocab(*cfg, data)
		if c.want == 0 {
			if err == nil || !strings.Contains(err.Error(), "model.vocab is 5 but") || !strings.Contains(err.Error(), "has 4 distinct") {
				t.Errorf("vocab 5 on 4 tokens: %v, want the mismatch named", err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("vocab %d: %d, %v; want %d", c.vocab, got, err, c.want)
		}
	}
}
