// Package tiktokenids reads the golden token ids that tiktoken gave for a
// text (bpe/testdata/golden/NAME.gpt2.bin.gz: gzipped uint16 little-endian
// ids, made by bpe/testdata/mkgolden.sh), for the tests of every package
// that encodes with GPT-2's tokenizer.
package tiktokenids

import (
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// Read returns the ids of golden file name, found from this source file
// so that any test package can read it whatever its working directory.
func Read(name string) ([]int, error) {
	_, file, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(file), "..", "..", "bpe", "testdata", "golden", name+".gpt2.bin.gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(raw)/2)
	for i := range ids {
		ids[i] = int(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return ids, nil
}
