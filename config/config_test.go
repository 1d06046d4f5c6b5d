package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// writeFiles writes name -> content into dir and returns dir.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadOne writes content as x.toml and loads it with sets.
func loadOne(t *testing.T, content string, sets ...string) (*Config, error) {
	t.Helper()
	dir := writeFiles(t, map[string]string{"x.toml": content})
	return Load(filepath.Join(dir, "x.toml"), sets)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // file name -> content; "x.toml" is loaded
		sets    []string
		want    []string // fragments the error must contain; "$DIR" is the temp dir
		notWant string   // a fragment it must not contain
	}{
		// Syntax.
		{name: "malformed header", files: map[string]string{"x.toml": "[model\ncontext = 3\n"},
			want: []string{"config $DIR/x.toml: line ", "to end table name"}},
		{name: "malformed value", files: map[string]string{"x.toml": "[model]\nblocks = 2\ncontext = \n"},
			want: []string{"config $DIR/x.toml: line 3:"}},
		{name: "double equals", files: map[string]string{"x.toml": "[model]\nblocks = 2\ncontext = = 3\n"},
			want: []string{"config $DIR/x.toml: line 3:"}},
		{name: "duplicate key", files: map[string]string{"x.toml": "[model]\nheads = 1\nheads = 2\n"},
			want: []string{"config $DIR/x.toml: line 3:", "heads"}},

		// Unknown keys and tables.
		{name: "unknown top-level key", files: map[string]string{"x.toml": "colour = 1\n"},
			want:    []string{"$DIR/x.toml: colour: unknown top-level key", "allowed at top level: extends, [data], [model], [train], [sample]"},
			notWant: "did you mean"},
		{name: "top-level key that belongs in a table", files: map[string]string{"x.toml": "heads = 4\n[model]\n"},
			want: []string{"x.toml: heads: unknown top-level key; did you mean model.heads? (put it under [model])"}},
		{name: "misspelt extends", files: map[string]string{"x.toml": "extend = \"y.toml\"\n"},
			want: []string{"x.toml: extend: unknown top-level key; did you mean extends?"}},
		{name: "unknown table", files: map[string]string{"x.toml": "[modle]\nheads = 1\n"},
			want: []string{"x.toml: modle: unknown table [modle]; did you mean [model]?"}},
		{name: "unknown table no suggestion", files: map[string]string{"x.toml": "[optimizer]\nlr = 1\n"},
			want: []string{"x.toml: optimizer: unknown table [optimizer]"}, notWant: "did you mean"},
		{name: "misspelt key", files: map[string]string{"x.toml": "[model]\nheds = 2\n"},
			want: []string{"$DIR/x.toml: model.heds: unknown key; did you mean model.heads? (allowed: vocab, context, embedding, blocks, heads, qkv,"}},
		{name: "misspelt key with dotted syntax", files: map[string]string{"x.toml": "train.learning_rat = 1\n"},
			want: []string{"x.toml: train.learning_rat: unknown key"}},
		{name: "unknown key no suggestion", files: map[string]string{"x.toml": "[train]\noptimizer = \"sgd\"\n"},
			want: []string{"x.toml: train.optimizer: unknown key (allowed: batch, epochs,"}, notWant: "did you mean"},
		{name: "nested table in section", files: map[string]string{"x.toml": "[model.attention]\nheads = 2\n"},
			want: []string{"x.toml: model.attention: unknown key"}},
		{name: "first error in file order wins", files: map[string]string{"x.toml": "[train]\nzzz = 1\naaa = 2\n"},
			want: []string{"train.zzz: unknown key"}},

		// Types.
		{name: "string for int", files: map[string]string{"x.toml": "[model]\ncontext = \"32\"\n"},
			want: []string{"$DIR/x.toml: model.context: expected an integer, got string \"32\""}},
		{name: "float for int", files: map[string]string{"x.toml": "[model]\nblocks = 2.5\n"},
			want: []string{"model.blocks: expected an integer, got float 2.5"}},
		{name: "int for bool", files: map[string]string{"x.toml": "[model]\nqkv = 1\n"},
			want: []string{"model.qkv: expected a boolean (true or false), got integer 1"}},
		{name: "int for string", files: map[string]string{"x.toml": "[model]\nnorm = 1\n"},
			want: []string{"model.norm: expected a string, got integer 1"}},
		{name: "string for float", files: map[string]string{"x.toml": "[train]\nlr = \"fast\"\n"},
			want: []string{"train.lr: expected a number, got string \"fast\""}},
		{name: "array for int", files: map[string]string{"x.toml": "[model]\nheads = [1, 2]\n"},
			want: []string{"model.heads: expected an integer, got an array"}},
		{name: "date for float", files: map[string]string{"x.toml": "[train]\nepochs = 2024-01-01\n"},
			want: []string{"train.epochs: expected a number, got a date/time"}},
		{name: "section is not a table", files: map[string]string{"x.toml": "model = 3\n"},
			want: []string{"x.toml: model: expected a table [model], got integer 3"}},
		{name: "array of tables", files: map[string]string{"x.toml": "[[train]]\nlr = 1\n"},
			want: []string{"x.toml: train: expected a table [train], got an array"}},
		{name: "nan", files: map[string]string{"x.toml": "[train]\nlr = nan\n"},
			want: []string{"train.lr: NaN is not allowed (must be a finite number)"}},
		{name: "inf", files: map[string]string{"x.toml": "[sample]\ntemperature = inf\n"},
			want: []string{"sample.temperature: +Inf is not allowed"}},

		// Ranges: data.
		{name: "empty path", files: map[string]string{"x.toml": "[data]\npath = \"\"\n"},
			want: []string{"x.toml: data.path: must not be empty"}},
		{name: "url scheme", files: map[string]string{"x.toml": "[data]\nurl = \"ftp://example.com/x.txt\"\n"},
			want: []string{"data.url: \"ftp://example.com/x.txt\" is not an http(s) URL"}},
		{name: "url without host", files: map[string]string{"x.toml": "[data]\nurl = \"https://\"\n"},
			want: []string{"data.url:", "is not an http(s) URL"}},
		{name: "unknown built-in corpus", files: map[string]string{"x.toml": "[data]\npath = \"builtin:tinyshakespear\"\n"},
			want: []string{`x.toml: data.path: there is no built-in corpus "tinyshakespear" (built in: bible-en-es, tinyshakespeare, toy); did you mean "builtin:tinyshakespeare"?`}},
		{name: "url for a built-in corpus", files: map[string]string{"x.toml": "[data]\nurl = \"https://example.com/x.txt\"\n"},
			want: []string{`x.toml: data.url: is for downloading a file, and data.path "builtin:tinyshakespeare" is built into gptg: leave url out, or set data.path to a file`}},
		{name: "sha256 short", files: map[string]string{"x.toml": "[data]\nsha256 = \"abc\"\n"},
			want: []string{"data.sha256: \"abc\" is not a SHA-256 (expected 64 hex characters"}},
		{name: "sha256 not hex", files: map[string]string{"x.toml": "[data]\nsha256 = \"" + strings.Repeat("g", 64) + "\"\n"},
			want: []string{"data.sha256:", "is not a SHA-256"}},
		{name: "tokenizer", files: map[string]string{"x.toml": "[data]\ntokenizer = \"bytes\"\n"},
			want: []string{"data.tokenizer: \"bytes\" is not allowed (allowed: char, word, gpt2, bpe)"}},
		{name: "bpe without vocab_size", files: map[string]string{"x.toml": "[data]\ntokenizer = \"bpe\"\n"},
			want: []string{"data.vocab_size: is missing: tokenizer = \"bpe\" learns that many tokens"}},
		{name: "bpe vocab_size too small", files: map[string]string{"x.toml": "[data]\ntokenizer = \"bpe\"\nvocab_size = 255\n"},
			want: []string{"data.vocab_size: 255 is out of range (allowed: 256..1048576)"}},
		{name: "bpe model.vocab differs", files: map[string]string{"x.toml": "[data]\ntokenizer = \"bpe\"\nvocab_size = 300\n[model]\nvocab = 301\n"},
			want: []string{"model.vocab: is 301 but data.vocab_size is 300"}},
		{name: "bpe with token files", files: map[string]string{"x.toml": "[data]\nformat = \"tokens\"\npath = \"t.bin\"\nval_path = \"v.bin\"\ntokenizer = \"bpe\"\nvocab_size = 300\n"},
			want: []string{"data.tokenizer: \"bpe\" learns its merges from a text, and token files hold ids already"}},
		{name: "vocab_size without bpe", files: map[string]string{"x.toml": "[data]\nvocab_size = 300\n"},
			want: []string{"data.vocab_size: only tokenizer = \"bpe\" reads it (data.tokenizer is \"char\""}},
		{name: "gpt2 vocab", files: map[string]string{"x.toml": "[data]\ntokenizer = \"gpt2\"\n[model]\nvocab = 65\n"},
			want: []string{"model.vocab: 65 is not GPT-2's 50257 tokens (data.tokenizer = \"gpt2\"): set 50257 or leave it out"}},
		{name: "split 1", files: map[string]string{"x.toml": "[data]\nsplit = 1\n"},
			want: []string{"data.split: 1 is out of range (allowed: between 0 and 1, exclusive)"}},
		{name: "split 0", files: map[string]string{"x.toml": "[data]\nsplit = 0.0\n"},
			want: []string{"data.split: 0 is out of range"}},
		{name: "stride negative", files: map[string]string{"x.toml": "[data]\nstride = -1\n"},
			want: []string{"data.stride: -1 is invalid (must be >= 0)"}},

		// Ranges: model.
		{name: "vocab negative", files: map[string]string{"x.toml": "[model]\nvocab = -1\n"},
			want: []string{"model.vocab: -1 is out of range (allowed: 0..1048576)"}},
		{name: "context 0", files: map[string]string{"x.toml": "[model]\ncontext = 0\n"},
			want: []string{"$DIR/x.toml: model.context: 0 is out of range (allowed: 1..4096)"}},
		{name: "context huge", files: map[string]string{"x.toml": "[model]\ncontext = 1000000\n"},
			want: []string{"model.context: 1000000 is out of range (allowed: 1..4096)"}},
		{name: "embedding 0", files: map[string]string{"x.toml": "[model]\nembedding = 0\n"},
			want: []string{"model.embedding: 0 is out of range (allowed: 1..8192)"}},
		{name: "blocks negative", files: map[string]string{"x.toml": "[model]\nblocks = -1\n"},
			want: []string{"model.blocks: -1 is out of range (allowed: 0..64)"}},
		{name: "blocks huge", files: map[string]string{"x.toml": "[model]\nblocks = 65\n"},
			want: []string{"model.blocks: 65 is out of range"}},
		{name: "heads 0", files: map[string]string{"x.toml": "[model]\nheads = 0\n"},
			want: []string{"model.heads: 0 is out of range (allowed: 1..64)"}},
		{name: "heads do not divide", files: map[string]string{"x.toml": "[model]\nheads = 3\n"},
			want: []string{"$DIR/x.toml: model.heads: 3 does not divide embedding 64 (heads must divide embedding)"}},
		{name: "heads above embedding", files: map[string]string{"x.toml": "[model]\nembedding = 8\nheads = 16\n"},
			want: []string{"model.heads: 16 is out of range (allowed: 1..8)"}},
		{name: "norm", files: map[string]string{"x.toml": "[model]\nnorm = \"layer\"\n"},
			want: []string{"model.norm: \"layer\" is not allowed (allowed: none, pre, post)"}, notWant: "did you mean"},
		{name: "norm typo", files: map[string]string{"x.toml": "[model]\nnorm = \"prr\"\n"},
			want: []string{"model.norm: \"prr\" is not allowed; did you mean \"pre\"?"}},
		{name: "activation", files: map[string]string{"x.toml": "[model]\nactivation = \"tanh\"\n"},
			want: []string{"model.activation: \"tanh\" is not allowed (allowed: gelu, gelu_exact, relu)"}},
		{name: "ff_mult 0", files: map[string]string{"x.toml": "[model]\nff_mult = 0\n"},
			want: []string{"model.ff_mult: 0 is out of range (allowed: 1..64)"}},
		{name: "sampling", files: map[string]string{"x.toml": "[data]\nsampling = \"shuffled\"\n"},
			want: []string{"data.sampling: \"shuffled\" is not allowed (allowed: windows, random)"}},
		{name: "grad_accum 0", files: map[string]string{"x.toml": "[train]\ngrad_accum = 0\n"},
			want: []string{"train.grad_accum: 0 is out of range (allowed: 1..4096)"}},
		{name: "eval_batches negative", files: map[string]string{"x.toml": "[train]\neval_batches = -1\n"},
			want: []string{"train.eval_batches: -1 is out of range"}},
		{name: "decay", files: map[string]string{"x.toml": "[train]\ndecay = \"weights\"\n"},
			want: []string{"train.decay: \"weights\" is not allowed (allowed: all, matrices)"}},
		{name: "init", files: map[string]string{"x.toml": "[model]\ninit = \"gpt3\"\n"},
			want: []string{"model.init: \"gpt3\" is not allowed; did you mean \"gpt2\"? (allowed: torch, gpt2)"}},
		{name: "dropout 1", files: map[string]string{"x.toml": "[model]\ndropout = 1\n"},
			want: []string{"model.dropout: 1 is out of range (allowed: 0 <= dropout < 1, 0 = off)"}},
		{name: "dropout negative", files: map[string]string{"x.toml": "[model]\ndropout = -0.1\n"},
			want: []string{"model.dropout: -0.1 is out of range"}},
		{name: "bias as a string", files: map[string]string{"x.toml": "[model]\nbias = \"no\"\n"},
			want: []string{"model.bias: expected a boolean"}},
		{name: "dtype", files: map[string]string{"x.toml": "[model]\ndtype = \"float16\"\n"},
			want: []string{"model.dtype: \"float16\" is not allowed", "float32, float64, bfloat16"}},

		// Ranges: train.
		{name: "batch 0", files: map[string]string{"x.toml": "[train]\nbatch = 0\n"},
			want: []string{"train.batch: 0 is out of range (allowed: 1..4096)"}},
		{name: "batch huge", files: map[string]string{"x.toml": "[train]\nbatch = 5000\n"},
			want: []string{"train.batch: 5000 is out of range"}},
		{name: "epochs 0", files: map[string]string{"x.toml": "[train]\nepochs = 0\n"},
			want: []string{"train.epochs: 0 is invalid (must be > 0 unless train.max_steps > 0)"}},
		{name: "epochs negative with max_steps", files: map[string]string{"x.toml": "[train]\nepochs = -1\nmax_steps = 10\n"},
			want: []string{"train.epochs: -1 is invalid (must be >= 0)"}},
		{name: "max_steps negative", files: map[string]string{"x.toml": "[train]\nmax_steps = -5\n"},
			want: []string{"train.max_steps: -5 is invalid (must be >= 0)"}},
		{name: "lr 0", files: map[string]string{"x.toml": "[train]\nlr = 0\n"},
			want: []string{"train.lr: 0 is invalid (must be > 0)"}},
		{name: "min_lr above lr", files: map[string]string{"x.toml": "[train]\nlr = 1e-3\nmin_lr = 1e-2\n"},
			want: []string{"train.min_lr: 0.01 is out of range (allowed: 0..lr, and lr is 0.001)"}},
		{name: "min_lr negative", files: map[string]string{"x.toml": "[train]\nmin_lr = -1e-4\n"},
			want: []string{"train.min_lr: -0.0001 is out of range"}},
		{name: "warmup negative", files: map[string]string{"x.toml": "[train]\nwarmup = -1\n"},
			want: []string{"train.warmup: -1 is invalid (must be >= 0)"}},
		{name: "weight_decay negative", files: map[string]string{"x.toml": "[train]\nweight_decay = -0.1\n"},
			want: []string{"train.weight_decay: -0.1 is invalid (must be >= 0)"}},
		{name: "beta1 1", files: map[string]string{"x.toml": "[train]\nbeta1 = 1\n"},
			want: []string{"train.beta1: 1 is out of range (allowed: 0 <= beta1 < 1)"}},
		{name: "beta2 negative", files: map[string]string{"x.toml": "[train]\nbeta2 = -0.5\n"},
			want: []string{"train.beta2: -0.5 is out of range (allowed: 0 <= beta2 < 1)"}},
		{name: "eps 0", files: map[string]string{"x.toml": "[train]\neps = 0\n"},
			want: []string{"train.eps: 0 is invalid (must be > 0)"}},
		{name: "clip negative", files: map[string]string{"x.toml": "[train]\nclip = -1\n"},
			want: []string{"train.clip: -1 is invalid (must be >= 0)"}},
		{name: "eval_every negative", files: map[string]string{"x.toml": "[train]\neval_every = -1\n"},
			want: []string{"train.eval_every: -1 is invalid (must be >= 0)"}},
		{name: "checkpoint_every 0", files: map[string]string{"x.toml": "[train]\ncheckpoint_every = 0\n"},
			want: []string{"train.checkpoint_every: 0 is invalid (must be >= 1)"}},
		{name: "log_every 0", files: map[string]string{"x.toml": "[train]\nlog_every = 0\n"},
			want: []string{"train.log_every: 0 is invalid (must be >= 1)"}},

		// Ranges: sample.
		{name: "tokens negative", files: map[string]string{"x.toml": "[sample]\ntokens = -1\n"},
			want: []string{"sample.tokens: -1 is invalid (must be >= 0)"}},
		{name: "temperature negative", files: map[string]string{"x.toml": "[sample]\ntemperature = -0.5\n"},
			want: []string{"sample.temperature: -0.5 is invalid (must be >= 0)"}},
		{name: "top_k negative", files: map[string]string{"x.toml": "[sample]\ntop_k = -1\n"},
			want: []string{"sample.top_k: -1 is invalid (must be >= 0)"}},
		{name: "top_p above 1", files: map[string]string{"x.toml": "[sample]\ntop_p = 1.5\n"},
			want: []string{"sample.top_p: 1.5 is out of range (allowed: 0..1, 0 = off)"}},

		// extends.
		{name: "extends missing file", files: map[string]string{"x.toml": "extends = \"nope.toml\"\n"},
			want: []string{"$DIR/x.toml: extends: $DIR/nope.toml: no such file"}},
		{name: "extends not a string", files: map[string]string{"x.toml": "extends = 3\n"},
			want: []string{"x.toml: extends: expected a string (a file name), got integer 3"}},
		{name: "extends empty", files: map[string]string{"x.toml": "extends = \"\"\n"},
			want: []string{"x.toml: extends: must name a file"}},
		{name: "extends self", files: map[string]string{"x.toml": "extends = \"x.toml\"\n"},
			want: []string{"$DIR/x.toml: extends: cycle: $DIR/x.toml -> $DIR/x.toml"}},
		{name: "extends cycle", files: map[string]string{
			"x.toml": "extends = \"y.toml\"\n",
			"y.toml": "extends = \"x.toml\"\n",
		}, want: []string{"$DIR/y.toml: extends: cycle: $DIR/x.toml -> $DIR/y.toml -> $DIR/x.toml"}},
		{name: "extends cycle not through the start", files: map[string]string{
			"x.toml":     "extends = \"y.toml\"\n",
			"y.toml":     "extends = \"sub/z.toml\"\n",
			"sub/z.toml": "extends = \"../y.toml\"\n",
		}, want: []string{"$DIR/sub/z.toml: extends: cycle: $DIR/y.toml -> $DIR/sub/z.toml -> $DIR/y.toml"}},
		{name: "bad key in base names the base", files: map[string]string{
			"x.toml":    "extends = \"base.toml\"\n[model]\nheads = 2\n",
			"base.toml": "[model]\nheds = 2\n",
		}, want: []string{"$DIR/base.toml: model.heds: unknown key; did you mean model.heads?"}},
		{name: "range error names the file that set the key", files: map[string]string{
			"x.toml":    "extends = \"base.toml\"\n[model]\nblocks = 3\n",
			"base.toml": "[model]\nheads = 3\n",
		}, want: []string{"$DIR/base.toml: model.heads: 3 does not divide embedding 64"}},
		{name: "malformed base", files: map[string]string{
			"x.toml":    "extends = \"base.toml\"\n",
			"base.toml": "[train\n",
		}, want: []string{"config $DIR/base.toml: line "}},

		// --set.
		{name: "set missing =", files: map[string]string{"x.toml": ""}, sets: []string{"model.heads4"},
			want: []string{"--set model.heads4: expected section.key=value"}},
		{name: "set misspelt key", files: map[string]string{"x.toml": ""}, sets: []string{"model.heds=2"},
			want: []string{"--set model.heds: unknown key; did you mean model.heads? (allowed: vocab, context,"}},
		{name: "set misspelt table", files: map[string]string{"x.toml": ""}, sets: []string{"modle.heads=2"},
			want: []string{"--set modle.heads: unknown key; did you mean model.heads?"}},
		{name: "set without table", files: map[string]string{"x.toml": ""}, sets: []string{"heads=2"},
			want: []string{"--set heads: unknown key; did you mean model.heads?"}},
		{name: "set extends", files: map[string]string{"x.toml": ""}, sets: []string{"extends=y.toml"},
			want: []string{"--set extends: unknown key"}},
		{name: "set bool mismatch", files: map[string]string{"x.toml": ""}, sets: []string{"model.qkv=yes"},
			want: []string{"--set model.qkv: expected a boolean (true or false), got string \"yes\""}},
		{name: "set int mismatch", files: map[string]string{"x.toml": ""}, sets: []string{"model.heads=four"},
			want: []string{"--set model.heads: expected an integer, got string \"four\""}},
		{name: "set float for int", files: map[string]string{"x.toml": ""}, sets: []string{"model.context=3.5"},
			want: []string{"--set model.context: expected an integer, got float 3.5"}},
		{name: "set empty value", files: map[string]string{"x.toml": ""}, sets: []string{"train.lr="},
			want: []string{"--set train.lr: expected a number, got string \"\""}},
		{name: "set range", files: map[string]string{"x.toml": ""}, sets: []string{"model.heads=3"},
			want: []string{"--set model.heads: 3 does not divide embedding 64"}},
		{name: "set nan", files: map[string]string{"x.toml": ""}, sets: []string{"train.lr=nan"},
			want: []string{"--set train.lr: NaN is not allowed"}},
		{name: "set cannot smuggle keys", files: map[string]string{"x.toml": ""}, sets: []string{"model.heads=2\n[x]\ny=1"},
			want: []string{"--set model.heads: expected an integer, got string"}},
		{name: "set value fixes file but other set breaks", files: map[string]string{"x.toml": "[model]\nheads = 3\n"},
			sets: []string{"model.heads=4", "model.embedding=30"},
			want: []string{"--set model.heads: 4 does not divide embedding 30"}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			c, err := Load(filepath.Join(dir, "x.toml"), tt.sets)
			if err == nil {
				t.Fatalf("Load succeeded, want error; got %+v", c)
			}
			checkError(t, err, dir, tt.want, tt.notWant)
		})
	}
}

