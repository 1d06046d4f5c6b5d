// Package config reads gptg experiment files (TOML) into a validated Config.
package config

// Config is one experiment: where the text comes from, the model's shape and
// switches, how to train it and how to sample from it.
type Config struct {
	// Path is the file the config was loaded from ("" when built in code).
	Path string `toml:"-" json:"-"`
	// Name is the file's base name without its extension; it names the run folder.
	Name string `toml:"-" json:"-"`
	// Extends is the file Path's extends names, as a path from the working
	// directory ("" if none): train records what the run changes from it.
	Extends string `toml:"-" json:"-"`

	Data   Data   `toml:"data" json:"data"`
	Model  Model  `toml:"model" json:"model"`
	Train  Train  `toml:"train" json:"train"`
	Sample Sample `toml:"sample" json:"sample"`

	// maxMemoryFrom is the file (or "--set") that set train.max_memory,
	// "" when it is the default: CheckTrainMemory's refusal names it.
	maxMemoryFrom string
}

// Data says where the corpus is and how it is cut into windows.
type Data struct {
	// Path is the text file, or "builtin:NAME" for a corpus built into
	// gptg (package corpus/builtin). A relative path is relative to the
	// current working directory, not to the config file.
	Path      string  `toml:"path" json:"path"`
	URL       string  `toml:"url" json:"url,omitempty"`       // where to download Path from if missing; http(s)
	SHA256    string  `toml:"sha256" json:"sha256,omitempty"` // expected hex digest of Path; lower case after Load
	Tokenizer string  `toml:"tokenizer" json:"tokenizer"`     // "char", "word", "gpt2" or "bpe"
	Split     float64 `toml:"split" json:"split"`             // fraction of tokens used for training, in (0, 1)
	Stride    int     `toml:"stride" json:"stride"`           // window step; 0 means context/2 (Load resolves it)
	// VocabSize is the size of a learned BPE vocabulary (tokenizer
	// "bpe"): the 256 byte values and VocabSize-256 merges learned on the
	// training split. Only tokenizer "bpe" reads it, and it needs it.
	VocabSize int `toml:"vocab_size" json:"vocab_size,omitempty"`
	// Sampling is how training batches are drawn: "windows" (every window
	// of the training split once per epoch, in an order drawn from (seed,
	// epoch)) or "random" (windows at random offsets drawn from (seed,
	// step), nanoGPT's get_batch; an epoch is then as many tokens as the
	// training split holds).
	Sampling string `toml:"sampling" json:"sampling"`
	// Size is the corpus's expected size in bytes, 0 = not checked. With
	// SHA256 it is how a run folder's config.toml records its corpus by
	// content, so that the run can find it again and refuse an edited one.
	Size int64 `toml:"size" json:"size,omitempty"`

	// Format is "text" (one running text, cut into windows: the
	// decoder-only chapters), "tokens" (nanoGPT's token files: Path its
	// train.bin, ValPath its val.bin, ids of the vocabulary Tokenizer
	// names) or "pairs" (a tab-separated file of source/target sentence
	// pairs, one per line: the translation chapter, read by package pairs).
	Format string `toml:"format" json:"format"`

	// The keys below apply to token files only (Format "tokens").

	// ValPath is the test split's token file (nanoGPT's val.bin); Path is
	// the training split's.
	ValPath string `toml:"val_path,omitempty" json:"val_path,omitempty"`
	// ValSHA256 and ValSize record ValPath by content, as SHA256 and Size
	// record Path.
	ValSHA256 string `toml:"val_sha256,omitempty" json:"val_sha256,omitempty"`
	ValSize   int64  `toml:"val_size,omitempty" json:"val_size,omitempty"`
	// Prepare names a recipe (see PrepareRecipes) that writes Path and
	// ValPath when both are missing, as data.url downloads a missing text:
	// "shakespeare" is nanoGPT's data/shakespeare/prepare.py.
	Prepare string `toml:"prepare,omitempty" json:"prepare,omitempty"`

	// The keys below apply to pairs only.
	// MinCount drops words seen fewer times than this in the training
	// pairs from a side's vocabulary; they read as UNK.
	MinCount int `toml:"min_count" json:"min_count"`
	// MinSource, MaxSource and MaxTarget are the length filter, in words:
	// pairs outside it are left out (and counted). The graph's shapes
	// follow from the maxima: SourceLen and TargetLen.
	MinSource int `toml:"min_source" json:"min_source"`
	MaxSource int `toml:"max_source" json:"max_source"`
	MaxTarget int `toml:"max_target" json:"max_target"`
	// Buckets is how many length buckets batches are drawn from: 1 pads
	// every batch to (SourceLen, TargetLen); more build one graph shape per
	// bucket and pad short pairs less.
	Buckets int `toml:"buckets" json:"buckets"`
}

