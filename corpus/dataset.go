package corpus

import (
	gocontext "context"
	"io"
	"math"

	"github.com/gptg/gptg/config"
)

// Dataset is a tokenized corpus cut into training and test windows.
//
// Windows are not materialized: window i of the training split starts at
// its token i*Stride, window i of the test split likewise. A window's
// inputs are the Context tokens from its start, its targets the same tokens
// shifted by one.
//
// A text corpus is one run of tokens held in memory, its training split
// the first Cut of them and its test split the rest. A corpus of token
// files (data.format = "tokens", LoadTokens) is two files, the training
// split one and the test split the other, read a window at a time.
type Dataset struct {
	SHA256 string // hex digest of the text (the training token file) as read: a run records it
	Size   int64  // bytes of the text (the training token file)
	// ValSHA256 and ValSize are the test split's token file's, for a
	// corpus of token files ("" and 0 for a text).
	ValSHA256 string
	ValSize   int64
	Vocab     *Vocab
	train     span // the training split's tokens
	test      span // the test split's tokens
	held      int  // bytes of ids held in memory
	closers   []io.Closer
	Cut       int // tokens of the training split: the text's tokens [0, Cut)
	Context   int // tokens per window (the model's T)
	Stride    int // tokens between the starts of consecutive windows
}

// tokenSource holds a corpus's token ids, or reads them from a file.
type tokenSource interface {
	// read copies tokens [start, start+len(dst)) into dst.
	read(dst []int, start int) error
}

// span is the tokens [base, base+n) of a source: one split.
type span struct {
	src     tokenSource
	base, n int
}

// window reads the window that starts at the split's token start: its
// inputs into x, its targets (the same tokens shifted by one) into y.
func (s span) window(x, y []int, start int) error {
	if err := s.src.read(x, s.base+start); err != nil {
		return err
	}
	copy(y, x[1:])
	return s.src.read(y[len(y)-1:], s.base+start+len(x))
}

// NumTokens is the length of the encoded text: both splits.
func (d *Dataset) NumTokens() int { return d.train.n + d.test.n }

// IDBytes is the bytes the dataset keeps in memory per token: 2 up to
// 65,536 distinct tokens, else 4; 0 for token files, which it reads a
// window at a time.
func (d *Dataset) IDBytes() int {
	if n := d.NumTokens(); n > 0 {
		return d.held / n
	}
	return 0
}

// Memory is what the dataset holds, for the trainer's memory check
// (config.Corpus): the ids are in memory already, or are read from files.
func (d *Dataset) Memory() config.Corpus {
	return config.Corpus{Tokens: int64(d.NumTokens()), IDBytes: d.IDBytes(), TrainTokens: int64(d.Cut), Held: true}
}

// Close closes the token files a dataset reads from (nothing for a text
// corpus, which is held in memory).
func (d *Dataset) Close() error {
	var first error
	for _, c := range d.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	d.closers = nil
	return first
}

// Tokens returns the encoded text, both splits (a copy, for tests and
// tools: the dataset itself stores it compactly or reads it from files).
func (d *Dataset) Tokens() []int {
	out := make([]int, d.NumTokens())
	if err := d.train.src.read(out[:d.train.n], d.train.base); err != nil {
		panic(err) // tests and tools only
	}
	if err := d.test.src.read(out[d.train.n:], d.test.base); err != nil {
		panic(err)
	}
	return out
}

// Head returns the first n tokens of the training split (fewer if it is
// shorter).
func (d *Dataset) Head(n int) ([]int, error) {
	out := make([]int, min(n, d.train.n))
	return out, d.train.src.read(out, d.train.base)
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
