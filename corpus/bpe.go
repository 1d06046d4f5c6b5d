package corpus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/gptg/gptg/bpe"
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
	v := newBPEVocab(BPE, tok)
	v.merges = append([][2]int(nil), merges...)
	return v, nil
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
	from := trainBytes(size, split)
	store, trainEnd, cut, err := readBPEIDs(ctx, io.TeeReader(f, digest), path, vocab, from)
	switch {
	case err != nil:
		return nil, err
	case trainEnd < 0:
		return nil, noCut(path, from, split, size)
	}
	d := &Dataset{
		SHA256:  hex.EncodeToString(digest.Sum(nil)),
		Size:    size,
		Vocab:   vocab,
		train:   span{&store, 0, cut},
		test:    span{&store, cut, store.len() - cut},
		held:    store.len() * idBytes(vocab.Size()),
		Cut:     cut,
		Context: context,
		Stride:  stride,
	}
	if d.NumTrain() == 0 || d.NumTest() == 0 {
		return nil, fmt.Errorf("data file %s has %d bpe tokens, %d in the training split (its first %d bytes) and %d in the test split; context %d needs more than %d on each side (one window)",
			quote.Name(path), d.NumTokens(), d.Cut, trainEnd, d.NumTokens()-d.Cut, context, context+1)
	}
	return d, nil
}

func noCut(path string, from int64, split float64, size int64) error {
	return fmt.Errorf("data file %s has no space, tab or newline after a character that is not one from byte %d (split %v of %d) on, where the training split of tokenizer = \"bpe\" can end: the test split would be empty",
		quote.Name(path), from, split, size)
}