// SourceLen is the encoder's sequence length for a pairs corpus: the
// longest source sentence kept plus its EOS.
func (d Data) SourceLen() int { return d.MaxSource + 1 }

// TargetLen is the decoder's sequence length for a pairs corpus: the
// longest target kept plus SOS (dec_in) or EOS (dec_tgt).
func (d Data) TargetLen() int { return d.MaxTarget + 1 }

// Model is the [model] table. Its JSON form (these tags) is also what the
// model file's metadata stores under "model", and what gptref.py reads.
type Model struct {
	Vocab      int    `toml:"vocab" json:"vocab"` // 0 = take it from the data
	Context    int    `toml:"context" json:"context"`
	Embedding  int    `toml:"embedding" json:"embedding"`
	Blocks     int    `toml:"blocks" json:"blocks"`
	Heads      int    `toml:"heads" json:"heads"`
	QKV        bool   `toml:"qkv" json:"qkv"`
	Mask       bool   `toml:"mask" json:"mask"`
	OutProj    bool   `toml:"out_proj" json:"out_proj"`
	Residual   bool   `toml:"residual" json:"residual"`
	Norm       string `toml:"norm" json:"norm"`             // "none" | "pre" | "post"
	Activation string `toml:"activation" json:"activation"` // "gelu" (tanh approximation) | "gelu_exact" (erf) | "relu"
	FFMult     int    `toml:"ff_mult" json:"ff_mult"`
	Dtype      string `toml:"dtype" json:"dtype"` // "float32" | "float64" | "bfloat16" (DtypeBF16)

	// The switches below make nanoGPT's GPT expressible (configs/nanogpt).

	// TieEmbeddings makes the output layer tok.weightᵀ, without a bias;
	// the file then has no out.weight.
	TieEmbeddings bool `toml:"tie_embeddings" json:"tie_embeddings"`
	// Bias false drops the bias of every linear layer and LayerNorm.
	Bias bool `toml:"bias" json:"bias"`
	// FinalNorm adds a LayerNorm (final_norm.*) before the output layer,
	// nanoGPT's ln_f.
	FinalNorm bool `toml:"final_norm" json:"final_norm"`
	// Init is "torch" (PyTorch's default per layer, the reference's) or
	// "gpt2" (nanoGPT's _init_weights: normal(0, 0.02) weights, zero
	// biases, normal(0, 0.02/√(2·blocks)) for the projections that end a
	// residual branch).
	Init string `toml:"init" json:"init"`
	// Dropout is the probability of zeroing an activation where nanoGPT
	// does, while training only; 0 = off.
	Dropout float64 `toml:"dropout" json:"dropout"`

	// The switches below are the translation chapter's ("Attention is all
	// you need"): an encoder–decoder over a pairs corpus.

	// Arch is "decoder-only" (the GPT chapters; "" means it too) or
	// "encoder-decoder".
	Arch string `toml:"arch" json:"arch,omitempty"`
	// EncoderBlocks and DecoderBlocks size the two stacks of an
	// encoder-decoder; 0 means model.blocks (Load resolves it).
	EncoderBlocks int `toml:"encoder_blocks" json:"encoder_blocks,omitempty"`
	DecoderBlocks int `toml:"decoder_blocks" json:"decoder_blocks,omitempty"`
	// FFHidden is the encoder-decoder's feed-forward width; 0 means
	// ff_mult × embedding (Load resolves it).
	FFHidden int `toml:"ff_hidden" json:"ff_hidden,omitempty"`
	// Positions is "learned" (a trained table, GPT's) or "sinusoidal"
	// (the paper's fixed sines and cosines); "" means learned.
	Positions string `toml:"positions" json:"positions,omitempty"`
	// LabelSmoothing is the paper's ε: the target distribution puts 1−ε
	// on the right word and spreads ε over the vocabulary; 0 = off.
	LabelSmoothing float64 `toml:"label_smoothing" json:"label_smoothing,omitempty"`
}

// EncoderDecoder reports whether m is the translation chapter's model.
func (m Model) EncoderDecoder() bool { return m.Arch == ArchEncoderDecoder }

// The values of data.format.
const (
	FormatText   = "text"
	FormatTokens = "tokens"
	FormatPairs  = "pairs"
)

// PrepareRecipes are the values of data.prepare: nanoGPT's recipes that
// gptg can make token files with (gptg data prepare NAME).
var PrepareRecipes = []string{"shakespeare"}

