package corpus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/memlimit"
	"github.com/gptg/gptg/internal/quote"
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

// idBytes is the bytes of one id in a tokenStore of vocab tokens.
func idBytes(vocab int) int {
	if vocab <= 1<<16 {
		return 2
	}
	return 4
}

func newTokenStore(n, vocab int) tokenStore {
	if idBytes(vocab) == 2 {
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

func (s *tokenStore) cap() int { return cap(s.u16) + cap(s.i32) }

// read copies tokens [start, start+len(dst)) into dst; it never fails.
func (s *tokenStore) read(dst []int, start int) error {
	if s.u16 != nil {
		for i, v := range s.u16[start : start+len(dst)] {
			dst[i] = int(v)
		}
		return nil
	}
	for i, v := range s.i32[start : start+len(dst)] {
		dst[i] = int(v)
	}
	return nil
}

// LoadContext is Load that stops, returning ctx's error, when ctx is done.
// It reads the file in chunks, twice (once for the vocabulary, once for
// the ids), so memory stays at the token ids plus one chunk; a BPE
// corpus, whose vocabulary is fixed, once.
func LoadContext(ctx context.Context, path, kind string, context, stride int, split float64) (*Dataset, error) {
	if kind == BPE {
		return nil, fmt.Errorf("data file %s: a learned BPE reads its corpus with its merges (LoadBPE)", quote.Name(path))
	}
	stride, err := checkWindows(path, kind, context, stride, split)
	if err != nil {
		return nil, err
	}
	f, size, err := openText(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	digest := sha256.New()
	var vocab *Vocab
	var store tokenStore
	var n int
	if isBPE(kind) {
		// One pass: the vocabulary is known before the text, and encoding
		// twice to count the tokens first would double the time.
		if vocab, err = NewGPT2Vocab(); err != nil {
			return nil, err
		}
		if store, _, _, err = readBPEIDs(ctx, io.TeeReader(f, digest), path, vocab, -1); err != nil {
			return nil, err
		}
		n = store.len()
	} else {
		// Pass 1: the vocabulary, the number of tokens, and the text's
		// digest, which a run records (Dataset.SHA256).
		if vocab, n, err = readVocab(ctx, io.TeeReader(f, digest), path, kind); err != nil {
			return nil, err
		}
		if store, err = readAgain(ctx, f, path, kind, vocab, n); err != nil {
			return nil, err
		}
		if store.len() != n {
			return nil, fmt.Errorf("data file %s changed while being read (%d bytes at first)", quote.Name(path), size)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("data file %s: text has no %s tokens", quote.Name(path), kind)
	}
	cut := cutAt(n, split)
	d := &Dataset{
		SHA256:  hex.EncodeToString(digest.Sum(nil)),
		Size:    size,
		Vocab:   vocab,
		train:   span{&store, 0, cut},
		test:    span{&store, cut, n - cut},
		held:    n * idBytes(vocab.Size()),
		Cut:     cut,
		Context: context,
		Stride:  stride,
	}
	if d.NumTrain() == 0 || d.NumTest() == 0 {
		return nil, fmt.Errorf("data file %s has %d %s tokens; context %d with split %v needs at least %d (one training and one test window)",
			path, n, kind, context, split, minTokens(context, split))
	}
	return d, nil
}

// readAgain is the second pass over a char or word corpus: the ids of its
// n tokens, held whole.
func readAgain(ctx context.Context, f textFile, path, kind string, vocab *Vocab, n int) (tokenStore, error) {
	// The ids, held whole; they must fit what the process may still take
	// (ulimit -v, a cgroup), or the allocation would end in the runtime's
	// out-of-memory trace.
	need := float64(n) * float64(idBytes(vocab.Size()))
	if err := checkHeadroom(path, n, kind, need); err != nil {
		return tokenStore{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return tokenStore{}, fmt.Errorf("data file %s: %w", quote.Name(path), err)
	}
	return readIDs(ctx, f, path, vocab, n)
}

// checkHeadroom refuses n tokens of kind whose ids take need bytes, more
// than the process may still take.
func checkHeadroom(path string, n int, kind string, need float64) error {
	if h, ok := memlimit.Find(); ok && need > h.Bytes {
		return fmt.Errorf("data file %s: its %d %s tokens take %.0f MiB as ids, more than this process may still use (%.0f MiB, under %s): train on a part of it, or give the process more memory",
			quote.Name(path), n, kind, need/(1<<20), h.Bytes/(1<<20), h.Limit)
	}
	return nil
}

// readBPEIDs encodes a corpus with a BPE vocabulary in one pass, a chunk
// at a time. The ids grow as they come: before the store grows past what
// the process may still take, it stops with checkHeadroom's error. With
// trainFrom at 0 or more it also finds the first cut (bpe.CutBetween) at or
// after byte trainFrom and returns where it is (-1 if the text has none)
// and how many tokens come before it: the two sides of a cut encode alone,
// so those are the first tokens of the whole text.
func readBPEIDs(ctx context.Context, r io.Reader, path string, vocab *Vocab, trainFrom int64) (store tokenStore, trainEnd int64, trainTokens int, err error) {
	store = newTokenStore(0, vocab.Size())
	enc := vocab.bpe.NewStream()
	var tooMany error // checkHeadroom's, which names the file itself
	add := func(ids []int) error {
		if n := store.len() + len(ids); n > store.cap() {
			// What append is about to allocate: the next array, while the
			// old one is still held.
			if tooMany = checkHeadroom(path, n, vocab.kind, float64(2*n*idBytes(vocab.Size()))); tooMany != nil {
				return tooMany
			}
		}
		for _, id := range ids {
			store.append(id)
		}
		return nil
	}
	trainEnd = -1
	var offset int64 // of the chunk in the text
	var prev byte    // the byte before the chunk
	err = eachChunk(ctx, r, func(chunk []byte) error {
		start := offset
		offset += int64(len(chunk))
		if trainFrom >= 0 && trainEnd < 0 && offset > trainFrom {
			for i := max(trainFrom, start, 1) - start; i < int64(len(chunk)); i++ {
				p := prev
				if i > 0 {
					p = chunk[i-1]
				}
				if !bpe.CutBetween(p, chunk[i]) {
					continue
				}
				trainEnd = start + i
				if err := add(enc.Write(chunk[:i])); err != nil {
					return err
				}
				if err := add(enc.Flush()); err != nil {
					return err
				}
				trainTokens = store.len()
				chunk = chunk[i:]
				break
			}
		}
		if len(chunk) > 0 {
			prev = chunk[len(chunk)-1]
		}
		return add(enc.Write(chunk))
	})
	if err == nil {
		err = add(enc.Flush())
	}
	switch {
	case tooMany != nil:
		return tokenStore{}, 0, 0, tooMany
	case err != nil:
		return tokenStore{}, 0, 0, dataError(path, err)
	}
	return store, trainEnd, trainTokens, nil
}

// checkWindows refuses settings that make no windows, before the file is
// opened, and returns the stride (0 means half the context).
func checkWindows(path, kind string, context, stride int, split float64) (int, error) {
	if context < 1 {
		return 0, fmt.Errorf("context must be at least 1, got %d", context)
	}
	if stride < 0 {
		return 0, fmt.Errorf("stride must not be negative, got %d", stride)
	}
	if stride == 0 {
		stride = max(1, context/2)
	}
	// The negated form also rejects NaN.
	if !(split > 0 && split < 1) {
		return 0, fmt.Errorf("split must be between 0 and 1 (exclusive), got %v", split)
	}
	if kind != Char && kind != Word && kind != BPE && !isBPE(kind) {
		return 0, fmt.Errorf("data file %s: %w", quote.Name(path), unknownKind(kind))
	}
	return stride, nil
}

// readVocab reads the text once: it checks the encoding, collects the
// sorted vocabulary and counts the tokens.
func readVocab(ctx context.Context, r io.Reader, path, kind string) (*Vocab, int, error) {
	var tokens []string
	var n int
	var err error
	if kind == Char {
		tokens, n, err = charTokens(ctx, r)
	} else {
		tokens, n, err = wordTokens(ctx, r)
	}
	if err != nil {
		return nil, 0, dataError(path, err)
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("data file %s: text has no %s tokens to build a vocabulary from", quote.Name(path), kind)
	}
	sort.Strings(tokens)
	vocab, err := NewVocab(kind, tokens)
	if err != nil {
		return nil, 0, fmt.Errorf("data file %s: %w", quote.Name(path), err)
	}
	return vocab, n, nil
}

// charTokens lists the distinct characters of r and counts them all.
// Characters below U+10000 are noted in a table: a map lookup per
// character would make this pass several times slower.
func charTokens(ctx context.Context, r io.Reader) ([]string, int, error) {
	var bmp [1 << 16]bool
	rare := map[rune]bool{}
	n := 0
	err := eachChunk(ctx, r, func(chunk []byte) error {
		for i := 0; i < len(chunk); {
			if c := chunk[i]; c < utf8.RuneSelf { // most of any corpus: no decoding
				bmp[c] = true
				i++
			} else {
				r, size := utf8.DecodeRune(chunk[i:])
				if r < 1<<16 {
					bmp[r] = true
				} else {
					rare[r] = true
				}
				i += size
			}
			n++
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
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
	return tokens, n, nil
}

// wordTokens lists the distinct words of r and counts them all.
func wordTokens(ctx context.Context, r io.Reader) ([]string, int, error) {
	words := map[string]bool{}
	n := 0
	err := eachWord(ctx, r, func(w []byte) {
		n++
		if !words[string(w)] && len(words) <= config.MaxVocab { // the lookup does not allocate
			words[string(w)] = true
		}
	})
	if err != nil {
		return nil, 0, err
	}
	// Past the bound the map stops growing (a gigabyte of distinct words
	// would take many gigabytes as a map); the vocabulary is refused here.
	// At the bound the map takes 72 MB (1,048,577 short words, RSS and
	// VmPeak alike): less than the 64 MiB and model every command's own
	// memory check asks of the process's headroom before it reads a corpus.
	if len(words) > config.MaxVocab {
		return nil, 0, fmt.Errorf("text has more than %d distinct words, the most a vocabulary (model.vocab) may have: use the char tokenizer, or a corpus of fewer distinct words", config.MaxVocab)
	}
	tokens := make([]string, 0, len(words))
	for w := range words {
		tokens = append(tokens, w)
	}
	return tokens, n, nil
}

// readIDs reads the text again, as the ids of vocab's n tokens.
func readIDs(ctx context.Context, r io.Reader, path string, vocab *Vocab, n int) (tokenStore, error) {
	store := newTokenStore(n, vocab.Size())
	var err error
	if vocab.kind == Char {
		err = eachChunk(ctx, r, func(chunk []byte) error {
			for i := 0; i < len(chunk); {
				r, size := rune(chunk[i]), 1
				if r >= utf8.RuneSelf {
					r, size = utf8.DecodeRune(chunk[i:])
				}
				store.append(vocab.id(nil, r))
				i += size
			}
			return nil
		})
	} else {
		err = eachWord(ctx, r, func(w []byte) { store.append(vocab.id(w, -1)) })
	}
	if err != nil {
		return tokenStore{}, dataError(path, err)
	}
	return store, nil
}

// textFile is an open corpus: a file, or a corpus built into gptg.
type textFile interface {
	io.ReadSeeker
	io.Closer
}

// openText opens a corpus: a built-in one ("builtin:NAME", see package
// builtin), or a non-empty regular file within MaxDataSize.
func openText(path string) (textFile, int64, error) {
	if name, ok := builtin.Parse(path); ok {
		c, ok := builtin.Lookup(name)
		if !ok {
			return nil, 0, unknownBuiltin(name)
		}
		f, err := builtin.Open(name)
		return f, c.Size, err
	}
	f, size, err := inputfile.Open(path, MaxDataSize)
	var ie *inputfile.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, 0, fmt.Errorf("data file %s does not exist", quote.Name(path))
	case errors.As(err, &ie):
		return nil, 0, fmt.Errorf("data file %w", err)
	case err != nil:
		return nil, 0, fmt.Errorf("data file %s: %w", quote.Name(path), pathless(err))
	case size == 0:
		f.Close()
		return nil, 0, fmt.Errorf("data file %s is empty", quote.Name(path))
	}
	return f, size, nil
}

// isBuiltin reports whether path names a built-in corpus ("builtin:NAME").
func isBuiltin(path string) bool {
	_, ok := builtin.Parse(path)
	return ok
}

// unknownBuiltin names the built-in corpora there are.
func unknownBuiltin(name string) error {
	return fmt.Errorf("there is no built-in corpus %q (built in: %s)", name, strings.Join(builtin.Names(), ", "))
}

func dataError(path string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("loading data file %s: %w", quote.Name(path), err)
	}
	return fmt.Errorf("data file %s: %w", quote.Name(path), err)
}

// ErrNotUTF8 is EachChunk's error for text that is not UTF-8.
var ErrNotUTF8 = errors.New("text is not valid UTF-8")

// EachChunk calls f with the text r holds, a chunk of about a megabyte at
// a time, each valid UTF-8 ending on a character boundary, and returns an
// error naming the offset of the first byte that is not UTF-8 ("text is
// not valid UTF-8 (bad byte 0xff at offset 7)"): for a command reading a
// text of any length as corpus loading does.
func EachChunk(ctx context.Context, r io.Reader, f func(chunk []byte) error) error {
	return eachChunk(ctx, r, f)
}

// eachChunk calls f with the text r holds, a chunk at a time, each chunk
// valid UTF-8 ending on a character boundary, and returns an error naming
// the offset of the first invalid byte. Between chunks it returns ctx's
// error when ctx is done.
func eachChunk(ctx context.Context, r io.Reader, f func(chunk []byte) error) error {
	buf := make([]byte, 0, chunkSize+utf8.UTFMax)
	offset := 0 // of buf[0] in the file
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// An incomplete character from the previous chunk is at buf's start.
		m, err := io.ReadFull(r, buf[len(buf):chunkSize])
		buf = buf[:len(buf)+m]
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return err
		}
		end := len(buf)
		if !eof { // hold back a character cut by the chunk's end
			for back := 1; back < utf8.UTFMax && back <= end; back++ {
				if c := buf[end-back]; c >= 0xC0 { // a leading byte
					if !utf8.FullRune(buf[end-back:]) {
						end -= back
					}
					break
				} else if c < 0x80 {
					break
				}
			}
		}
		if !utf8.Valid(buf[:end]) {
			for i := 0; i < end; {
				r, size := utf8.DecodeRune(buf[i:end])
				if r == utf8.RuneError && size == 1 {
					return fmt.Errorf("%w (bad byte 0x%02x at offset %d)", ErrNotUTF8, buf[i], offset+i)
				}
				i += size
			}
		}
		if err := f(buf[:end]); err != nil {
			return err
		}
		offset += end
		buf = append(buf[:0], buf[end:]...)
		if eof {
			return nil
		}
	}
}

// eachWord calls f with every whitespace-separated word of the text r
// holds, split as strings.Fields splits (unicode.IsSpace); w is only valid
// during the call.
func eachWord(ctx context.Context, r io.Reader, f func(w []byte)) error {
	var word []byte // a word cut by a chunk boundary is carried over here
	err := eachChunk(ctx, r, func(chunk []byte) error {
		start := 0 // of the current word in chunk, when word is empty
		inWord := len(word) > 0
		for i := 0; i < len(chunk); {
			c := chunk[i]
			size, space := 1, false
			if c < utf8.RuneSelf {
				space = c == ' ' || (c >= '\t' && c <= '\r')
			} else {
				var r rune
				r, size = utf8.DecodeRune(chunk[i:])
				space = unicode.IsSpace(r)
			}
			switch {
			case space && inWord:
				if len(word) > 0 {
					word = append(word, chunk[start:i]...)
					f(word)
					word = word[:0]
				} else {
					f(chunk[start:i])
				}
				inWord = false
			case !space && !inWord:
				start, inWord = i, true
			}
			i += size
		}
		if inWord { // carried into the next chunk
			if len(word) == 0 {
				word = append(word, chunk[start:]...)
			} else {
				word = append(word, chunk...)
			}
			if len(word) > maxWordBytes {
				return fmt.Errorf("a word longer than %d bytes: not a word corpus", maxWordBytes)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(word) > 0 {
		f(word)
	}
	return nil
}

// pathless is err without the path an *fs.PathError repeats (the message
// names the file already, quoted).
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
