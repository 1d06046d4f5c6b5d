// Package tokenfile reads and writes nanoGPT's token files (the train.bin
// and val.bin of its data/*/prepare.py): token ids as little-endian
// uint16, two bytes each, nothing else — no header, no length, no
// vocabulary (that is meta.pkl's, or the tokenizer's).
//
// A token file is never read whole. OpenWebText's train.bin is 17 GB, and
// training reads a window of context+1 tokens at a time: File reads the
// windows it is asked for with ReadAt, and Check, the one pass over the
// whole file, streams it a chunk at a time. Memory stays at a chunk,
// whatever the file's size. (Not a memory map: under ulimit -v a map takes
// address space for the whole file, and a file cut short under a map ends
// the process with SIGBUS instead of an error.)
package tokenfile

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
)

// IDBytes is the bytes of one token id in a file.
const IDBytes = 2

// MaxVocab is the largest vocabulary whose ids fit a token file: ids are
// 0 … 65535.
const MaxVocab = 1 << 16

// chunkTokens is how many ids Check reads at once (1 MiB).
const chunkTokens = 1 << 19

// Error is a token file refused: missing, not a regular file, empty, of
// odd length, holding an id the vocabulary does not have. Bad input: the
// message names the file and reads as one line.
type Error struct {
	Path, Problem string
}

func (e *Error) Error() string { return "token file " + quote.Name(e.Path) + " " + e.Problem }

// File is an open token file.
type File struct {
	f    *os.File
	path string
	n    int64 // tokens
}

// Open opens the token file at path: a regular file (not a directory, a
// FIFO, a device), not empty, of an even number of bytes.
func Open(path string) (*File, error) {
	f, size, err := inputfile.Open(path, 0)
	var ie *inputfile.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Error{path, "does not exist"}
	case errors.As(err, &ie):
		return nil, &Error{path, ie.Problem}
	case err != nil:
		return nil, &Error{path, pathless(err).Error()}
	}
	switch {
	case size == 0:
		err = &Error{path, "is empty"}
	case size%IDBytes != 0:
		err = &Error{path, fmt.Sprintf("has %d bytes, an odd number: a token file holds 2-byte ids (little-endian uint16, as nanoGPT's prepare.py writes them), so this one is cut short or is not a token file", size)}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{f: f, path: path, n: size / IDBytes}, nil
}

// Path is the path the file was opened as.
func (t *File) Path() string { return t.path }

// Len is the number of tokens in the file.
func (t *File) Len() int64 { return t.n }

// Size is the file's size in bytes.
func (t *File) Size() int64 { return t.n * IDBytes }

// Close closes the file.
func (t *File) Close() error { return t.f.Close() }

// ReadAt fills dst with the ids of tokens start … start+len(dst)-1. A
// range past the end is a caller's error; a file that has shrunk since
// it was opened is reported as such.
func (t *File) ReadAt(dst []uint16, start int64) error {
	if start < 0 || start+int64(len(dst)) > t.n {
		return fmt.Errorf("token file %s: tokens %d … %d are past its %d tokens", quote.Name(t.path), start, start+int64(len(dst))-1, t.n)
	}
	var buf [4096]byte
	for len(dst) > 0 {
		k := min(len(dst), len(buf)/IDBytes)
		b := buf[:k*IDBytes]
		if _, err := t.f.ReadAt(b, start*IDBytes); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("token file %s ended before token %d: it changed while being read", quote.Name(t.path), start+int64(k))
			}
			return fmt.Errorf("token file %s: %w", quote.Name(t.path), pathless(err))
		}
		for i := range k {
			dst[i] = binary.LittleEndian.Uint16(b[i*IDBytes:])
		}
		dst, start = dst[k:], start+int64(k)
	}
	return nil
}

// Check reads the whole file once, a chunk at a time, and returns its
// SHA-256 (hex), refusing the first id that is not below vocab with an
// *Error naming its place. Between chunks it returns ctx's error when ctx
// is done: a file of gigabytes takes seconds.
func (t *File) Check(ctx context.Context, vocab int) (string, error) {
	h := sha256.New()
	buf := make([]byte, chunkTokens*IDBytes)
	for at := int64(0); at < t.n; {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("reading token file %s: %w", quote.Name(t.path), err)
		}
		b := buf[:min(int64(chunkTokens), t.n-at)*IDBytes]
		if _, err := t.f.ReadAt(b, at*IDBytes); err != nil {
			if errors.Is(err, io.EOF) {
				return "", fmt.Errorf("token file %s ended before token %d: it changed while being read", quote.Name(t.path), at+int64(len(b)/IDBytes))
			}
			return "", fmt.Errorf("token file %s: %w", quote.Name(t.path), pathless(err))
		}
		h.Write(b)
		if vocab < MaxVocab {
			for i := 0; i < len(b); i += IDBytes {
				if id := binary.LittleEndian.Uint16(b[i:]); int(id) >= vocab {
					tok := at + int64(i/IDBytes)
					return "", &Error{t.path, fmt.Sprintf("holds id %d at token %d (byte offset %d), not below the vocabulary's %d tokens: it was made with another tokenizer, or is not a token file",
						id, tok, tok*IDBytes, vocab)}
				}
			}
		}
		at += int64(len(b) / IDBytes)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Write writes ids as a token file at path, atomically (internal/
// atomicfile: a reader or a crash sees the old file or the new one). An
// id outside 0 … 65535 is an error, and nothing is written.
func Write(path string, ids []int) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Encode(w, ids) })
}

// Encode writes ids to w in a token file's form.
func Encode(w io.Writer, ids []int) error {
	var buf [4096]byte
	for len(ids) > 0 {
		k := min(len(ids), len(buf)/IDBytes)
		for i, id := range ids[:k] {
			if id < 0 || id >= MaxVocab {
				return fmt.Errorf("token id %d does not fit a token file (ids are 0 … %d)", id, MaxVocab-1)
			}
			binary.LittleEndian.PutUint16(buf[i*IDBytes:], uint16(id))
		}
		if _, err := w.Write(buf[:k*IDBytes]); err != nil {
			return err
		}
		ids = ids[k:]
	}
	return nil
}

// pathless is err without the path an *fs.PathError repeats (the message
// names the file already).
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