// The values of model.arch.
const (
	ArchDecoderOnly    = "decoder-only"
	ArchEncoderDecoder = "encoder-decoder"
)

// DtypeBF16 is model.dtype's mixed precision: the products of the linear
// layers, the attention and the output layer round both operands to
// bfloat16 and sum in float32; everything else (the weights and the model
// file, AdamW's moments, the norms, softmax and loss) stays float32. A
// model file records it, so that --init and inspect know how the model
// was trained. eval computes as training did (its losses are training's);
// sample, serve and attention compute float32 products on the float32
// weights (cmd/gptg openModel says why).
const DtypeBF16 = "bfloat16"

// Train holds the optimiser, schedule and bookkeeping settings.
type Train struct {
	Batch       int     `toml:"batch" json:"batch"`
	Epochs      float64 `toml:"epochs" json:"epochs"`
	MaxSteps    int     `toml:"max_steps" json:"max_steps"` // > 0: the run's length, whatever Epochs says; 0 = epochs decide
	LR          float64 `toml:"lr" json:"lr"`
	MinLR       float64 `toml:"min_lr" json:"min_lr"` // default: the final lr / 10
	Warmup      int     `toml:"warmup" json:"warmup"`
	WeightDecay float64 `toml:"weight_decay" json:"weight_decay"`
	Beta1       float64 `toml:"beta1" json:"beta1"`
	Beta2       float64 `toml:"beta2" json:"beta2"`
	Eps         float64 `toml:"eps" json:"eps"`
	Clip        float64 `toml:"clip" json:"clip"` // global gradient norm; 0 = off
	Seed        int64   `toml:"seed" json:"seed"`
	EvalEvery   int     `toml:"eval_every" json:"eval_every"` // 0 = only at the end
	Out         string  `toml:"out" json:"out"`               // run folder, relative to the working directory; default runs/<Name> (Load resolves it)
	LogEvery    int     `toml:"log_every" json:"log_every"`   // metrics.jsonl row every N steps
	// CheckpointEvery writes checkpoint and model every N steps, besides
	// evaluations, the end and interrupts.
	CheckpointEvery int `toml:"checkpoint_every" json:"checkpoint_every"`
	// EvalBatches estimates each test loss on so many batches at random
	// offsets of the test split (nanoGPT's eval_iters); 0 = every window
	// of the test split.
	EvalBatches int `toml:"eval_batches" json:"eval_batches"`
	// GradAccum runs so many batches of train.batch windows per step and
	// averages their gradients before the update (nanoGPT's
	// gradient_accumulation_steps).
	GradAccum int `toml:"grad_accum" json:"grad_accum"`
	// Decay says which parameters weight decay shrinks: "all", or
	// "matrices" (those with two or more dimensions, nanoGPT's
	// configure_optimizers: not biases or LayerNorm weights).
	Decay string `toml:"decay" json:"decay"`
	// Threads bounds the cores training and evaluation use; 0 = all of
	// them. The weights are the same bits for every value, so it is a
	// setting of the machine, not of the experiment (--threads overrides it).
	Threads int `toml:"threads" json:"threads"`
	// MaxMemory is the most memory, in GiB, that gptg lets a model's graphs
	// take (MemoryEstimate, checked before anything is built). Like Threads
	// it is a setting of the machine.
	MaxMemory float64 `toml:"max_memory" json:"max_memory"`
	// Schedule is "cosine" (linear warmup, then a cosine from lr to
	// min_lr) or "noam" ("Attention is all you need", eq. 3:
	// d^-0.5 · min(step^-0.5, step · warmup^-1.5) with d = model.embedding;
	// lr and min_lr are not used).
	Schedule string `toml:"schedule" json:"schedule"`
}

// Sample holds the defaults of `gptg sample`.
type Sample struct {
	Prompt      string  `toml:"prompt" json:"prompt"`
	Tokens      int     `toml:"tokens" json:"tokens"`
	Temperature float64 `toml:"temperature" json:"temperature"`
	TopK        int     `toml:"top_k" json:"top_k"` // 0 = off
	TopP        float64 `toml:"top_p" json:"top_p"` // 0 = off
}

// DefaultModel returns the seed chapter 000 model: Q/K/V projections and the
// causal mask, one head, no residuals or norms, GELU feed-forward.
func DefaultModel() Model {
	return Model{
		Context: 32, Embedding: 64, Blocks: 2, Heads: 1,
		QKV: true, Mask: true, OutProj: true, Residual: false,
		Norm: "none", Activation: "gelu", FFMult: 4, Dtype: "float32",
		Bias: true, Init: "torch",
		Arch: ArchDecoderOnly, Positions: "learned",
	}
}
