package corpus

import (
	gocontext "context"
	"math"
)

// Dataset is a tokenized corpus cut into training and test windows.
//
// Windows are not materialized: window i of the training split starts at
// token i*Stride, window i of the test split at Cut + i*Stride. A window's
// inputs are the Context tokens from its start, its targets the same tokens
// shifted by one.
type Dataset struct {
	SHA256  string // hex digest of the text as read: a run records it
	Size    int64  // bytes of the text
	Vocab   *Vocab
	tokens  tokenStore // the whole text, encoded
	Cut     int        // tokens [0, Cut) are the training split, the rest the test split
	Context int        // tokens per window (the model's T)
	Stride  int        // tokens between the starts of consecutive windows
}

// NumTokens is the length of the encoded text.
func (d *Dataset) NumTokens() int { return d.tokens.len() }

// IDBytes is the bytes the dataset keeps per token: 2 up to 65,536
// distinct tokens, else 4.
func (d *Dataset) IDBytes() int {
	if d.tokens.u16 != nil {
		return 2
	}
	return 4
}

// Tokens returns the encoded text (a copy, for tests and tools: the
// dataset itself stores it compactly).
func (d *Dataset) Tokens() []int {
	out := make([]int, d.tokens.len())
	d.tokens.copyTo(out, 0)
	return out
}

// Head returns the first n tokens of the text (fewer if it is shorter).
func (d *Dataset) Head(n int) []int {
	out := make([]int, min(n, d.tokens.len()))
	d.tokens.copyTo(out, 0)
	return out
}

// Load reads a UTF-8 text file and cuts it like the reference's split_data:
// cut = int(len(tokens) * split), windows over each side separately. A
// stride of 0 means context/2 (at least 1). Every error names the path.
// The file must be a regular file of at most MaxDataSize bytes.
func Load(path, kind string, context, stride int, split float64) (*Dataset, error) {
	return LoadContext(gocontext.Background(), path, kind, context, stride, split)
}

// cutAt is Python's int(n * split): the float64 product truncated, which
// matches the reference bit for bit.
func cutAt(n int, split float64) int { return int(float64(n) * split) }

// numWindows is the reference's max(0, (n - context - 1 + stride - 1) // stride):
// windows start at 0, stride, 2*stride, ... while start < n - context - 1.
// (The last usable token is left out, as in the reference.)
func numWindows(n, context, stride int) int {
	// ceil(span/stride) without adding stride to span: a stride near
	// 2^63 would overflow into "no window" and a wrong message.
	span := n - context - 1
	if span <= 0 {
		return 0
	}
	return (span-1)/stride + 1
}

// minTokens is the smallest corpus with one window on each side of the cut,
// for the error message. A side of n tokens has a window when n > context+1.
// The training side floor(n*split) reaches need only once n >= need/split;
// the test side n-floor(n*split) is below n*(1-split)+1. So no smaller n can
// work than the bound below, and a short search from it finds the answer.
func minTokens(context int, split float64) int {
	need := context + 2
	bound := math.Max(float64(need)/split, float64(need-1)/(1-split))
	n := max(2*need, int(math.Min(bound, 1<<50))-1)
	// The cap only matters for absurd splits such as 1e-12.
	for range 1 << 20 {
		cut := cutAt(n, split)
		if cut >= need && n-cut >= need {
			break
		}
		n++
	}
	return n
}
