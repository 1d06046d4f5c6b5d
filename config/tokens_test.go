package config

import (
	"os"
	"path/filepath"
	"testing"
)

const tokensData = "[data]\nformat = \"tokens\"\npath = \"d/train.bin\"\nval_path = \"d/val.bin\"\n"

// TestTokensConfig: a config of token files loads with data.split 0 (the
// files are split already), keeps it through its config.toml, and
// records its validation file like its training file.
func TestTokensConfig(t *testing.T) {
	dir := writeFiles(t, map[string]string{"x.toml": tokensData + "val_sha256 = \"" + hexOf('A') + "\"\nval_size = 20\n"})
	c, err := Load(filepath.Join(dir, "x.toml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Data.Split != 0 || c.Data.ValPath != "d/val.bin" || c.Data.ValSHA256 != hexOf('a') || c.Data.ValSize != 20 {
		t.Fatalf("data %+v", c.Data)
	}
	text, err := c.TOML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("config.toml", text)
	if err != nil {
		t.Fatalf("its config.toml does not load: %v\n%s", err, text)
	}
	if back.Data != c.Data {
		t.Fatalf("config.toml gives back %+v, want %+v", back.Data, c.Data)
	}
	if d := c.Diff(back); d != nil {
		t.Fatalf("Diff after the round trip: %v", d)
	}
}

func hexOf(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// TestTokensKeysUsedOrRefused: each key of token files is refused where
// nothing reads it, and every key token files cannot use is refused with
// them.
func TestTokensKeysUsedOrRefused(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"split with token files", tokensData + "split = 0.9\n", `data.split: 0.9 is not used with format = "tokens": the token files are split already`},
		{"no val_path", "[data]\nformat = \"tokens\"\npath = \"d/train.bin\"\n", `data.val_path: must name the validation token file (nanoGPT's val.bin) with format = "tokens"`},
		{"word tokens", tokensData + "tokenizer = \"word\"\n", `data.tokenizer: "word" cannot decode token files`},
		{"learned bpe tokens", tokensData + "tokenizer = \"bpe\"\nvocab_size = 512\n", `data.tokenizer: "bpe" learns its merges from a text, and token files hold ids already`},
		{"url", tokensData + "url = \"https://example.com/train.bin\"\n", `data.url: is for downloading a text: token files are made with data.prepare, or gptg data prepare`},
		{"builtin path", "[data]\nformat = \"tokens\"\npath = \"builtin:tinyshakespeare\"\nval_path = \"v.bin\"\n", `data.path: "builtin:tinyshakespeare" is a text built into gptg, not a token file`},
		{"unknown recipe", tokensData + "prepare = \"openwebtext\"\ntokenizer = \"gpt2\"\n", `data.prepare: "openwebtext" is not allowed (allowed: shakespeare)`},
		{"recipe of another tokenizer", tokensData + "prepare = \"shakespeare\"\n", `data.tokenizer: "char" cannot read the tokens of data.prepare = "shakespeare", which are GPT-2's`},
		{"bad val_sha256", tokensData + "val_sha256 = \"abc\"\n", `data.val_sha256: "abc" is not a SHA-256`},
		{"negative val_size", tokensData + "val_size = -1\n", `data.val_size: -1 is negative`},
		{"val_path with a text", "[data]\nval_path = \"v.bin\"\n", `data.val_path: is for token files: data.format is "text"`},
		{"val_sha256 with a text", "[data]\nval_sha256 = \"" + hexOf('a') + "\"\n", `data.val_sha256: is for token files`},
		{"val_size with a text", "[data]\nval_size = 3\n", `data.val_size: is for token files`},
		{"prepare with a text", "[data]\nprepare = \"shakespeare\"\n", `data.prepare: is for token files`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"x.toml": tt.file})
			c, err := Load(filepath.Join(dir, "x.toml"), nil)
			if err == nil {
				t.Fatalf("loaded: %+v", c.Data)
			}
			checkError(t, err, dir, []string{"x.toml: " + tt.want}, "")
		})
	}
}

// TestTokensMemory: token files are read a window at a time, so the
// estimate counts no ids, only the order of the training windows that
// data.sampling = "windows" holds (an int per window of the training
// file), and nothing with "random".
func TestTokensMemory(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.bin")
	if err := os.WriteFile(train, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(train, 2<<30); err != nil { // 1 Gi tokens, sparse
		t.Fatal(err)
	}
	c := Default()
	c.Data.Format, c.Data.Path, c.Data.ValPath, c.Data.Split = FormatTokens, train, filepath.Join(dir, "val.bin"), 0
	c.Model.Vocab = 65
	if got := c.CorpusOf(); got.Tokens != 1<<30 || got.IDBytes != 0 || got.TrainTokens != 1<<30 {
		t.Fatalf("CorpusOf() = %+v", got)
	}
	c.Data.Stride = 16
	windows := c.TrainMemory().Data
	if want := 8 * float64(1<<30) / 16; windows != want {
		t.Fatalf("windows sampling: data %.0f bytes, want %.0f (8 per window)", windows, want)
	}
	c.Data.Sampling = "random"
	if got := c.TrainMemory().Data; got != 0 {
		t.Fatalf("random sampling: data %.0f bytes, want 0", got)
	}
}
