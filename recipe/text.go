package recipe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/tokenfile"
)

// maxText is the largest text FromText reads: its ids must fit the
// token files, and 2⁴⁰ bytes is far past any corpus a CPU trains on.
const maxText = 1 << 40

// FromText writes the token files of the UTF-8 text at path as nanoGPT's
// prepare.py scripts write theirs for their own texts: the first
// int(n*split) characters (n the text's characters) and the rest, each
// encoded with GPT-2's tokenizer on its own, at trainPath and valPath
// (both or neither, as Write). The shakespeare recipe is this on
// tiny-shakespeare with split 0.9.
//
// A text of any length is read twice a megabyte at a time — once to check
// it is UTF-8 and count its characters, once to encode it — and its ids
// written as they come: memory does not grow with the text. progress, if
// not nil, is told the bytes read of both passes (done of total) and may
// stop the work by returning an error.
func FromText(ctx context.Context, path string, split float64, trainPath, valPath string, progress func(done, total int) error) (Counts, error) {
	if !(split > 0 && split < 1) {
		return Counts{}, fmt.Errorf("split must be between 0 and 1 (exclusive), got %v", split)
	}
	enc, err := bpe.GPT2()
	if err != nil {
		return Counts{}, err
	}
	f, size, err := openText(path)
	if err != nil {
		return Counts{}, err
	}
	defer f.Close()
	total := 2 * int(size)
	done := 0
	tell := func(n int) error {
		done += n
		if progress == nil {
			return nil
		}
		return progress(done, total)
	}

	chars := 0
	err = corpus.EachChunk(ctx, f, func(chunk []byte) error {
		chars += utf8.RuneCount(chunk)
		return tell(len(chunk))
	})
	if err != nil {
		return Counts{}, textError(path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Counts{}, fmt.Errorf("%s: %w", quote.Name(path), err)
	}
	keep := charsKept(chars, split)

	var n Counts
	err = atomicfile.Write(trainPath, func(tw io.Writer) error {
		return atomicfile.Write(valPath, func(vw io.Writer) error {
			train, val := newIDWriter(tw, enc, &n.Train), newIDWriter(vw, enc, &n.Val)
			err := corpus.EachChunk(ctx, f, func(chunk []byte) error {
				read := len(chunk)
				if keep > 0 {
					cut := byteOfChar(chunk, keep)
					keep -= utf8.RuneCount(chunk[:cut])
					if err := train.write(chunk[:cut]); err != nil {
						return err
					}
					if keep == 0 {
						if err := train.flush(); err != nil {
							return err
						}
					}
					chunk = chunk[cut:]
				}
				if err := val.write(chunk); err != nil {
					return err
				}
				return tell(read)
			})
			if err != nil {
				return textError(path, err)
			}
			if keep > 0 { // the text ended before the cut: only a file changed under us does that
				return fmt.Errorf("%s changed while it was read", quote.Name(path))
			}
			if err := val.flush(); err != nil {
				return err
			}
			if n.Train == 0 || n.Val == 0 {
				return &inputfile.Error{Path: path, Problem: fmt.Sprintf("is too short for split %v: %d training and %d validation tokens, and each token file needs at least one", split, n.Train, n.Val)}
			}
			return nil
		})
	})
	return n, err
}

// idWriter encodes one split's text a part at a time into a token file.
type idWriter struct {
	s     *bpe.Stream
	w     *bufio.Writer
	count *int
}

func newIDWriter(w io.Writer, enc *bpe.Tokenizer, count *int) *idWriter {
	return &idWriter{s: enc.NewStream(), w: bufio.NewWriterSize(w, 1<<20), count: count}
}

func (iw *idWriter) write(text []byte) error { return iw.put(iw.s.Write(text)) }

// flush encodes what the stream held back and writes out the buffer.
func (iw *idWriter) flush() error {
	if err := iw.put(iw.s.Flush()); err != nil {
		return err
	}
	return iw.w.Flush()
}

func (iw *idWriter) put(ids []int) error {
	*iw.count += len(ids)
	return tokenfile.Encode(iw.w, ids)
}

// byteOfChar is the offset in chunk (valid UTF-8) of its character number
// keep, or len(chunk) when it has fewer.
func byteOfChar(chunk []byte, keep int) int {
	for i := 0; i < len(chunk); {
		if keep == 0 {
			return i
		}
		_, size := utf8.DecodeRune(chunk[i:])
		i += size
		keep--
	}
	return len(chunk)
}

// openText opens a text to read twice: a regular file (not a FIFO or a
// device, inputfile's rule), not empty.
func openText(path string) (*os.File, int64, error) {
	f, size, err := inputfile.Open(path, maxText)
	var ie *inputfile.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, 0, &inputfile.Error{Path: path, Problem: "does not exist"}
	case errors.As(err, &ie):
		return nil, 0, err
	case err != nil:
		return nil, 0, fmt.Errorf("%s: %w", quote.Name(path), err)
	case size == 0:
		f.Close()
		return nil, 0, &inputfile.Error{Path: path, Problem: "is empty"}
	}
	return f, size, nil
}

// textError names the file in an error of reading it (corpus.ErrNotUTF8
// stays visible to errors.Is).
func textError(path string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%s: %w", quote.Name(path), err)
}
