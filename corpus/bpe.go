package corpus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/internal/memlimit"
	"github.com/gptg/gptg/internal/quote"
)

// LearnedBPE is a byte-level BPE learned on a corpus's training split.
type LearnedBPE struct {
	Merges [][2]int // in order: merge i makes id 256+i
	Counts []int    // how often merge i's pair occurred when it was merged
	// TrainBytes is the training split the merges were learned on: the
	// first split of the text's bytes, to the first cut after them (a
	// space, tab or newline after a character that is not one; see
	// bpe.LastCut), so that the training split's tokens are exactly the
	// tokens of these bytes.
	TrainBytes int64
	Pieces     int // distinct pieces of the training split
}

// trainBytes is where the training split of a text of size bytes ends
// before it is moved to a cut: Python's int(size * split), as the token
// split of the other tokenizers is cut (cutAt), and at least one byte.
func trainBytes(size int64, split float64) int64 {
	return max(1, int64(float64(size)*split))
}

// LearnBPE learns vocabSize-256 merges on the training split of the corpus
// at path (a file or builtin:NAME): its first split of bytes, moved to the
// next cut (LearnedBPE.TrainBytes). The text is read a chunk at a
// time and only as far as the training split goes. progress, when not
// nil, sees the merges done and to do, and stops learning with an error
// (bpe.Learn).
func LearnBPE(ctx context.Context, path string, vocabSize int, split float64, progress func(done, total int) error) (*LearnedBPE, error) {
	if !(split > 0 && split < 1) {
		return nil, fmt.Errorf("split must be between 0 and 1 (exclusive), got %v", split)
	}
	f, size, err := openText(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := bpe.PieceCounter{Limit: trainBytes(size, split)}
	err = eachChunk(ctx, f, func(chunk []byte) error {
		if !c.Full() {
			c.Add(chunk)
		}
		return nil
	})
	if err != nil {
		return nil, dataError(path, err)
	}
	counts := c.Counts()
	if !c.Full() {
		return nil, noCut(path, c.Limit, split, size)
	}
	merges, mergeCounts, err := bpe.LearnCounts(counts, vocabSize, func(done, total int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if progress != nil {
			return progress(done, total)
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("learning the merges of %s: %w", quote.Name(path), err)
	}
	if err != nil {
		return nil, fmt.Errorf("data file %s: learning data.vocab_size = %d tokens on its training split (%d bytes): %w",
			quote.Name(path), vocabSize, c.End(), err)
	}
	return &LearnedBPE{Merges: merges, Counts: mergeCounts, TrainBytes: c.End(), Pieces: len(counts)}, nil
}

// maxLearnedBytes bounds the bytes of all the tokens of a learned BPE,
// which a model file's merges decide: 30 merges, each of the previous
// token with itself, would ask for a gigabyte. A vocabulary learned on
// any text takes a few hundred kilobytes.
const maxLearnedBytes = 64 << 20

// NewLearnedVocab is the vocabulary of a learned BPE's merges (LearnBPE,
// or a model file's): byte b is id b, merge i makes id 256+i.
func NewLearnedVocab(merges [][2]int) (*Vocab, error) {
	// The tokens' lengths first, in numbers, so that merges naming ids
	// not yet made or building huge tokens are refused before any token
	// is built.
	lengths := make([]int64, bpe.MinVocab, bpe.MinVocab+len(merges))
	for b := range lengths {
		lengths[b] = 1
	}
	total := int64(bpe.MinVocab)
	for i, m := range merges {
		id := bpe.MinVocab + i
		if m[0] < 0 || m[0] >= id || m[1] < 0 || m[1] >= id {
			return nil, fmt.Errorf("merge %d (%d, %d) names an id not made before it (ids 0..%d are)", i, m[0], m[1], id-1)
		}
		n := lengths[m[0]] + lengths[m[1]]
		if total += n; total > maxLearnedBytes {
			return nil, fmt.Errorf("the tokens of the merges take more than %d MiB in all (merge %d makes one of %d bytes): no text learns such merges", maxLearnedBytes>>20, i, n)
		}
		lengths = append(lengths, n)
	}
	tok, err := bpe.NewLearned(merges)
	if err != nil {
		return nil, err
	}
	tokens := make([]string, tok.Size())
	for id := range tokens {
		tokens[id] = string(tok.Piece(id))
	}
	return &Vocab{kind: BPE, bpe: tok, merges: append([][2]int(nil), merges...), tokens: tokens}, nil
}

// LoadBPE reads the corpus at path as the ids of vocab, a learned BPE,
// cut into windows like LoadContext. The training split is the tokens of
// the text up to the first cut at or after its first split of bytes
// (LearnedBPE.TrainBytes: the text the merges were learned on when they
// were learned on this corpus), the test split the tokens after it. The
// text is read once, a chunk at a time.
func LoadBPE(ctx context.Context, path string, vocab *Vocab, context, stride int, split float64) (*Dataset, error) {
	if vocab.kind != BPE {
		return nil, fmt.Errorf("LoadBPE needs a learned BPE vocabulary, not %q", vocab.kind)
	}
	stride, err := checkWindows(path, BPE, context, stride, split)
	if err != nil {
		return nil, err
	}
	f, size, err := openText(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	digest := sha256.New()
	r := bpeReader{path: path, vocab: vocab, trainEnd: -1, from: trainBytes(size, split)}
	r.store = newTokenStore(0, vocab.Size())
	err = eachChunk(ctx, io.TeeReader(f, digest), r.chunk)
	if err == nil {
		err = r.add(r.flush())
	}
	switch {
	case r.tooMany != nil:
		return nil, r.tooMany
	case err != nil:
		return nil, dataError(path, err)
	case r.offset != size:
		return nil, fmt.Errorf("data file %s changed while being read (%d bytes at first)", quote.Name(path), size)
	case r.trainEnd < 0:
		return nil, noCut(path, r.from, split, size)
	}
	d := &Dataset{
		SHA256:  hex.EncodeToString(digest.Sum(nil)),
		Size:    size,
		Vocab:   vocab,
		tokens:  r.store,
		Cut:     r.cut,
		Context: context,
		Stride:  stride,
	}
	if d.NumTrain() == 0 || d.NumTest() == 0 {
		return nil, fmt.Errorf("data file %s has %d bpe tokens, %d in the training split (its first %d bytes) and %d in the test split; context %d needs more than %d on each side (one window)",
			quote.Name(path), d.NumTokens(), d.Cut, r.trainEnd, d.NumTokens()-d.Cut, context, context+1)
	}
	return d, nil
}

func noCut(path string, from int64, split float64, size int64) error {
	return fmt.Errorf("data file %s has no space, tab or newline after a character that is not one from byte %d (split %v of %d) on, where the training split of tokenizer = \"bpe\" can end: the test split would be empty",
		quote.Name(path), from, split, size)
}

// bpeReader is LoadBPE's pass over the text: it encodes a chunk at a time
// up to the chunk's last cut (bpe.LastCut), keeping the rest for the next,
// and notes how many tokens come before the training split's end.
type bpeReader struct {
	path     string
	vocab    *Vocab
	store    tokenStore
	pending  []byte // the text after the last cut encoded
	ids      []int
	offset   int64 // bytes of the text seen
	prev     byte  // the byte before the chunk
	from     int64 // the training split ends at the first cut at or after it
	trainEnd int64 // where it ends, -1 until found
	cut      int   // tokens before trainEnd
	tooMany  error // the ids would outgrow what the process may take
}

func (r *bpeReader) chunk(chunk []byte) error {
	start := r.offset
	r.offset += int64(len(chunk))
	if r.trainEnd < 0 && r.offset > r.from {
		for i := max(r.from, start, 1) - start; i < int64(len(chunk)); i++ {
			prev := r.prev
			if i > 0 {
				prev = chunk[i-1]
			}
			if bpe.CutBetween(prev, chunk[i]) {
				r.trainEnd = start + i
				// The split's end is a cut: its two sides encode alone.
				if err := r.add(r.write(chunk[:i])); err != nil {
					return err
				}
				if err := r.add(r.flush()); err != nil {
					return err
				}
				r.cut = r.store.len()
				chunk = chunk[i:]
				break
			}
		}
	}
	if len(chunk) > 0 {
		r.prev = chunk[len(chunk)-1]
	}
	return r.add(r.write(chunk))
}

// write adds p to the text and returns the ids of the text up to its last
// cut not returned yet.
func (r *bpeReader) write(p []byte) []int {
	r.pending = append(r.pending, p...)
	end := bpe.LastCut(string(r.pending))
	if end == 0 {
		return nil
	}
	r.ids = r.vocab.bpe.AppendEncode(r.ids[:0], string(r.pending[:end]))
	r.pending = r.pending[:copy(r.pending, r.pending[end:])]
	return r.ids
}

// flush returns the ids of the rest of the text.
func (r *bpeReader) flush() []int {
	r.ids = r.vocab.bpe.AppendEncode(r.ids[:0], string(r.pending))
	r.pending = r.pending[:0]
	return r.ids
}

// add appends ids to the store; before the store grows past what the
// process may still take, it stops with an error naming the file.
func (r *bpeReader) add(ids []int) error {
	if n := r.store.len() + len(ids); n > r.store.cap() {
		// What append is about to allocate, while the old array is held.
		need := float64(2 * n * idBytes(r.vocab.Size()))
		if h, ok := memlimit.Find(); ok && need > h.Bytes {
			r.tooMany = fmt.Errorf("data file %s: its first %d bpe tokens take %.0f MiB as ids, more than this process may still use (%.0f MiB, under %s): train on a part of it, or give the process more memory",
				quote.Name(r.path), n, need/(1<<20), h.Bytes/(1<<20), h.Limit)
			return r.tooMany
		}
	}
	for _, id := range ids {
		r.store.append(id)
	}
	return nil
}
