package bpe

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/tiktokenids"
)

// The golden files are tiktoken's own ids (encoding "gpt2", r50k_base, the
// npm package's WASM build of its Rust core) for the built-in corpora and
// testdata/stress.txt, made by testdata/mkgolden.sh.
var goldenInputs = []struct{ name, path string }{
	{"tinyshakespeare", "../corpus/builtin/tinyshakespeare.txt"},
	{"bible-en-es", "../corpus/builtin/bible-en-es.tsv"},
	{"toy", "../corpus/builtin/toy.txt"},
	{"stress", "testdata/stress.txt"},
}

func gpt2Tokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := GPT2()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func stressText(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("testdata/stress.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// readGolden reads golden/NAME.gpt2.bin.gz: uint16 little-endian ids.
func readGolden(t testing.TB, name string) []int {
	t.Helper()
	ids, err := tiktokenids.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestGoldenTiktoken compares every id with tiktoken's, and decodes them
// back into the text byte for byte.
func TestGoldenTiktoken(t *testing.T) {
	tok := gpt2Tokenizer(t)
	for _, in := range goldenInputs {
		t.Run(in.name, func(t *testing.T) {
			data, err := os.ReadFile(in.path)
			if err != nil {
				t.Fatal(err)
			}
			want := readGolden(t, in.name)
			got := tok.Encode(string(data))
			if err := compareIDs(tok, got, want); err != nil {
				t.Fatal(err)
			}
			if back := tok.Decode(got); !bytes.Equal(back, data) {
				t.Fatalf("decode(encode(%s)) differs from it (%d bytes back of %d)", in.name, len(back), len(data))
			}
			t.Logf("%s: %d bytes, %d tokens, all equal to tiktoken's", in.name, len(data), len(got))
		})
	}
}

// compareIDs counts the ids that differ and shows the first difference
// with the pieces around it.
func compareIDs(tok *Tokenizer, got, want []int) error {
	n := min(len(got), len(want))
	first, diff := -1, 0
	for i := range n {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			diff++
		}
	}
	if first < 0 && len(got) == len(want) {
		return nil
	}
	if first < 0 {
		first = n
	}
	show := func(ids []int) string {
		lo, hi := max(0, first-3), min(len(ids), first+4)
		var parts []string
		for _, id := range ids[lo:hi] {
			parts = append(parts, fmt.Sprintf("%d %q", id, tok.Piece(id)))
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Errorf("%d tokens, want %d; %d of the first %d differ, the first at %d:\n got  %s\n want %s",
		len(got), len(want), diff, n, first, show(got), show(want))
}

// allCodePointsText is every code point of planes 0 to 3 and the start of
// 14 but the surrogates, each after a letter, before a digit, after a
// space, before "'s" and doubled: the same text as testdata/mkgolden.js
// builds.
func allCodePointsText() string {
	var b strings.Builder
	for c := rune(0); c < 0xe1000; c++ {
		if (c >= 0xd800 && c < 0xe000) || (c >= 0x40000 && c < 0xe0000) {
			continue
		}
		ch := string(c)
		b.WriteString("A" + ch + "1 " + ch + "'s" + ch + ch + " ")
	}
	return b.String()
}

// TestGoldenAllCodePoints compares the ids of every code point in context
// with tiktoken's, through the digest of all of them: the pre-split's
// Unicode classes (Go's unicode tables, tiktoken's regex crate's) agree on
// every one.
func TestGoldenAllCodePoints(t *testing.T) {
	tok := gpt2Tokenizer(t)
	raw, err := os.ReadFile("testdata/golden/allcodepoints.gpt2.sha256")
	if err != nil {
		t.Fatal(err)
	}
	var wantSum string
	var wantN int
	if _, err := fmt.Sscan(string(raw), &wantSum, &wantN); err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(allCodePointsText())
	buf := make([]byte, 2*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint16(buf[2*i:], uint16(id))
	}
	sum := sha256.Sum256(buf)
	if got := hex.EncodeToString(sum[:]); got != wantSum || len(ids) != wantN {
		t.Fatalf("all code points: %d tokens with sha256 %s, tiktoken's are %d with %s", len(ids), got, wantN, wantSum)
	}
}
