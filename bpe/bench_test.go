package bpe

import (
	"os"
	"testing"
)

func benchText(b *testing.B) string {
	data, err := os.ReadFile("../corpus/builtin/tinyshakespeare.txt")
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// BenchmarkLoadGPT2 is the start cost of GPT2(): parsing the embedded
// table into a Tokenizer.
func BenchmarkLoadGPT2(b *testing.B) {
	for b.Loop() {
		if _, err := parseTable(gpt2Table, map[string]int{EndOfText: GPT2Size - 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	tok := gpt2Tokenizer(b)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	var ids []int
	for b.Loop() {
		ids = tok.AppendEncode(ids[:0], text)
	}
}

// BenchmarkEncodeUncached encodes every piece afresh: the merge loop's
// own speed.
func BenchmarkEncodeUncached(b *testing.B) {
	tok := gpt2Tokenizer(b)
	text := benchText(b)
	pieces := Split(text)
	e := tok.newEncoder()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		for _, p := range pieces {
			e.mergeShort(p)
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		for s := text; len(s) > 0; {
			s = s[NextPiece(s):]
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	tok := gpt2Tokenizer(b)
	text := benchText(b)
	ids := tok.Encode(text)
	b.SetBytes(int64(len(text)))
	var out []byte
	for b.Loop() {
		out = tok.AppendDecode(out[:0], ids)
	}
}

// BenchmarkEncodeCold encodes with an empty cache each time, as the first
// encoding of a text in a process does.
func BenchmarkEncodeCold(b *testing.B) {
	tok := gpt2Tokenizer(b)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	var ids []int
	for b.Loop() {
		e := tok.newEncoder()
		ids = e.appendText(ids[:0], text)
	}
}
