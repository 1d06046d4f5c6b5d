package config

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/internal/quote"
)

// Upper bounds that keep a typo (context = 320000) from turning into a
// multi-gigabyte allocation deep inside the model code. They are far above
// anything this project trains on a CPU.
const (
	maxContext   = 4096
	maxEmbedding = 8192
	maxBlocks    = 64
	maxFFMult    = 64
	maxBatch     = 4096
	maxBuckets   = 64
	// maxThreads is --threads' bound too: each thread is a goroutine and a
	// workspace, made before the first step (train.threads = 2^31 asked
	// for 16 GiB of workspace pointers).
	maxThreads = 4096
)

// MaxVocab bounds model.vocab, and so the distinct tokens a corpus may
// have: corpus stops counting a word corpus's words past it, before the
// count itself (a map of every distinct word) outgrows memory.
const MaxVocab = 1 << 20

// MinBPEVocab is the smallest data.vocab_size: the 256 byte values a
// byte-level BPE starts from, with no merge.
const MinBPEVocab = 256

// Validate reports the first impossible or absurd value in c as an *Error
// naming c.Path and the key. Stride 0 and Out "" are accepted (they mean
// "use the default"), so a Config from Default() validates.
func (c *Config) Validate() error {
	return c.validate(func(string) string { return c.Path })
}

