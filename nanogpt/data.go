package nanogpt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/tokenfile"
)

// nanoGPT keeps a dataset in a folder data/<dataset>/: train.bin and
// val.bin (package tokenfile) and, for a char dataset, meta.pkl, the
// characters the ids stand for. A gptg config names the two token files
// (data.path, data.val_path, data.format = "tokens") and the tokenizer
// that decodes them (data.tokenizer): "gpt2", or "char" with the meta.pkl
// beside data.path.

// bigTokenFile is the size from which LoadData says that it reads a token
// file through before training (about a second or more).
const bigTokenFile = 256 << 20

// MetaFile is the name of a nanoGPT dataset's vocabulary file.
const MetaFile = "meta.pkl"

// TokenVocab is the vocabulary whose ids the token files of a config hold:
// GPT-2's for tokenizer "gpt2"; for "char", the characters of the meta.pkl
// beside trainPath.
func TokenVocab(tokenizer, trainPath string) (*corpus.Vocab, error) {
	switch tokenizer {
	case corpus.GPT2:
		return corpus.NewGPT2Vocab()
	case corpus.Char:
		meta := filepath.Join(filepath.Dir(trainPath), MetaFile)
		if _, err := os.Lstat(meta); errors.Is(err, fs.ErrNotExist) {
			return nil, inputErr("%s does not exist: tokenizer \"char\" reads the characters of token files from nanoGPT's meta.pkl beside data.path (%s)", quote.Name(meta), quote.Name(trainPath))
		}
		return ReadMeta(meta)
	}
	return nil, inputErr("tokenizer %q cannot decode token files (allowed: gpt2; char, with nanoGPT's meta.pkl beside data.path)", tokenizer)
}

// LoadData reads the corpus cfg names, as corpus.LoadForContext does, and
// token files (data.format = "tokens") too: made first by data.prepare's
// recipe when both are missing, checked against data.sha256, data.size and
// their val_ twins when the config gives them, and read with the
// vocabulary of data.tokenizer. The Dataset must be closed.
func LoadData(ctx context.Context, cfg config.Config, log io.Writer, client *http.Client) (*corpus.Dataset, error) {
	d := cfg.Data
	if d.Format != config.FormatTokens {
		return corpus.LoadForContext(ctx, cfg, log, client)
	}
	vocab, err := TokenVocab(d.Tokenizer, d.Path)
	if err != nil {
		return nil, err
	}
	for _, p := range []string{d.Path, d.ValPath} {
		if fi, err := os.Stat(p); err == nil && fi.Size() >= bigTokenFile {
			fmt.Fprintf(log, "checking %s (%d tokens): every id, and its sha256\n", quote.Name(p), fi.Size()/tokenfile.IDBytes)
		}
	}
	data, err := corpus.LoadTokens(ctx, d.Path, d.ValPath, vocab, cfg.Model.Context, d.Stride)
	if err != nil {
		return nil, err
	}
	for _, c := range []struct {
		path            string
		sum, wantSum    string
		size, wantSize  int64
		sumKey, sizeKey string
	}{
		{d.Path, data.SHA256, d.SHA256, data.Size, d.Size, "data.sha256", "data.size"},
		{d.ValPath, data.ValSHA256, d.ValSHA256, data.ValSize, d.ValSize, "data.val_sha256", "data.val_size"},
	} {
		switch {
		case c.wantSize != 0 && c.size != c.wantSize:
			err = &tokenfile.Error{Path: c.path, Problem: fmt.Sprintf("has %d bytes, but %s expects %d", c.size, c.sizeKey, c.wantSize)}
		case c.wantSum != "" && c.sum != c.wantSum:
			err = &tokenfile.Error{Path: c.path, Problem: fmt.Sprintf("has sha256 %s, but %s expects %s", c.sum, c.sumKey, c.wantSum)}
		}
		if err != nil {
			data.Close()
			return nil, err
		}
	}
	return data, nil
}
