package corpus

import (
	"fmt"
	"math/rand/v2"
)

// NumTrain is the number of training windows.
func (d *Dataset) NumTrain() int { return numWindows(d.train.n, d.Context, d.Stride) }

// NumTest is the number of test windows.
func (d *Dataset) NumTest() int { return numWindows(d.test.n, d.Context, d.Stride) }

// TestBatches is the number of whole test batches of the given size; the
// reference's test loss drops the incomplete last batch.
func (d *Dataset) TestBatches(batch int) int {
	if batch < 1 {
		return 0
	}
	return d.NumTest() / batch
}

// TrainBatch fills x and y, each len(windows)*Context long, with the inputs
// and targets of the given training windows, row after row (B×T, row-major).
// It does not allocate, so a training loop can reuse its buffers. Wrong
// lengths or window indices are programming errors and panic; the error is
// a token file's that could not be read (a text corpus is in memory).
func (d *Dataset) TrainBatch(x, y, windows []int) error {
	return d.fill(x, y, windows, d.NumTrain(), d.train, "training")
}

// TestBatch is TrainBatch for test windows.
func (d *Dataset) TestBatch(x, y, windows []int) error {
	return d.fill(x, y, windows, d.NumTest(), d.test, "test")
}

// fill copies windows of one split; that split's window w starts at its
// token w*Stride and n is its number of windows.
func (d *Dataset) fill(x, y, windows []int, n int, split span, name string) error {
	t := d.Context
	if len(x) != len(windows)*t || len(y) != len(windows)*t {
		panic(fmt.Sprintf("corpus: %s batch of %d windows needs x and y of %d tokens, got %d and %d",
			name, len(windows), len(windows)*t, len(x), len(y)))
	}
	for b, w := range windows {
		if w < 0 || w >= n {
			panic(fmt.Sprintf("corpus: %s window %d out of range [0, %d)", name, w, n))
		}
		if err := split.window(x[b*t:(b+1)*t], y[b*t:(b+1)*t], w*d.Stride); err != nil {
			return err
		}
	}
	return nil
}

// RandomBatch fills x and y (B×T each) with B windows starting at offsets
// drawn uniformly from rng, as nanoGPT's get_batch: any start in the
// training split (the test split when test is set) from which Context+1
// tokens remain. It panics when the split is shorter than that; the error
// is a token file's that could not be read.
func (d *Dataset) RandomBatch(x, y []int, test bool, rng *rand.Rand) error {
	split := d.train
	if test {
		split = d.test
	}
	t := d.Context
	starts := split.n - t // offsets 0 .. starts-1 leave t+1 tokens
	if starts < 1 || len(x) != len(y) || len(x)%t != 0 {
		panic(fmt.Sprintf("corpus: random batch of %d tokens from a split of %d tokens, context %d", len(x), split.n, t))
	}
	for b := 0; b < len(x)/t; b++ {
		if err := split.window(x[b*t:(b+1)*t], y[b*t:(b+1)*t], rng.IntN(starts)); err != nil {
			return err
		}
	}
	return nil
}

// TrainTokens is the number of tokens of the training split.
func (d *Dataset) TrainTokens() int { return d.Cut }