// validate does the work of Validate; origin says which file (or --set)
// each key came from, so the error points at the line to change. It stays
// one long function because it is a list: one check per setting, in the
// config's order, so that the error reported first is the first bad
// setting a reader of the file meets.
func (c *Config) validate(origin func(key string) string) error {
	v := &checker{origin: origin}

	d := c.Data
	if d.Path == "" {
		v.fail("data.path", "must not be empty")
	}
	if d.URL != "" {
		u, err := url.Parse(d.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.fail("data.url", "%q is not an http(s) URL (leave it empty to use data.path only)", d.URL)
		}
	}
	if name, ok := parseBuiltin(d.Path); ok {
		if !slices.Contains(BuiltinCorpora, name) {
			msg := fmt.Sprintf("there is no built-in corpus %q (built in: %s)", name, strings.Join(BuiltinCorpora, ", "))
			if g := suggestBuiltin(name); g != "" {
				msg = fmt.Sprintf("%s; did you mean %q?", msg, BuiltinPrefix+g)
			}
			v.fail("data.path", "%s", msg)
		}
		if d.URL != "" {
			v.fail("data.url", "is for downloading a file, and data.path %q is built into gptg: leave url out, or set data.path to a file", d.Path)
		}
	}
	if d.SHA256 != "" && !isHex(d.SHA256, 64) {
		v.fail("data.sha256", "%q is not a SHA-256 (expected 64 hex characters, or empty)", d.SHA256)
	}
	if d.Size < 0 {
		v.fail("data.size", "%d is negative (it is the corpus's size in bytes; 0 = not checked)", d.Size)
	}
	v.oneOf("data.tokenizer", d.Tokenizer, "char", "word", "gpt2", "bpe")
	switch {
	case d.Tokenizer == "bpe" && d.VocabSize == 0:
		v.fail("data.vocab_size", "is missing: tokenizer = \"bpe\" learns that many tokens on the training split (at least %d, the byte values; e.g. 512)", MinBPEVocab)
	case d.Tokenizer == "bpe":
		v.intIn("data.vocab_size", d.VocabSize, MinBPEVocab, MaxVocab)
		if c.Model.Vocab != 0 && c.Model.Vocab != d.VocabSize {
			v.fail("model.vocab", "is %d but data.vocab_size is %d: the model's vocabulary is the learned one (leave model.vocab out)", c.Model.Vocab, d.VocabSize)
		}
	case d.VocabSize != 0:
		v.fail("data.vocab_size", "only tokenizer = \"bpe\" reads it (data.tokenizer is %q, whose vocabulary is not learned): leave it out, or set tokenizer = \"bpe\"", d.Tokenizer)
	}
	v.float("data.split", d.Split)
	if d.Format == FormatTokens {
		if d.Split != 0 {
			v.fail("data.split", "%s is not used with format = \"tokens\": the token files are split already (data.path trains, data.val_path tests): leave split out, or set it to 0", formatFloat(d.Split))
		}
	} else if !(d.Split > 0 && d.Split < 1) {
		v.fail("data.split", "%s is out of range (allowed: between 0 and 1, exclusive)", formatFloat(d.Split))
	}
	v.atLeast("data.stride", d.Stride, 0)
	v.oneOf("data.sampling", d.Sampling, "windows", "random")
	v.oneOf("data.format", d.Format, FormatText, FormatTokens, FormatPairs)
	v.tokenFiles(d)
	if d.Format == "pairs" && d.Tokenizer != "word" {
		v.fail("data.tokenizer", "%q cannot read a pairs corpus (pairs are read word by word, lower-cased, punctuation split off: use \"word\" or leave it out)", d.Tokenizer)
	}
	if d.Format == "pairs" && d.Sampling == "random" {
		v.fail("data.sampling", "%q is for a text corpus: a pairs corpus is batched by sentence length (data.buckets)", d.Sampling)
	}
	v.intIn("data.min_count", d.MinCount, 1, 1<<30)
	v.intIn("data.min_source", d.MinSource, 1, maxContext-1)
	v.intIn("data.max_source", d.MaxSource, max(1, d.MinSource), maxContext-1)
	v.intIn("data.max_target", d.MaxTarget, 1, maxContext-1)
	v.intIn("data.buckets", d.Buckets, 1, maxBuckets)

	m := c.Model
	v.intIn("model.vocab", m.Vocab, 0, MaxVocab)
	if d.Tokenizer == "gpt2" && m.Vocab != 0 && m.Vocab != bpe.GPT2Size {
		v.fail("model.vocab", "%d is not GPT-2's %d tokens (data.tokenizer = \"gpt2\"): set %d or leave it out", m.Vocab, bpe.GPT2Size, bpe.GPT2Size)
	}
	v.intIn("model.context", m.Context, 1, maxContext)
	v.intIn("model.embedding", m.Embedding, 1, maxEmbedding)
	v.intIn("model.blocks", m.Blocks, 0, maxBlocks)
	v.intIn("model.heads", m.Heads, 1, max(1, m.Embedding))
	if m.Heads >= 1 && m.Embedding >= 1 && m.Embedding%m.Heads != 0 {
		v.fail("model.heads", "%d does not divide embedding %d (heads must divide embedding)", m.Heads, m.Embedding)
	}
	v.oneOf("model.norm", m.Norm, "none", "pre", "post")
	v.oneOf("model.activation", m.Activation, "gelu", "gelu_exact", "relu")
	v.intIn("model.ff_mult", m.FFMult, 1, maxFFMult)
	v.oneOf("model.dtype", m.Dtype, "float32", "float64", DtypeBF16)
	v.oneOf("model.init", m.Init, "torch", "gpt2")
	v.float("model.dropout", m.Dropout)
	if m.Dropout < 0 || m.Dropout >= 1 {
		v.fail("model.dropout", "%s is out of range (allowed: 0 <= dropout < 1, 0 = off)", formatFloat(m.Dropout))
	}
	// "" in arch and positions is the decoder-only model's (a Model built
	// in code or read from an older model file).
	if m.Arch != "" {
		v.oneOf("model.arch", m.Arch, ArchDecoderOnly, ArchEncoderDecoder)
	}
	v.intIn("model.encoder_blocks", m.EncoderBlocks, 0, maxBlocks)
	v.intIn("model.decoder_blocks", m.DecoderBlocks, 0, maxBlocks)
	v.intIn("model.ff_hidden", m.FFHidden, 0, maxFFMult*maxEmbedding)
	if m.Positions != "" {
		v.oneOf("model.positions", m.Positions, "learned", "sinusoidal")
	}
	v.float("model.label_smoothing", m.LabelSmoothing)
	if m.LabelSmoothing < 0 || m.LabelSmoothing >= 1 {
		v.fail("model.label_smoothing", "%s is out of range (allowed: 0 <= label_smoothing < 1, 0 = off; the paper's is 0.1)", formatFloat(m.LabelSmoothing))
	}
	if m.EncoderDecoder() {
		if m.Dtype == DtypeBF16 {
			v.fail("model.dtype", "%q is for the decoder-only model: the encoder-decoder computes in float32 or float64", m.Dtype)
		}
		if m.Norm != "pre" && m.Norm != "post" {
			v.fail("model.norm", "%q is not allowed with arch = \"encoder-decoder\" (allowed: post, the paper's; pre)", m.Norm)
		}
	} else {
		onlyEncDec := func(key string, set bool, instead string) {
			if set {
				v.fail(key, "only the encoder-decoder reads it (model.arch is %q)%s", cmp.Or(m.Arch, ArchDecoderOnly), instead)
			}
		}
		onlyEncDec("model.encoder_blocks", m.EncoderBlocks != 0, ": use model.blocks")
		onlyEncDec("model.decoder_blocks", m.DecoderBlocks != 0, ": use model.blocks")
		onlyEncDec("model.ff_hidden", m.FFHidden != 0, ": use model.ff_mult")
		onlyEncDec("model.positions", m.Positions != "" && m.Positions != "learned", "; the decoder-only model learns its positions")
		onlyEncDec("model.label_smoothing", m.LabelSmoothing != 0, "")
	}

	t := c.Train
	v.intIn("train.batch", t.Batch, 1, maxBatch)
	v.float("train.epochs", t.Epochs)
	v.atLeast("train.max_steps", t.MaxSteps, 0)
	if t.MaxSteps == 0 && !(t.Epochs > 0) {
		v.fail("train.epochs", "%s is invalid (must be > 0 unless train.max_steps > 0)", formatFloat(t.Epochs))
	} else if t.Epochs < 0 {
		v.fail("train.epochs", "%s is invalid (must be >= 0)", formatFloat(t.Epochs))
	} else if t.Epochs > MaxEpochs {
		// Epochs times steps per epoch must stay a count of steps.
		v.fail("train.epochs", "%s is out of range (allowed: up to %d; train.max_steps bounds a run by steps)", formatFloat(t.Epochs), MaxEpochs)
	}
	if !plainPath(t.Out) {
		v.fail("train.out", "%s holds a control character: choose a plain folder name", quote.Value(t.Out))
	}
	v.float("train.lr", t.LR)
	if !(t.LR > 0) {
		v.fail("train.lr", "%s is invalid (must be > 0)", formatFloat(t.LR))
	}
	v.float("train.min_lr", t.MinLR)
	if t.MinLR < 0 || t.MinLR > t.LR {
		v.fail("train.min_lr", "%s is out of range (allowed: 0..lr, and lr is %s)", formatFloat(t.MinLR), formatFloat(t.LR))
	}
	v.atLeast("train.warmup", t.Warmup, 0)
	v.floatAtLeast("train.weight_decay", t.WeightDecay)
	v.beta("train.beta1", t.Beta1)
	v.beta("train.beta2", t.Beta2)
	v.float("train.eps", t.Eps)
	if !(t.Eps > 0) {
		v.fail("train.eps", "%s is invalid (must be > 0)", formatFloat(t.Eps))
	}
	v.floatAtLeast("train.clip", t.Clip)
	v.atLeast("train.eval_every", t.EvalEvery, 0)
	v.atLeast("train.log_every", t.LogEvery, 1)
	v.atLeast("train.checkpoint_every", t.CheckpointEvery, 1)
	v.intIn("train.eval_batches", t.EvalBatches, 0, 1_000_000)
	v.intIn("train.grad_accum", t.GradAccum, 1, maxBatch)
	v.oneOf("train.decay", t.Decay, "all", "matrices")
	v.intIn("train.threads", t.Threads, 0, maxThreads)
	v.oneOf("train.schedule", t.Schedule, "cosine", "noam")
	if t.Schedule == "noam" && t.Warmup < 1 {
		v.fail("train.warmup", "%d is invalid with schedule = \"noam\" (must be >= 1: the rate is d^-0.5 · min(step^-0.5, step · warmup^-1.5); the paper's is 4000)", t.Warmup)
	}
	v.float("train.max_memory", t.MaxMemory)
	if !(t.MaxMemory > 0) {
		v.fail("train.max_memory", "%s is invalid (must be > 0, in GiB)", formatFloat(t.MaxMemory))
	}

	s := c.Sample
	v.atLeast("sample.tokens", s.Tokens, 0)
	v.floatAtLeast("sample.temperature", s.Temperature)
	v.atLeast("sample.top_k", s.TopK, 0)
	v.float("sample.top_p", s.TopP)
	if s.TopP < 0 || s.TopP > 1 {
		v.fail("sample.top_p", "%s is out of range (allowed: 0..1, 0 = off)", formatFloat(s.TopP))
	}

	return v.err
}

