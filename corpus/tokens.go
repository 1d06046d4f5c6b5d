package corpus

import (
	"context"
	"fmt"

	"github.com/gptg/gptg/tokenfile"
)

// LoadTokens opens a corpus of token files (data.format = "tokens"):
// trainPath's tokens are the training split, valPath's the test split,
// both ids of vocab (nanoGPT's train.bin and val.bin). Each file is read
// once, to check that every id is in the vocabulary and to take its
// digest; training and evaluation then read the windows they use, so
// memory does not grow with the files. A stride of 0 means context/2 (at
// least 1). Without a trainPath ("") the dataset has a test split only,
// for evaluation. The Dataset must be closed.
func LoadTokens(ctx context.Context, trainPath, valPath string, vocab *Vocab, context, stride int) (*Dataset, error) {
	if context < 1 {
		return nil, fmt.Errorf("context must be at least 1, got %d", context)
	}
	if stride < 0 {
		return nil, fmt.Errorf("stride must not be negative, got %d", stride)
	}
	if stride == 0 {
		stride = max(1, context/2)
	}
	if vocab.Size() > tokenfile.MaxVocab {
		return nil, fmt.Errorf("a vocabulary of %d tokens does not fit token files (ids of 2 bytes: at most %d tokens)", vocab.Size(), tokenfile.MaxVocab)
	}
	d := &Dataset{Vocab: vocab, Context: context, Stride: stride}
	open := func(path string) (*tokenfile.File, string, error) {
		f, err := tokenfile.Open(path)
		if err != nil {
			return nil, "", err
		}
		d.closers = append(d.closers, f)
		sum, err := f.Check(ctx, vocab.Size())
		return f, sum, err
	}
	d.train = span{src: &tokenStore{}} // none: evaluation reads the test split only
	if trainPath != "" {
		train, sum, err := open(trainPath)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.SHA256, d.Size = sum, train.Size()
		d.train = span{fileSource{train}, 0, int(train.Len())}
		d.Cut = d.train.n
	}
	val, sum, err := open(valPath)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.ValSHA256, d.ValSize = sum, val.Size()
	d.test = span{fileSource{val}, 0, int(val.Len())}
	// One window on each side at least, as for a text: context+2 tokens
	// (the last token is left out, as the reference leaves it out).
	for _, s := range []struct {
		path, what string
		windows    int
		n          int
	}{{trainPath, "training", d.NumTrain(), d.train.n}, {valPath, "test", d.NumTest(), d.test.n}} {
		if s.windows == 0 && s.path != "" {
			d.Close()
			return nil, &tokenfile.Error{Path: s.path, Problem: fmt.Sprintf("has %d tokens: one %s window of context %d needs at least %d", s.n, s.what, context, context+2)}
		}
	}
	return d, nil
}

// fileSource reads a split's ids from a token file, a window at a time.
type fileSource struct{ f *tokenfile.File }

func (s fileSource) read(dst []int, start int) error {
	var buf [2048]uint16
	for len(dst) > 0 {
		k := min(len(dst), len(buf))
		if err := s.f.ReadAt(buf[:k], int64(start)); err != nil {
			return err
		}
		for i, id := range buf[:k] {
			dst[i] = int(id)
		}
		dst, start = dst[k:], start+k
	}
	return nil
}
