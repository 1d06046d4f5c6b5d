package corpus

import (
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/tiktokenids"
)

// tiktokenIDs reads bpe's golden ids of a built-in corpus: tiktoken's own.
func tiktokenIDs(t *testing.T, name string) []int {
	t.Helper()
	ids, err := tiktokenids.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestGPT2Vocab(t *testing.T) {
	v, err := NewGPT2Vocab()
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind() != GPT2 || v.Size() != 50257 || v.BPE() == nil {
		t.Fatalf("kind %q size %d", v.Kind(), v.Size())
	}
	ids, err := v.Encode("Hello world <|endoftext|> é")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{15496, 995, 1279, 91, 437, 1659, 5239, 91, 29, 38251} // tiktoken's
	if !slices.Equal(ids, want) {
		t.Fatalf("Encode = %v, want %v", ids, want)
	}
	if got := v.Decode(ids); got != "Hello world <|endoftext|> é" {
		t.Fatalf("Decode = %q", got)
	}
	tokens := v.Tokens()
	if tokens[262] != " the" || tokens[50256] != "<|endoftext|>" || len(tokens) != 50257 {
		t.Fatalf("tokens[262] = %q, tokens[50256] = %q", tokens[262], tokens[50256])
	}
	// "我" is three bytes, spelt as two tokens, neither whole UTF-8.
	wo, _ := v.Encode("我")
	if !slices.Equal(wo, []int{22755, 239}) || v.Label(wo[0]) != "<0xE6><0x88>" || v.Label(wo[1]) != "<0x91>" {
		t.Fatalf("我 = %v, labels %q %q", wo, v.Label(wo[0]), v.Label(wo[1]))
	}
	if v.Label(-1) != "\uFFFD" || v.Label(262) != " the" {
		t.Fatal("Label")
	}
	if _, err := v.Encode("bad \xff byte"); err == nil || !strings.Contains(err.Error(), "offset 4") {
		t.Fatalf("invalid UTF-8: err = %v", err)
	}
	if _, err := NewVocab(GPT2, []string{"a"}); err == nil {
		t.Fatal("NewVocab(gpt2, tokens) accepted a token list")
	}
	if b, err := BuildVocab(GPT2, "anything"); err != nil || b.Size() != 50257 {
		t.Fatalf("BuildVocab(gpt2): %v", err)
	}
}

// A corpus loaded with the gpt2 tokenizer has tiktoken's ids, in one pass
// a chunk at a time (tinyshakespeare is 1.1 MB, the chunks 1 MiB).
func TestLoadGPT2MatchesTiktoken(t *testing.T) {
	d, err := Load("builtin:tinyshakespeare", GPT2, 64, 0, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	want := tiktokenIDs(t, "tinyshakespeare")
	if got := d.Tokens(); !slices.Equal(got, want) {
		t.Fatalf("%d ids, tiktoken's are %d, or they differ", len(got), len(want))
	}
	if d.IDBytes() != 2 || d.Vocab.Kind() != GPT2 || d.Cut != int(float64(len(want))*0.9) {
		t.Fatalf("IDBytes %d kind %q cut %d", d.IDBytes(), d.Vocab.Kind(), d.Cut)
	}
	// nanoGPT's shakespeare recipe splits these ids 9:1 by characters,
	// not tokens; here the cut is by tokens, as for char corpora.
	if d.SHA256 != "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed" {
		t.Fatalf("digest %s", d.SHA256)
	}
}

func TestLoadGPT2Errors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"ok text\xff", "not valid UTF-8 (bad byte 0xff at offset 7)"},
		{"two", "has 1 gpt2 tokens"}, // tiktoken: [11545]
	} {
		_, err := Load(writeText(t, c.text), GPT2, 4, 0, 0.5)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.text, err, c.want)
		}
	}
}
