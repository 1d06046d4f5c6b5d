package corpus

import "fmt"

// NumTrain is the number of training windows.
func (d *Dataset) NumTrain() int { return numWindows(d.Cut, d.Context, d.Stride) }

// NumTest is the number of test windows.
func (d *Dataset) NumTest() int { return numWindows(d.tokens.len()-d.Cut, d.Context, d.Stride) }

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
// lengths or window indices are programming errors and panic.
func (d *Dataset) TrainBatch(x, y, windows []int) {
	d.fill(x, y, windows, d.NumTrain(), 0, "training")
}

// TestBatch is TrainBatch for test windows.
func (d *Dataset) TestBatch(x, y, windows []int) {
	d.fill(x, y, windows, d.NumTest(), d.Cut, "test")
}

// fill copies windows of one split; that split's window w starts at
// base + w*Stride and n is its number of windows.
func (d *Dataset) fill(x, y, windows []int, n, base int, split string) {
	t := d.Context
	if len(x) != len(windows)*t || len(y) != len(windows)*t {
		panic(fmt.Sprintf("corpus: %s batch of %d windows needs x and y of %d tokens, got %d and %d",
			split, len(windows), len(windows)*t, len(x), len(y)))
	}
	for b, w := range windows {
		if w < 0 || w >= n {
			panic(fmt.Sprintf("corpus: %s window %d out of range [0, %d)", split, w, n))
		}
		s := base + w*d.Stride
		d.tokens.copyTo(x[b*t:(b+1)*t], s)
		d.tokens.copyTo(y[b*t:(b+1)*t], s+1)
	}
}