// checkError asserts err is a one-line *Error containing every fragment.
func checkError(t *testing.T, err error, dir string, want []string, notWant string) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Errorf("error spans several lines: %q", msg)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Errorf("error is %T, want *config.Error", err)
	}
	for _, w := range want {
		w = strings.ReplaceAll(w, "$DIR", dir)
		if !strings.Contains(msg, w) {
			t.Errorf("error %q\n  does not contain %q", msg, w)
		}
	}
	if notWant != "" && strings.Contains(msg, notWant) {
		t.Errorf("error %q contains %q", msg, notWant)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("configs/nope.toml", nil)
	if err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
	if got, want := err.Error(), "config configs/nope.toml: no such file"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("errors.Is(err, os.ErrNotExist) = false for %v", err)
	}

	dir := t.TempDir()
	_, err = Load(dir, nil)
	checkError(t, err, dir, []string{"config $DIR: is a directory"}, "")
}

func TestDefaults(t *testing.T) {
	c, err := loadOne(t, "# nothing but a comment\n")
	if err != nil {
		t.Fatal(err)
	}
	// Spelled out rather than taken from Default(), so a changed default
	// shows up here as a test failure.
	want := &Config{
		Data: Data{Path: "builtin:tinyshakespeare", Tokenizer: "char", Split: 0.9, Stride: 16, Sampling: "windows",
			Format: "text", MinCount: 1, MinSource: 1, MaxSource: 16, MaxTarget: 24, Buckets: 1},
		Model: Model{Context: 32, Embedding: 64, Blocks: 2, Heads: 1, QKV: true, Mask: true, OutProj: true, Norm: "none", Activation: "gelu", FFMult: 4, Dtype: "float32", Bias: true, Init: "torch",
			Arch: "decoder-only", Positions: "learned"},
		Train: Train{
			Batch: 4, Epochs: 2, LR: 1e-3, MinLR: 1e-4, Warmup: 100, WeightDecay: 0.01,
			Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Clip: 1, Seed: 42, Out: filepath.Join("runs", "x"), LogEvery: 100, CheckpointEvery: 1000,
			GradAccum: 1, Decay: "all", MaxMemory: 8, Schedule: "cosine",
		},
		Sample: Sample{Prompt: "\n", Tokens: 256, Temperature: 1},
	}
	if c.Name != "x" {
		t.Errorf("Name = %q, want x", c.Name)
	}
	if !strings.HasSuffix(c.Path, "x.toml") {
		t.Errorf("Path = %q, want the loaded file", c.Path)
	}
	if c.Data != want.Data || c.Model != want.Model || c.Train != want.Train || c.Sample != want.Sample {
		t.Errorf("empty file gives\n%+v\nwant\n%+v", *c, *want)
	}
	d := Default()
	if d.Data.Stride != 0 || d.Train.Out != "" || d.Model != want.Model {
		t.Errorf("Default() should leave stride and out unresolved: %+v", *d)
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

func TestValidateInCode(t *testing.T) {
	c := Default()
	c.Model.Heads = 3
	checkError(t, c.Validate(), "", []string{"config: model.heads: 3 does not divide embedding 64"}, "")

	c.Path = "configs/x.toml"
	err := c.Validate()
	if got, want := err.Error(), "configs/x.toml: model.heads: 3 does not divide embedding 64 (heads must divide embedding)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExtendsChain(t *testing.T) {
	// a -> b -> c, each overriding part of the one below; b lives in a
	// subfolder to check that extends is relative to the extending file.
	dir := writeFiles(t, map[string]string{
		"a.toml":       "extends = \"sub/b.toml\"\n[model]\nblocks = 3\n[sample]\nprompt = \"JULIET:\"\n",
		"sub/b.toml":   "extends = \"../c.toml\"\n[model]\nheads = 4\nnorm = \"pre\"\n[train]\nbatch = 8\n",
		"c.toml":       "[model]\ncontext = 64\nheads = 2\nblocks = 1\n[train]\nlr = 0.01\nbatch = 2\n[data]\npath = \"other.txt\"\n",
		"unused.toml":  "this is not toml",
		"sub/sib.toml": "",
	})
	c, err := Load(filepath.Join(dir, "a.toml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Name", c.Name, "a"},
		{"context (from c)", c.Model.Context, 64},
		{"heads (b over c)", c.Model.Heads, 4},
		{"blocks (a over c)", c.Model.Blocks, 3},
		{"norm (b)", c.Model.Norm, "pre"},
		{"batch (b over c)", c.Train.Batch, 8},
		{"lr (c)", c.Train.LR, 0.01},
		{"min_lr = base lr / 10", c.Train.MinLR, 0.001},
		{"stride = context/2", c.Data.Stride, 32},
		{"data.path kept as written", c.Data.Path, "other.txt"},
		{"prompt (a)", c.Sample.Prompt, "JULIET:"},
		{"out from the loaded name", c.Train.Out, filepath.Join("runs", "a")},
		{"untouched default", c.Model.Embedding, 64},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestSets(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		sets  []string
		check func(c *Config) (got, want any)
	}{
		{"float", "", []string{"train.epochs=0.1"},
			func(c *Config) (any, any) { return c.Train.Epochs, 0.1 }},
		{"int for float", "", []string{"train.epochs=1"},
			func(c *Config) (any, any) { return c.Train.Epochs, 1.0 }},
		{"bare string", "", []string{"model.norm=pre"},
			func(c *Config) (any, any) { return c.Model.Norm, "pre" }},
		{"bool", "", []string{"model.qkv=false"},
			func(c *Config) (any, any) { return c.Model.QKV, false }},
		{"bare string with colon", "", []string{"sample.prompt=ROMEO:"},
			func(c *Config) (any, any) { return c.Sample.Prompt, "ROMEO:" }},
		{"quoted string", "", []string{`sample.prompt="To be, or not"`},
			func(c *Config) (any, any) { return c.Sample.Prompt, "To be, or not" }},
		{"number-looking string stays text", "", []string{"sample.prompt=42"},
			func(c *Config) (any, any) { return c.Sample.Prompt, "42" }},
		{"value with = sign", "", []string{"sample.prompt=a=b"},
			func(c *Config) (any, any) { return c.Sample.Prompt, "a=b" }},
		{"int", "", []string{"model.heads=4"},
			func(c *Config) (any, any) { return c.Model.Heads, 4 }},
		{"later set wins", "", []string{"model.heads=4", "model.heads=8"},
			func(c *Config) (any, any) { return c.Model.Heads, 8 }},
		{"set overrides file", "[model]\nheads = 2\n", []string{"model.heads=16"},
			func(c *Config) (any, any) { return c.Model.Heads, 16 }},
		{"set fixes a bad file value", "[model]\nheads = 3\n", []string{"model.heads=4"},
			func(c *Config) (any, any) { return c.Model.Heads, 4 }},
		{"min_lr follows lr set on the command line", "", []string{"train.lr=0.02"},
			func(c *Config) (any, any) { return c.Train.MinLR, 0.002 }},
		{"min_lr follows int lr in file", "[train]\nlr = 1\n", nil,
			func(c *Config) (any, any) { return c.Train.MinLR, 0.1 }},
		{"explicit min_lr is kept when lr changes", "[train]\nmin_lr = 1e-5\n", []string{"train.lr=0.5"},
			func(c *Config) (any, any) { return c.Train.MinLR, 1e-5 }},
		{"epochs 0 is fine with max_steps", "[train]\nepochs = 0\nmax_steps = 10\n", nil,
			func(c *Config) (any, any) { return c.Train.MaxSteps, 10 }},
		{"stride at context 1", "[model]\ncontext = 1\n", nil,
			func(c *Config) (any, any) { return c.Data.Stride, 1 }},
		{"explicit stride kept", "[data]\nstride = 5\n", nil,
			func(c *Config) (any, any) { return c.Data.Stride, 5 }},
		{"explicit out kept", "[train]\nout = \"runs/custom\"\n", nil,
			func(c *Config) (any, any) { return c.Train.Out, "runs/custom" }},
		{"zero blocks allowed", "[model]\nblocks = 0\n", nil,
			func(c *Config) (any, any) { return c.Model.Blocks, 0 }},
		{"sha256 normalised to lower case", "[data]\nsha256 = \"" + strings.Repeat("AB", 32) + "\"\n", nil,
			func(c *Config) (any, any) { return c.Data.SHA256, strings.Repeat("ab", 32) }},
		{"inline table", "model = { heads = 2, norm = \"post\" }\n", nil,
			func(c *Config) (any, any) { return c.Model.Norm + "/" + strconv.Itoa(c.Model.Heads), "post/2" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadOne(t, tt.file, tt.sets...)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tt.check(c); got != want {
				t.Errorf("got %v (%T), want %v (%T)", got, got, want, want)
			}
		})
	}
}

func TestShakespeare(t *testing.T) {
	c, err := Load("../configs/shakespeare.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Path: "../configs/shakespeare.toml",
		Name: "shakespeare",
		Data: Data{
			Path:      "builtin:tinyshakespeare",
			SHA256:    "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
			Size:      1115394,
			Tokenizer: "char", Split: 0.9, Stride: 16, Sampling: "windows",
			Format: "text", MinCount: 1, MinSource: 1, MaxSource: 16, MaxTarget: 24, Buckets: 1,
		},
		Model: DefaultModel(),
		Train: Train{
			Batch: 4, Epochs: 2, LR: 1e-3, MinLR: 1e-4, Warmup: 100, WeightDecay: 0.01,
			Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Clip: 1, Seed: 42, EvalEvery: 5000,
			Out: filepath.Join("runs", "shakespeare"), LogEvery: 100, CheckpointEvery: 1000,
			GradAccum: 1, Decay: "all", MaxMemory: DefaultMaxMemory, Schedule: "cosine",
		},
		Sample: Sample{Prompt: "ROMEO:", Tokens: 256, Temperature: 1},
	}
	want.maxMemoryFrom = want.Path // the file sets train.max_memory: a refusal names it
	if *c != want {
		t.Errorf("shakespeare.toml gives\n%+v\nwant\n%+v", *c, want)
	}
}

func TestTOMLRoundTrip(t *testing.T) {
	orig, err := Load("../configs/shakespeare.toml", []string{
		"model.heads=4", "model.norm=pre", "train.epochs=0.25", "train.lr=3e-4",
		"sample.prompt=\"tab\\there \\\"quoted\\\"\\nnew line ünï\"", "train.seed=-7",
	})
	if err != nil {
		t.Fatal(err)
	}
	if orig.Sample.Prompt != "tab\there \"quoted\"\nnew line ünï" {
		t.Fatalf("prompt = %q", orig.Sample.Prompt)
	}
	text, err := orig.TOML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), "extends") {
		t.Errorf("TOML output mentions extends:\n%s", text)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(p, text, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Load(p, nil)
	if err != nil {
		t.Fatalf("reloading TOML output: %v\n%s", err, text)
	}
	// Path and Name follow the new file; everything else must survive.
	if back.Data != orig.Data || back.Model != orig.Model || back.Train != orig.Train || back.Sample != orig.Sample {
		t.Errorf("round trip changed the config\nbefore %+v\nafter  %+v\nTOML:\n%s", *orig, *back, text)
	}
	if d := back.Diff(orig); len(d) != 0 {
		t.Errorf("Diff after round trip = %v, want none", d)
	}
	// The stored run folder keeps the original run's name.
	if back.Train.Out != filepath.Join("runs", "shakespeare") {
		t.Errorf("Out = %q after round trip", back.Train.Out)
	}
}

func TestDiff(t *testing.T) {
	base, err := Load("../configs/shakespeare.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sets := []string{"model.heads=4", "model.norm=pre", "train.lr=0.01", "sample.prompt=a b"}
	c, err := Load("../configs/shakespeare.toml", sets)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Diff(base)
	want := []string{"model.heads=4", "model.norm=pre", "train.lr=0.01", `sample.prompt="a b"`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	if d := base.Diff(base); len(d) != 0 {
		t.Errorf("Diff with itself = %v", d)
	}
	// Diff output must be usable as --set again.
	again, err := Load("../configs/shakespeare.toml", got)
	if err != nil {
		t.Fatal(err)
	}
	if *again != *c {
		t.Errorf("re-applying Diff gives %+v, want %+v", *again, *c)
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"heads", "context", "embedding", "top_k", "lr"}
	for word, want := range map[string]string{
		"heds": "heads", "Heads": "heads", "contxet": "context", "embeding": "embedding",
		"top-k": "top_k", "lt": "lr", "xyz": "", "optimizer": "",
	} {
		if got := Suggest(word, keys); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// FuzzLoad checks that no input makes Load panic or print a multi-line
// error. `go test` runs the seeds; `go test -fuzz FuzzLoad` explores.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"", "[model]\nheads = 2\n", "[model\n", "a = [1, {b = 2}]\n", "[[model]]\n",
		"model.heads.x = 1\n", "extends = \"x.toml\"\n", "[train]\nlr = -inf\n",
		"[sample]\nprompt = \"\"\"\nmulti\nline\n\"\"\"\n", "\x00\xff", "[data]\nsplit = 1e400\n",
		"[model]\ncontext = 9223372036854775807\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		dir := t.TempDir()
		p := filepath.Join(dir, "x.toml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p, []string{"sample.tokens=1"})
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Errorf("loaded config does not validate: %v", err)
		}
	})
}

// TestShakespeareWritesEverySetting: configs/shakespeare.toml says that it
// writes out every setting, so that a reader sees them all in one place;
// every key gptg knows must be in it (model.vocab and train.out are left
// out on purpose: they are derived, and the file says so).
func TestShakespeareWritesEverySetting(t *testing.T) {
	text, err := os.ReadFile("../configs/shakespeare.toml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if _, err := toml.Decode(string(text), &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range getSchema().allSettable() {
		section, name, _ := strings.Cut(key, ".")
		if key == "model.vocab" || key == "train.out" {
			continue
		}
		if _, ok := doc[section][name]; !ok {
			t.Errorf("configs/shakespeare.toml does not write out %s", key)
		}
	}
}
