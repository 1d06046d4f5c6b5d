package corpus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"time"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/quote"
)

// LoadFor makes sure cfg's corpus is in place (downloading it when it is
// missing and data.url is set, saying so on log) and reads it into windows
// of the model's context. It leaves cfg alone: the model's vocabulary size
// comes from the data through ModelVocab, which the caller sets.
func LoadFor(cfg config.Config, log io.Writer, client *http.Client) (*Dataset, error) {
	return LoadForContext(context.Background(), cfg, log, client)
}

// LoadForContext is LoadFor that stops loading, returning ctx's error,
// when ctx is done (a signal while a large corpus loads).
func LoadForContext(ctx context.Context, cfg config.Config, log io.Writer, client *http.Client) (*Dataset, error) {
	return LoadForVocab(ctx, cfg, nil, log, client)
}

// LoadForVocab is LoadForContext that reads a tokenizer = "bpe" corpus with
// vocab's merges (a model's, to fine-tune it) instead of learning them;
// vocab nil learns them.
func LoadForVocab(ctx context.Context, cfg config.Config, vocab *Vocab, log io.Writer, client *http.Client) (*Dataset, error) {
	d := cfg.Data
	if d.Format == "pairs" {
		// Sentence pairs are package pairs' to read; cutting them into
		// windows of running text would train on garbage.
		return nil, fmt.Errorf("%s: a pairs corpus (data.format = \"pairs\") is read by the encoder-decoder, not as running text", d.Path)
	}
	if _, err := os.Stat(d.Path); errors.Is(err, fs.ErrNotExist) && d.URL != "" && !isBuiltin(d.Path) {
		fmt.Fprintf(log, "%s is missing: downloading %s\n", d.Path, d.URL)
	}
	if err := EnsureContext(ctx, d.Path, d.URL, d.SHA256, client); err != nil {
		return nil, err
	}
	var data *Dataset
	var err error
	switch {
	case d.Tokenizer == BPE && vocab != nil:
		data, err = LoadBPE(ctx, d.Path, vocab, cfg.Model.Context, d.Stride, d.Split)
	case d.Tokenizer == BPE:
		data, err = learnAndLoad(ctx, cfg, log)
	default:
		data, err = LoadContext(ctx, d.Path, d.Tokenizer, cfg.Model.Context, d.Stride, d.Split)
	}
	if err != nil {
		return nil, err
	}
	if d.Size != 0 && data.Size != d.Size {
		return nil, fmt.Errorf("data file %s has %d bytes, but [data] size expects %d", d.Path, data.Size, d.Size)
	}
	return data, nil
}

// learnAndLoad learns cfg's BPE (data.vocab_size) on its corpus's
// training split and reads the corpus with it, saying on log what it
// learned and, when learning is slow, how far it is.
func learnAndLoad(ctx context.Context, cfg config.Config, log io.Writer) (*Dataset, error) {
	d := cfg.Data
	start := time.Now()
	next := start.Add(learnReportEvery)
	learned, err := LearnBPE(ctx, d.Path, d.VocabSize, d.Split, func(done, total int) error {
		if now := time.Now(); now.After(next) && done < total {
			fmt.Fprintf(log, "learning the BPE of %s: %d of %d merges (%.0f s)\n", quote.Name(d.Path), done, total, now.Sub(start).Seconds())
			next = now.Add(learnReportEvery)
		}
		return nil
	})
	var few *bpe.TooFewPairsError
	if errors.As(err, &few) {
		// The setting is what to change, so the message names it.
		return nil, &config.Error{File: cfg.Path, Key: "data.vocab_size", Msg: fmt.Sprintf(
			"%d is more than the training split of %s can learn: its pairs run out after %d merges (vocab_size at most %d); use a smaller vocab_size or more text",
			d.VocabSize, quote.Name(d.Path), few.Merges, bpe.MinVocab+few.Merges)}
	}
	if err != nil {
		return nil, err
	}
	vocab, err := NewLearnedVocab(learned.Merges)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "tokenizer bpe: learned %d merges on the first %d bytes of %s (its training split) in %.2f s\n",
		len(learned.Merges), learned.TrainBytes, quote.Name(d.Path), time.Since(start).Seconds())
	return LoadBPE(ctx, d.Path, vocab, cfg.Model.Context, d.Stride, d.Split)
}

// learnReportEvery is how often learnAndLoad reports a slow learning.
const learnReportEvery = 5 * time.Second

// ModelVocab is the vocabulary size of cfg's model on data, the corpus
// LoadFor read for cfg: the data's own when model.vocab is left out (0),
// else model.vocab, which must be the data's.
func ModelVocab(cfg config.Config, data *Dataset) (int, error) {
	v := data.Vocab.Size()
	if cfg.Model.Vocab != 0 && cfg.Model.Vocab != v {
		return 0, &VocabMismatchError{Vocab: cfg.Model.Vocab, Data: v, Path: cfg.Data.Path, Tokenizer: cfg.Data.Tokenizer}
	}
	return v, nil
}

// VocabMismatchError is ModelVocab's error: the data has another number of
// distinct tokens than model.vocab says. Its advice is for a new run; a
// resumed run (whose config.toml always records the vocabulary) says
// something else.
type VocabMismatchError struct {
	Vocab, Data     int
	Path, Tokenizer string
}

func (e *VocabMismatchError) Error() string {
	return fmt.Sprintf("model.vocab is %d but %s has %d distinct %s tokens (leave vocab out to take it from the data)",
		e.Vocab, e.Path, e.Data, e.Tokenizer)
}
