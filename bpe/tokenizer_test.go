package bpe

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"testing"
)

// byteOrder is the byte table of a learned BPE: byte b is id b.
func byteOrder() (ids [256]int) {
	for b := range ids {
		ids[b] = b
	}
	return ids
}

func TestNewRejects(t *testing.T) {
	swapped := byteOrder()
	swapped[1] = 0
	for _, c := range []struct {
		name     string
		byteIDs  [256]int
		merges   [][2]int
		specials map[string]int
		want     string
	}{
		{"byte id twice", swapped, nil, nil, "two bytes have id 0"},
		{"byte id out of range", func() [256]int { b := byteOrder(); b[7] = 256; return b }(), nil, nil, "byte 0x07 has id 256"},
		{"merge of an id not yet made", byteOrder(), [][2]int{{97, 98}, {256, 258}}, nil, "merge 1 (256, 258) names id 258"},
		{"merge of itself", byteOrder(), [][2]int{{256, 97}}, nil, "names id 256"},
		{"negative id", byteOrder(), [][2]int{{-1, 97}}, nil, "names id -1"},
		{"pair twice", byteOrder(), [][2]int{{97, 98}, {99, 100}, {97, 98}}, nil, "merge 2 (97, 98) repeats merge 0"},
		{"special among the merges", byteOrder(), [][2]int{{97, 98}}, map[string]int{"<s>": 256}, `special token "<s>" has id 256, want 257..257`},
		{"special after the gap", byteOrder(), nil, map[string]int{"<s>": 257}, "want 256..256"},
		{"specials share an id", byteOrder(), nil, map[string]int{"<s>": 256, "</s>": 256}, "have the same id 256"},
		{"empty special", byteOrder(), nil, map[string]int{"": 256}, "special token is empty"},
	} {
		_, err := New(c.byteIDs, c.merges, c.specials)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// A small learned BPE, worked by hand: merges apply earliest first,
// leftmost among equal pairs, and a pair that is not a merge stays apart.
func TestEncodeByHand(t *testing.T) {
	// 256 = "a"+"a", 257 = "aa"+"b", 258 = "b"+"c", 259 = "a"+"bc"
	tok, err := New(byteOrder(), [][2]int{{'a', 'a'}, {256, 'b'}, {'b', 'c'}, {'a', 258}}, map[string]int{"<|end|>": 260})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"aab", []int{257}},
		{"aaab", []int{256, 'a', 'b'}},                        // leftmost "aa" first; "a"+"b" is no merge
		{"aaaab", []int{256, 257}},                            // "aa","aa","b" then "aa"+"b"
		{"abc", []int{259}},                                   // "bc" first, then "a"+"bc"
		{"aabc", []int{257, 'c'}},                             // "aa", then "aa"+"b" is earlier than "b"+"c"
		{"ba", []int{'b', 'a'}},                               // no merge at all
		{"<|end|>", []int{'<', '|', 'e', 'n', 'd', '|', '>'}}, // ordinary text
	} {
		got := tok.Encode(c.text)
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
		if back := string(tok.Decode(got)); back != c.text {
			t.Errorf("Decode(Encode(%q)) = %q", c.text, back)
		}
	}
	if got, want := tok.EncodeWithSpecial("ab<|end|>aab<|end"), []int{'a', 'b', 260, 257, '<', '|', 'e', 'n', 'd'}; !slices.Equal(got, want) {
		t.Errorf("EncodeWithSpecial = %v, want %v", got, want)
	}
	if tok.Size() != 261 || tok.Merges() != 4 {
		t.Errorf("Size %d, Merges %d, want 261 and 4", tok.Size(), tok.Merges())
	}
	if got := string(tok.Piece(259)); got != "abc" {
		t.Errorf("Piece(259) = %q, want abc", got)
	}
	if tok.Piece(261) != nil || tok.Piece(-1) != nil {
		t.Error("Piece of an id outside the vocabulary is not nil")
	}
	if got := string(tok.Decode([]int{'a', 261, -1, 'b'})); got != "a\uFFFD\uFFFDb" {
		t.Errorf("Decode of ids outside the vocabulary = %q", got)
	}
}

