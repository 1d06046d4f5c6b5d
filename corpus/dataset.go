package corpus

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
)

// Dataset is a tokenized corpus cut into training and test windows.
//
// Windows are not materialized: window i of the training split starts at
// token i*Stride, window i of the test split at Cut + i*Stride. A window's
// inputs are the Context tokens from its start, its targets the same tokens
// shifted by one.
type Dataset struct {
	Vocab   *Vocab
	Tokens  []int // the whole text, encoded
	Cut     int   // Tokens[:Cut] is the training split, Tokens[Cut:] the test split
	Context int   // tokens per window (the model's T)
	Stride  int   // tokens between the starts of consecutive windows
}

// Load reads a UTF-8 text file and cuts it like the reference's split_data:
// cut = int(len(tokens) * split), windows over each side separately. A
// stride of 0 means context/2 (at least 1). Every error names the path.
func Load(path, kind string, context, stride int, split float64) (*Dataset, error) {
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
	text, err := readText(path)
	if err != nil {
		return nil, err
	}
	vocab, err := BuildVocab(kind, text)
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", path, err)
	}
	tokens, err := vocab.Encode(text)
	if err != nil {
		// Cannot happen (the vocabulary comes from this very text), but a
		// bug here should say where it happened.
		return nil, fmt.Errorf("data file %s: %w", path, err)
	}
	d := &Dataset{
		Vocab:   vocab,
		Tokens:  tokens,
		Cut:     cutAt(len(tokens), split),
		Context: context,
		Stride:  stride,
	}
	if d.NumTrain() == 0 || d.NumTest() == 0 {
		return nil, fmt.Errorf("data file %s has %d %s tokens; context %d with split %v needs at least %d (one training and one test window)",
			path, len(tokens), kind, context, split, minTokens(context, split))
	}
	return d, nil
}

// readText returns the file's contents, checked to be non-empty UTF-8.
func readText(path string) (string, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("data file %s does not exist", path)
	}
	if err != nil {
		return "", fmt.Errorf("data file %s: %w", path, err)
	}
	if info.IsDir() {
		return "", fmt.Errorf("data file %s is a directory", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("data file %s: %w", path, err)
	}
	if len(raw) == 0 {
		return "", fmt.Errorf("data file %s is empty", path)
	}
	text := string(raw)
	if err := checkUTF8(text); err != nil {
		return "", fmt.Errorf("data file %s is %w", path, err)
	}
	return text, nil
}

// cutAt is Python's int(n * split): the float64 product truncated, which
// matches the reference bit for bit.
func cutAt(n int, split float64) int { return int(float64(n) * split) }

// numWindows is the reference's max(0, (n - context - 1 + stride - 1) // stride):
// windows start at 0, stride, 2*stride, ... while start < n - context - 1.
// (The last usable token is left out, as in the reference.)
func numWindows(n, context, stride int) int {
	return max(0, (n-context-1+stride-1)/stride)
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
