package corpus

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"unicode"
	"unicode/utf8"

	"github.com/gptg/gptg/internal/inputfile"
)

// MaxDataSize is the largest corpus Load reads, in bytes. Loading holds
// about twice the file in memory (its token ids; see tokenStore), so this
// keeps a wrong data.path from taking the machine's memory.
const MaxDataSize = 1 << 30

// chunkSize is how much of the file each read takes; between chunks the
// loader checks whether it should stop.
const chunkSize = 1 << 20

// maxWordBytes bounds one word of a word corpus.
const maxWordBytes = 1 << 20

// tokenStore holds a corpus's token ids in the narrowest type that fits
// its vocabulary: two bytes each for up to 65,536 tokens, so a character
// corpus takes twice its file size, not the eight times of []int.
type tokenStore struct {
	u16 []uint16
	i32 []int32 // when the vocabulary is larger
}

func newTokenStore(n, vocab int) tokenStore {
	if vocab <= 1<<16 {
		return tokenStore{u16: make([]uint16, 0, n)}
	}
	return tokenStore{i32: make([]int32, 0, n)}
}

func (s *tokenStore) append(id int) {
	if s.u16 != nil {
		s.u16 = append(s.u16, uint16(id))
	} else {
		s.i32 = append(s.i32, int32(id))
	}
}

func (s *tokenStore) len() int { return len(s.u16) + len(s.i32) }

// copyTo copies tokens [start, start+len(dst)) into dst.
func (s *tokenStore) copyTo(dst []int, start int) {
	if s.u16 != nil {
		for i, v := range s.u16[start : start+len(dst)] {
			dst[i] = int(v)
		}
		return
	}
	for i, v := range s.i32[start : start+len(dst)] {
		dst[i] = int(v)
	}
}

// LoadContext is Load that stops, returning ctx's error, when ctx is done.
// It reads the file in chunks, twice (once for the vocabulary, once for
// the ids), so memory stays at the token ids plus one chunk.
func LoadContext(ctx context.Context, path, kind string, context, stride int, split float64) (*Dataset, error) {
	if context < 1 {
		return nil, fmt.Errorf("context must be at least 1, got %d", context)
	}
	if stride < 0 {
		return nil, fmt.Errorf("stride must not be negative, got %d", stride)
	}
	if stride == 0 {
		stride = max(1, context/2)
	}
	// The negated form also rejects NaN.
	if !(split > 0 && split < 1) {
		return nil, fmt.Errorf("split must be between 0 and 1 (exclusive), got %v", split)
	}
	if kind != Char && kind != Word {
		return nil, fmt.Errorf("data file %s: %w", path, unknownKind(kind))
	}
	f, size, err := openText(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	// Pass 1: check the encoding, collect the vocabulary, count the tokens.
	// Characters below U+10000 are noted in a table: a map lookup per
	// character would make this pass several times slower.
	var bmp [1 << 16]bool
	rare := map[rune]bool{}
	words := map[string]bool{}
	n := 0
	err = eachToken(ctx, f, kind, func(tok []byte, r rune) {
		n++
		switch {
		case kind == Word:
			if !words[string(tok)] { // the lookup does not allocate
				words[string(tok)] = true
			}
		case r < 1<<16:
			bmp[r] = true
		default:
			rare[r] = true
		}
	})
	if err != nil {
		return nil, dataError(path, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("data file %s: text has no %s tokens to build a vocabulary from", path, kind)
	}
	var tokens []string
	for r, ok := range bmp {
		if ok {
			tokens = append(tokens, string(rune(r)))
		}
	}
	for r := range rare {
		tokens = append(tokens, string(r))
	}
	for w := range words {
		tokens = append(tokens, w)
	}
	words, rare = nil, nil
	sort.Strings(tokens)
	vocab, err := NewVocab(kind, tokens)
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", path, err)
	}

	// Pass 2: the ids.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("data file %s: %w", path, err)
	}
	store := newTokenStore(n, vocab.Size())
	err = eachToken(ctx, f, kind, func(tok []byte, r rune) {
		store.append(vocab.id(tok, r))
	})
	if err != nil {
		return nil, dataError(path, err)
	}
	if store.len() != n {
		return nil, fmt.Errorf("data file %s changed while being read (%d bytes at first)", path, size)
	}
	d := &Dataset{
		Vocab:   vocab,
		tokens:  store,
		Cut:     cutAt(n, split),
		Context: context,
		Stride:  stride,
	}
	if d.NumTrain() == 0 || d.NumTest() == 0 {
		return nil, fmt.Errorf("data file %s has %d %s tokens; context %d with split %v needs at least %d (one training and one test window)",
			path, n, kind, context, split, minTokens(context, split))
	}
	return d, nil
}

// openText opens a corpus: a non-empty regular file within MaxDataSize.
func openText(path string) (*os.File, int64, error) {
	f, size, err := inputfile.Open(path, MaxDataSize)
	var ie *inputfile.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, 0, fmt.Errorf("data file %s does not exist", path)
	case errors.As(err, &ie):
		return nil, 0, fmt.Errorf("data file %w", err)
	case err != nil:
		return nil, 0, fmt.Errorf("data file %s: %w", path, err)
	case size == 0:
		f.Close()
		return nil, 0, fmt.Errorf("data file %s is empty", path)
	}
	return f, size, nil
}

func dataError(path string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("loading data file %s: %w", path, err)
	}
	return fmt.Errorf("data file %s: %w", path, err)
}

// eachToken calls f with every token of the text r holds (one character,
// with its rune, or one whitespace-separated word as strings.Fields splits
// them, with rune -1), checking that the text is valid UTF-8. tok is only
// valid during the call.
func eachToken(ctx context.Context, r io.Reader, kind string, f func(tok []byte, r rune)) error {
	br := bufio.NewReaderSize(r, chunkSize)
	buf := make([]byte, 0, chunkSize+utf8.UTFMax)
	var word []byte // a word cut by a chunk boundary
	offset := 0     // of buf[0] in the file
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Keep an incomplete rune from the previous chunk at buf's start.
		m, err := io.ReadFull(br, buf[len(buf):chunkSize])
		buf = buf[:len(buf)+m]
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return err
		}
		i := 0
		for i < len(buf) {
			c := buf[i]
			size := 1
			r := rune(c)
			space := false
			if c < utf8.RuneSelf {
				space = c == ' ' || (c >= '\t' && c <= '\r')
			} else {
				if !eof && !utf8.FullRune(buf[i:]) {
					break // the rest of this rune is in the next chunk
				}
				r, size = utf8.DecodeRune(buf[i:])
				if r == utf8.RuneError && size == 1 {
					return fmt.Errorf("text is not valid UTF-8 (bad byte 0x%02x at offset %d)", c, offset+i)
				}
				space = unicode.IsSpace(r)
			}
			if kind == Char {
				f(buf[i:i+size], r)
			} else if space {
				if len(word) > 0 {
					f(word, -1)
					word = word[:0]
				}
			} else {
				if len(word)+size > maxWordBytes {
					return fmt.Errorf("a word at offset %d is longer than %d bytes: not a word corpus", offset+i, maxWordBytes)
				}
				word = append(word, buf[i:i+size]...)
			}
			i += size
		}
		offset += i
		buf = append(buf[:0], buf[i:]...)
		if eof {
			if len(word) > 0 {
				f(word, -1)
			}
			return nil
		}
	}
}
