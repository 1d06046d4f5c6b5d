package corpus

import (
	"context"
	"fmt"

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
		return nil, fmt.Errorf("data file %s has no space, tab or newline after a character that is not one from byte %d (split %v of %d) on, where the training split of tokenizer = \"bpe\" can end: the test split would be empty",
			quote.Name(path), c.Limit, split, size)
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
