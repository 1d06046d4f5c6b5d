package corpus

import (
	"os"

	"github.com/gptg/gptg/corpus/builtin"
)

// wordMapBytes is what the vocabulary pass of a word corpus holds per
// distinct word (the map's entry, the word's string): measured, 72 MB for
// 1,048,577 short words (see wordTokens).
const wordMapBytes = 72

// HeldBytes is at most what Load holds of a corpus file of size bytes
// whose vocabulary is the model's (vocab tokens of kind Char, Word or
// GPT2), so that a command can count it before it reads a byte: an id per
// token (idBytes: 2 up to 65,536 tokens, else 4), at most one token per
// byte of text (char, gpt2) or per two (word: a word and the space that
// ends it); for a
// word corpus, the vocabulary pass's map when it is larger (it is garbage
// by the time the ids are allocated); and the slack of the heap's growth.
// An ASCII text has exactly one char token per byte. Measured (eval of a
// 0.1M-parameter model, peak RSS): 60 MiB of text 148 MiB, 240 MiB 510,
// 900 MiB 1836 — the ids and the program's 40 MiB.
func HeldBytes(size int64, kind string, vocab int) float64 {
	tokens := float64(size)
	if kind == Word {
		tokens = float64(size/2 + 1)
	}
	held := tokens * float64(idBytes(vocab))
	if kind == Word {
		held = max(held, wordMapBytes*float64(vocab))
	}
	// The ids are one allocation: Go maps address space for it a heap
	// arena (64 MiB) at a time, and a large one takes arenas of its own.
	return held + min(held/4, heapArena)
}

const heapArena = 64 << 20

// FileSize is the bytes of the corpus at path (a file, or builtin:NAME)
// as a memory check counts them before the corpus is read; 0 when it
// cannot be known (Load then says what is wrong with the path).
func FileSize(path string) int64 {
	if name, ok := builtin.Parse(path); ok {
		c, _ := builtin.Lookup(name)
		return c.Size
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return fi.Size()
}