// tokenFiles checks the keys of token files (data.format = "tokens"):
// they are required there and refused elsewhere, where nothing would read
// them.
func (v *checker) tokenFiles(d Data) {
	if d.ValSHA256 != "" && !isHex(d.ValSHA256, 64) {
		v.fail("data.val_sha256", "%q is not a SHA-256 (expected 64 hex characters, or empty)", d.ValSHA256)
	}
	if d.ValSize < 0 {
		v.fail("data.val_size", "%d is negative (it is the validation token file's size in bytes; 0 = not checked)", d.ValSize)
	}
	if d.Format != FormatTokens {
		for _, k := range []struct {
			key string
			set bool
		}{{"data.val_path", d.ValPath != ""}, {"data.val_sha256", d.ValSHA256 != ""}, {"data.val_size", d.ValSize != 0}, {"data.prepare", d.Prepare != ""}} {
			if k.set {
				v.fail(k.key, "is for token files: data.format is %q (set format = \"tokens\", or leave it out)", d.Format)
			}
		}
		return
	}
	switch {
	case d.Tokenizer == "word":
		v.fail("data.tokenizer", "\"word\" cannot decode token files (allowed: \"gpt2\", GPT-2's tokens; \"char\", the characters of the meta.pkl beside data.path)")
	case d.Tokenizer == "bpe":
		v.fail("data.tokenizer", "\"bpe\" learns its merges from a text, and token files hold ids already (allowed: \"gpt2\", GPT-2's tokens; \"char\", the characters of the meta.pkl beside data.path)")
	case d.ValPath == "":
		v.fail("data.val_path", "must name the validation token file (nanoGPT's val.bin) with format = \"tokens\"")
	case d.URL != "":
		v.fail("data.url", "is for downloading a text: token files are made with data.prepare, or gptg data prepare")
	}
	if _, ok := parseBuiltin(d.Path); ok {
		v.fail("data.path", "%q is a text built into gptg, not a token file: make token files with gptg data prepare", d.Path)
	}
	if d.Prepare != "" {
		v.oneOf("data.prepare", d.Prepare, PrepareRecipes...)
		if d.Tokenizer != "gpt2" {
			v.fail("data.tokenizer", "%q cannot read the tokens of data.prepare = %q, which are GPT-2's: set tokenizer = \"gpt2\"", d.Tokenizer, d.Prepare)
		}
	}
}

