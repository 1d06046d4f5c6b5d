package hf

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
)

// maxTokenizerFile bounds vocab.json, merges.txt and tokenizer.json
// (GPT-2's: 1.0 MB, 0.46 MB and 1.4 MB).
const maxTokenizerFile = 64 << 20

// CheckGPT2Tokenizer says whether the folder's tokenizer files are GPT-2's:
// nil when they are (or when there are none), else an error naming the
// file and the first difference. It checks vocab.json and merges.txt when
// the folder has them, else tokenizer.json's model: the same 50,257 tokens
// with the same ids (the 256 bytes, the results of the 50,000 merges in
// order, <|endoftext|>), and the merges in the same order, each of two
// tokens that join into the token it makes. (Two tokens that join into the
// same one could in principle be split at another point than GPT-2's; no
// tokenizer derived from GPT-2's does that.)
func (m *Model) CheckGPT2Tokenizer() error {
	tok, err := bpe.GPT2()
	if err != nil {
		return err
	}
	vocabPath, mergesPath := m.Tokenizer["vocab.json"], m.Tokenizer["merges.txt"]
	switch {
	case vocabPath != "" || mergesPath != "":
		if vocabPath == "" || mergesPath == "" {
			return fmt.Errorf("the folder has %s without %s", quote.Name(vocabPath+mergesPath), map[bool]string{true: "merges.txt", false: "vocab.json"}[vocabPath != ""])
		}
		var vocab map[string]int
		if err := readJSON(vocabPath, &vocab); err != nil {
			return err
		}
		if err := checkVocab(vocabPath, vocab, tok); err != nil {
			return err
		}
		data, err := inputfile.ReadFile(mergesPath, maxTokenizerFile)
		if err != nil {
			return err
		}
		var merges []string
		for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
			if i == 0 && strings.HasPrefix(line, "#version") {
				continue
			}
			merges = append(merges, line)
		}
		return checkMerges(mergesPath, merges, vocab, tok)
	case m.Tokenizer["tokenizer.json"] != "":
		path := m.Tokenizer["tokenizer.json"]
		var t struct {
			Model struct {
				Type   string            `json:"type"`
				Vocab  map[string]int    `json:"vocab"`
				Merges []json.RawMessage `json:"merges"`
			} `json:"model"`
			AddedTokens []struct {
				ID      int    `json:"id"`
				Content string `json:"content"`
			} `json:"added_tokens"`
		}
		if err := readJSON(path, &t); err != nil {
			return err
		}
		if t.Model.Type != "BPE" {
			return fmt.Errorf("%s: the model is of type %s, not GPT-2's BPE", quote.Name(path), quote.Value(t.Model.Type))
		}
		for _, a := range t.AddedTokens { // <|endoftext|> may be listed here alone
			if _, ok := t.Model.Vocab[a.Content]; !ok && t.Model.Vocab != nil {
				t.Model.Vocab[a.Content] = a.ID
			}
		}
		if err := checkVocab(path, t.Model.Vocab, tok); err != nil {
			return err
		}
		merges := make([]string, len(t.Model.Merges))
		for i, raw := range t.Model.Merges {
			var s string
			var pair []string
			switch {
			case json.Unmarshal(raw, &s) == nil:
				merges[i] = s
			case json.Unmarshal(raw, &pair) == nil && len(pair) == 2:
				merges[i] = pair[0] + " " + pair[1]
			default:
				return fmt.Errorf("%s: merge %d is neither \"a b\" nor [a, b]", quote.Name(path), i)
			}
		}
		return checkMerges(path, merges, t.Model.Vocab, tok)
	}
	return nil
}

func readJSON(path string, v any) error {
	data, err := inputfile.ReadFile(path, maxTokenizerFile)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v", quote.Name(path), err)
	}
	return nil
}

// checkVocab checks that vocab maps exactly GPT-2's tokens, written as
// GPT-2's encoder writes them (bytes as printable characters,
// byteChars), to GPT-2's ids.
func checkVocab(path string, vocab map[string]int, tok *bpe.Tokenizer) error {
	if len(vocab) != tok.Size() {
		return fmt.Errorf("%s has %d tokens, GPT-2's tokenizer %d", quote.Name(path), len(vocab), tok.Size())
	}
	for id := range tok.Size() {
		piece := tok.Piece(id)
		name := string(piece) // the special token is written as it is
		if _, special := tok.Special(name); !special {
			name = encodeBytes(piece)
		}
		if got, ok := vocab[name]; !ok || got != id {
			return fmt.Errorf("%s gives token %s the id %d, GPT-2's tokenizer %d (or lacks it)", quote.Name(path), quote.Value(name), got, id)
		}
	}
	return nil
}

// checkMerges checks that merge i joins two tokens of vocab into the
// token of id 256+i, as GPT-2's merges do.
func checkMerges(path string, merges []string, vocab map[string]int, tok *bpe.Tokenizer) error {
	if len(merges) != tok.Merges() {
		return fmt.Errorf("%s has %d merges, GPT-2's tokenizer %d", quote.Name(path), len(merges), tok.Merges())
	}
	for i, line := range merges {
		a, b, ok := strings.Cut(line, " ")
		_, okA := vocab[a]
		_, okB := vocab[b]
		if !ok || !okA || !okB || strings.Contains(b, " ") {
			return fmt.Errorf("%s: merge %d (%s) is not two tokens of the vocabulary", quote.Name(path), i, quote.Value(line))
		}
		if want := encodeBytes(tok.Piece(256 + i)); a+b != want {
			return fmt.Errorf("%s: merge %d makes %s, GPT-2's makes %s", quote.Name(path), i, quote.Value(a+b), quote.Value(want))
		}
	}
	return nil
}

// byteChars is GPT-2's encoder.py bytes_to_unicode: the character each
// byte is written as in vocab.json and merges.txt. The printable bytes
// ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the others, in
// order, for U+0100 onwards.
var byteChars = func() [256]rune {
	var c [256]rune
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae {
			c[b] = rune(b)
		} else {
			c[b] = rune(256 + n)
			n++
		}
	}
	return c
}()

// encodeBytes writes a token's bytes as GPT-2's files do.
func encodeBytes(piece []byte) string {
	var s strings.Builder
	for _, b := range piece {
		s.WriteRune(byteChars[b])
	}
	return s.String()
}
