package corpus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"

	"github.com/gptg/gptg/config"
)

// LoadFor makes sure cfg's corpus is in place (downloading it when it is
// missing and data.url is set, saying so on log), reads it into windows of
// the model's context, and fills in model.vocab from it, or checks the
// vocab the config gives.
func LoadFor(cfg *config.Config, log io.Writer, client *http.Client) (*Dataset, error) {
	return LoadForContext(context.Background(), cfg, log, client)
}

// LoadForContext is LoadFor that stops loading, returning ctx's error,
// when ctx is done (a signal while a large corpus loads).
func LoadForContext(ctx context.Context, cfg *config.Config, log io.Writer, client *http.Client) (*Dataset, error) {
	d := cfg.Data
	if _, err := os.Stat(d.Path); errors.Is(err, fs.ErrNotExist) && d.URL != "" && !isBuiltin(d.Path) {
		fmt.Fprintf(log, "%s is missing: downloading %s\n", d.Path, d.URL)
	}
	if err := Ensure(d.Path, d.URL, d.SHA256, client); err != nil {
		return nil, err
	}
	data, err := LoadContext(ctx, d.Path, d.Tokenizer, cfg.Model.Context, d.Stride, d.Split)
	if err != nil {
		return nil, err
	}
	if v := data.Vocab.Size(); cfg.Model.Vocab == 0 {
		cfg.Model.Vocab = v
	} else if cfg.Model.Vocab != v {
		return nil, fmt.Errorf("model.vocab is %d but %s has %d distinct %s tokens (leave vocab out to take it from the data)",
			cfg.Model.Vocab, d.Path, v, d.Tokenizer)
	}
	return data, nil
}