// checker keeps the first failure so validate reads as a flat list of rules
// instead of a ladder of if err != nil.
type checker struct {
	origin func(key string) string
	err    error
}

func (v *checker) fail(key, format string, args ...any) {
	if v.err == nil {
		v.err = &Error{File: v.origin(key), Key: key, Msg: fmt.Sprintf(format, args...)}
	}
}

func (v *checker) intIn(key string, n, lo, hi int) {
	if n < lo || n > hi {
		v.fail(key, "%d is out of range (allowed: %d..%d)", n, lo, hi)
	}
}

func (v *checker) atLeast(key string, n, lo int) {
	if n < lo {
		v.fail(key, "%d is invalid (must be >= %d)", n, lo)
	}
}

// float rejects NaN and ±Inf. Load already refuses them from files, but a
// Config changed in code could still carry one.
func (v *checker) float(key string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		v.fail(key, "%v is not allowed (must be a finite number)", x)
	}
}

func (v *checker) floatAtLeast(key string, x float64) {
	v.float(key, x)
	if x < 0 {
		v.fail(key, "%s is invalid (must be >= 0)", formatFloat(x))
	}
}

func (v *checker) beta(key string, x float64) {
	v.float(key, x)
	if x < 0 || x >= 1 {
		v.fail(key, "%s is out of range (allowed: 0 <= %s < 1)", formatFloat(x), key[strings.LastIndex(key, ".")+1:])
	}
}

func (v *checker) oneOf(key, s string, allowed ...string) {
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	msg := fmt.Sprintf("%q is not allowed", s)
	if g := Suggest(s, allowed); g != "" {
		msg += fmt.Sprintf("; did you mean %q?", g)
	}
	v.fail(key, "%s (allowed: %s)", msg, strings.Join(allowed, ", "))
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// suggestBuiltin guesses the built-in corpus a wrong name meant: a close
// spelling, or a name that contains it ("shakespeare").
func suggestBuiltin(name string) string {
	if g := Suggest(name, BuiltinCorpora); g != "" {
		return g
	}
	for _, n := range BuiltinCorpora {
		if len(name) >= 3 && strings.Contains(n, strings.ToLower(name)) {
			return n
		}
	}
	return ""
}

// MaxEpochs bounds train.epochs: a million passes over the data is more
// than any run here, and far from where epochs × steps overflows.
const MaxEpochs = 1_000_000

// plainPath reports whether a folder path holds no control characters,
// which would reach terminals, logs and scripts raw.
func plainPath(p string) bool {
	for _, r := range p {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}
