package pairs

import (
	"strings"
	"testing"
)

// TestCheckWords: every vocabulary built from the committed Bible corpus
// passes (no false alarm on a real model's metadata), and each kind of
// word the tokenizer cannot make is refused, naming it.
func TestCheckWords(t *testing.T) {
	_, c := loadBuiltin(t)
	for side, v := range map[string]*Vocab{"English": c.Src, "Spanish": c.Tgt} {
		if err := CheckWords(v.Words()); err != nil {
			t.Errorf("the %s vocabulary of the built-in corpus: %v", side, err)
		}
	}
	for _, bad := range []string{"The", "a b", "", "a.", "a\u0007", "\ufeffa", "don't"} {
		err := CheckWords(append(append([]string{}, Specials...), "ok", bad))
		if err == nil || !strings.Contains(err.Error(), "word 5") {
			t.Errorf("CheckWords with %q: %v, want a refusal of word 5", bad, err)
		}
	}
}