// GPT-2's own facts: the byte ids are not in byte order, " the" is one
// token, <|endoftext|> is 50256 and encodes as text unless asked.
func TestGPT2Facts(t *testing.T) {
	tok := gpt2Tokenizer(t)
	if tok.Size() != 50257 || tok.Merges() != 50000 {
		t.Fatalf("Size %d, Merges %d, want 50257 and 50000", tok.Size(), tok.Merges())
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"!", []int{0}},      // GPT-2 numbers the printable bytes first
		{" ", []int{220}},    // and a space after them
		{"\x00", []int{188}}, // then the others
		{" the", []int{262}},
		{"Hello world", []int{15496, 995}},
		{EndOfText, []int{27, 91, 437, 1659, 5239, 91, 29}},
	} {
		if got := tok.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if got := tok.EncodeWithSpecial("a" + EndOfText + "b"); !slices.Equal(got, []int{64, 50256, 65}) {
		t.Errorf("EncodeWithSpecial = %v", got)
	}
	if id, ok := tok.Special(EndOfText); !ok || id != 50256 {
		t.Errorf("Special(%q) = %d, %v", EndOfText, id, ok)
	}
	if got := string(tok.Piece(50256)); got != EndOfText {
		t.Errorf("Piece(50256) = %q", got)
	}
}

// gpt2.bin is the table gpt2/README.md describes.
func TestGPT2TableChecksum(t *testing.T) {
	sum := sha256.Sum256(gpt2Table)
	const want = "9cb28c05f5869d691697942e9b7e3ad8830912b57cfa213058a6059c4024c188"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Errorf("gpt2/gpt2.bin has sha256 %s, gpt2/README.md says %s", got, want)
	}
	if len(gpt2Table) != 2*(256+2*gpt2Merges) {
		t.Errorf("gpt2/gpt2.bin is %d bytes", len(gpt2Table))
	}
}

// Every token encodes to itself: merging its own bytes reaches it. So the
// pair-rank merge (GPT-2's encoder.py) agrees with tiktoken's shortcut of
// taking a piece that is a whole token as it is.
func TestEveryTokenReachable(t *testing.T) {
	tok := gpt2Tokenizer(t)
	e := tok.newEncoder()
	for id := range tok.Size() - 1 {
		piece := string(tok.rawPiece(id))
		if got := e.mergeShort(piece); len(got) != 1 || got[0] != uint32(id) {
			t.Errorf("token %d %q merges to %v", id, piece, got)
		}
	}
}

// The heap merge of long pieces gives what the rescanning one does.
func TestMergeLongEqualsShort(t *testing.T) {
	tok := gpt2Tokenizer(t)
	e := tok.newEncoder()
	var pieces []string
	for id := range tok.Size() - 1 {
		pieces = append(pieces, string(tok.rawPiece(id)))
	}
	pieces = append(pieces, Split(stressText(t))...)
	pieces = append(pieces, strings.Repeat("a", 1000), strings.Repeat("ab", 333), strings.Repeat(" the", 50),
		strings.Repeat("é", 200), strings.Repeat("1", 99), "Supercalifragilisticexpialidocious")
	for _, p := range pieces {
		short := slices.Clone(e.mergeShort(p))
		if long := e.mergeLong(p); !slices.Equal(short, long) {
			t.Errorf("piece %q: short %v, long %v", p, short, long)
		}
	}
}

// Encoding is the same in concurrent goroutines, each with its own cache.
func TestEncodeConcurrent(t *testing.T) {
	tok := gpt2Tokenizer(t)
	text := stressText(t)
	want := tok.Encode(text)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 5 {
				if !slices.Equal(tok.Encode(text), want) {
					errs <- "a concurrent Encode differs"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// The cache is bounded: after more distinct pieces than it holds, encoding
// is still right.
func TestCacheEviction(t *testing.T) {
	tok := gpt2Tokenizer(t)
	var b strings.Builder
	for i := range cacheMaxPieces + 1000 {
		b.WriteString(" w")
		for n := i; n > 0; n /= 26 {
			b.WriteByte(byte('a' + n%26))
		}
	}
	text := b.String()
	ids := tok.Encode(text)
	if !bytes.Equal(tok.Decode(ids), []byte(text)) {
		t.Fatal("decode(encode(x)) != x after the cache was emptied")
	}
	if again := tok.Encode(text); !slices.Equal(again, ids) {
		t.Fatal("a second encoding differs")
	}
}
