package config

import (
	"fmt"
	"math"
	"os"

	"github.com/gptg/gptg/internal/memlimit"
)

// DefaultMaxMemory is train.max_memory's default, in GiB: well above what
// the models this CPU trainer is for need (the seed's takes ~0.1 GiB), and
// below what a laptop has.
const DefaultMaxMemory = 8

// GiB is the unit of train.max_memory.
const GiB = 1 << 30

// ParamCount is the number of parameters of the model m describes: the
// sum of the sizes of the tensors its graph (and its model file) holds.
// Vocab must be known (not 0).
func (m Model) ParamCount() int64 {
	V, T, C := int64(m.Vocab), int64(m.Context), int64(m.Embedding)
	H := int64(m.FFMult) * C
	bias := int64(0)
	if m.Bias {
		bias = 1
	}
	linear := func(in, out int64) int64 { return in*out + bias*out }
	norm := C + bias*C

	perBlock := linear(C, H) + linear(H, C)
	if m.QKV {
		perBlock += 3 * linear(C, C)
	}
	if m.OutProj {
		perBlock += linear(C, C)
	}
	if m.Norm != "none" && m.Norm != "" {
		perBlock += 2 * norm
	}
	n := V*C + T*C + int64(m.Blocks)*perBlock
	if m.FinalNorm {
		n += norm
	}
	if !m.TieEmbeddings {
		n += linear(C, V)
	}
	return n
}

// elemSize is the bytes of one value of the model's dtype. bfloat16 keeps
// float32 weights, gradients and activations: its operands are rounded
// where a product packs them, into buffers of the product's blocks (a few
// hundred KB per thread whatever the model), so it takes float32's memory.
func (m Model) elemSize() float64 {
	if m.Dtype == "float64" {
		return 8
	}
	return 4
}

// forwardValues is the number of values a forward pass over rows
// positions (batch × sequence length) keeps for the backward pass: per
// block about twelve C-wide tensors (norms, q, k, v, the attention's
// output, projections, residual sums), two of the feed-forward's hidden
// width and the attention weights (heads × seqLen per position); then
// three vocabulary-wide rows. EvalBatch bounds an evaluation run by it;
// a training shard's memory is shardMemory's, which counts the same
// tensors a block but one vocabulary-wide row (the fused graph writes the
// logits' gradient over them). The unfused graph (GPTG_UNFUSED=1, a
// developer's comparison) keeps every intermediate and takes several
// times more. It is a float64: the largest configs validation lets
// through overflow an int64 here.
func (m Model) forwardValues(rows, seqLen float64) float64 {
	C := float64(m.Embedding)
	H := float64(m.FFMult) * C
	block := 12*C + 2*H + float64(m.Heads)*seqLen
	return rows * (float64(m.Blocks)*block + 4*C + 3*float64(m.Vocab))
}

// MemoryEstimate is what a command will add to the process's memory, in
// bytes: its graphs and the input it holds. Sizes are float64 because
// absurd configs overflow an int64.
type MemoryEstimate struct {
	Params      int64   // parameter count
	Weights     float64 // parameters, gradients, optimizer state
	Activations float64 // forward (and backward) intermediate values
	// Data is the input the command holds besides its graphs: a corpus's
	// token ids and the order of its training windows, a translation
	// corpus's pairs.
	Data float64
	// Untouched is address space the graphs' memory takes and never
	// writes (the part of a chunk of graph/fused's Memory that no loan
	// reached): no memory, so not in Total, but counted against ulimit -v
	// and -d, where reserving is what is limited.
	Untouched float64
}

// Total is the estimate in bytes: what the command adds. The process
// that runs it (the Go runtime, gptg's code, the threads) is not in it:
// it is running already, and the headroom it is compared with
// (internal/memlimit) is what the process may take beyond what it holds
// now. What the runtime takes beyond the command's own values under a
// limit is CheckMemory's (processSlack).
func (e MemoryEstimate) Total() float64 { return e.Weights + e.Activations + e.Data }

func (e MemoryEstimate) String() string {
	data := ""
	if e.Data > 0 {
		data = ", data " + FormatBytes(e.Data)
	}
	return fmt.Sprintf("about %s (%d parameters; weights and their state %s, activations %s%s)",
		FormatBytes(e.Total()), e.Params, FormatBytes(e.Weights), FormatBytes(e.Activations), data)
}

// Corpus is what a training run holds of its text corpus: Tokens token
// ids of IDBytes each (corpus.Dataset keeps 2-byte ids for up to 65,536
// distinct tokens, else 4; none of token files, which it reads a window
// at a time). Zero Tokens: not known (nothing counted).
type Corpus struct {
	Tokens  int64
	IDBytes int
	// TrainTokens is the training split's tokens, whose windows' order
	// data.sampling "windows" holds; 0: Tokens × data.split.
	TrainTokens int64
	// Held: the ids are in memory already (the trainer checks after
	// loading, when the process's usage counts them): only the windows'
	// order is still to come.
	Held bool
}

// CorpusOf is the Corpus that data.path is expected to hold, from its
// size before it is read (data.size when the config gives it, else the
// file's): a char or BPE corpus has at most one token per byte, 2-byte ids
// but past 65,536 distinct tokens. Nothing is counted where the size says
// too little — a word corpus (its words' lengths decide), a pairs corpus —
// or there is nothing to read yet (a built-in corpus, at most a few MB; a
// file to download from data.url, or a mistake the loader names): the
// trainer checks again with the corpus loaded (TrainMemoryOn), before the
// graphs are built, and the loader checks the ids against the headroom
// before reading them.
//
// Token files (data.format = "tokens") are read a window at a time: only
// the windows' order counts, from the training file's size.
func (c *Config) CorpusOf() Corpus {
	if c.Data.Format == FormatTokens {
		n := c.Data.Size
		if fi, err := os.Stat(c.Data.Path); n <= 0 && err == nil && fi.Mode().IsRegular() {
			n = fi.Size()
		}
		return Corpus{Tokens: n / 2, TrainTokens: n / 2}
	}
	if _, builtin := parseBuiltin(c.Data.Path); builtin || c.Data.Format == "pairs" || c.Data.Tokenizer == "word" {
		return Corpus{}
	}
	n := c.Data.Size
	if n <= 0 {
		if fi, err := os.Stat(c.Data.Path); err == nil && fi.Mode().IsRegular() {
			n = fi.Size()
		}
	}
	ids := 2
	if c.Data.Tokenizer == "bpe" && c.Data.VocabSize > 1<<16 {
		ids = 4
	}
	return Corpus{Tokens: n, IDBytes: ids}
}

// corpusBytes is what training holds of corpus d: the ids, and with
// data.sampling "windows" the order of an epoch's training windows (an
// int each: rand.Perm).
func (c *Config) corpusBytes(d Corpus) float64 {
	if d.Tokens <= 0 {
		return 0
	}
	n := float64(d.Tokens) * float64(d.IDBytes)
	if d.Held {
		n = 0
	}
	if c.Data.Sampling != "random" {
		stride := c.Data.Stride
		if stride <= 0 {
			stride = max(1, c.Model.Context/2)
		}
		train := float64(d.TrainTokens)
		if train <= 0 {
			train = float64(d.Tokens) * c.Data.Split
		}
		n += 8 * math.Ceil(train/float64(stride))
	}
	return n
}

// TrainMemory estimates training c on the corpus data.path is expected to
// hold (CorpusOf); TrainMemoryOn once it is loaded.
func (c *Config) TrainMemory() MemoryEstimate { return c.TrainMemoryOn(c.CorpusOf()) }

// TrainMemoryOn estimates training c on corpus d: the weights, AdamW's
// two moments, the sums of accumulated gradients, each shard's memory
// (its activations and the gradients lent from the same memory), the
// evaluation graph sharing the weights, and the corpus.
// c.Model.Vocab must be known (0: the rest of the model is counted).
//
// Measured (peak RSS less the 25 MiB of a process that has not started
// to train; /usr/bin/time, docs/architecture.md "Training"): the estimate
// is 1.0–1.4 times it from the seed's 0.1M parameters to GPT-2's 124M.
func (c *Config) TrainMemoryOn(d Corpus) MemoryEstimate {
	m := c.Model
	if m.EncoderDecoder() {
		return c.translationTrainMemory(0, 0, []TranslationShape{{c.Data.SourceLen(), c.Data.TargetLen()}}, nil)
	}
	P, E := m.ParamCount(), m.elemSize()
	// weights (E), AdamW's moments (2×E, in the weights' dtype); and
	// once, the weights drawn or read from a file (--init's model, a
	// resumed run's checkpoint) before they are copied into the graph's:
	// garbage of E, which the collector takes back under the soft limit
	// main sets
	weights := float64(P) * (E + 2*E + E)
	if c.Train.GradAccum > 1 {
		weights += float64(P) * E // the sums of the accumulated gradients
	}
	S := TrainShards(m, c.Train.Batch)
	rows := float64(c.Train.Batch) * float64(m.Context)
	return MemoryEstimate{
		Params:  P,
		Weights: weights,
		// every shard's memory; the batch's input and target ids (the
		// trainer's and the graph's, 8 bytes each). Evaluation at the
		// training batch runs at the first shard's size and borrows its
		// buffers; a larger evaluation batch (EvalBatch) has buffers of
		// its own.
		Activations: float64(S)*m.shardMemory(rows/float64(S)) + 24*rows + m.evalActivations(c.Train.Batch),
		Data:        c.corpusBytes(d),
		Untouched:   float64(S) * m.chunkTail(rows/float64(S)),
	}
}

// chunkTail is the address space a graph's memory over rows positions
// (a training shard's, a forward-only graph's) may reserve beyond what it
// writes: the end of a chunk no loan reached, bounded by the graph's
// widest tensor (tailOf). Measured:
// with it left out, a run at embedding 256, 4 blocks, 4 heads, context
// 128, batch 16 (2 shards) was accepted at ulimit -v 2,125,000 KiB and
// ran out of address space 2 runs of 3 (309 MiB of heap against an
// estimate of 240 MiB).
func (m Model) chunkTail(rows float64) float64 {
	return m.tailOf(rows * max(float64(m.FFMult)*float64(m.Embedding), float64(m.Vocab), float64(m.Heads)*float64(m.Context)))
}

// tailOf is the most a chunk of graph/fused's Memory may leave unwritten
// when its widest request is widest values: the chunk is 64 requests of
// that size, at most 64 MiB (arena.go's chunkBytes).
func (m Model) tailOf(widest float64) float64 {
	return min(64<<20, 64*m.elemSize()*widest)
}

// shardMemory is the most a training shard over rows positions holds at
// once in its memory (graph/fused's Memory), where the backward pass's
// gradients are borrowed as the activations they replace are given back.
// Its activations are most at the start of the backward pass: per block
// forwardValues' C-wide and hidden-width tensors and the attention weights
// (counted a quarter above their size for the softmax's gradient beside
// them: measured 1.04 times, T 256, C 128, batch 8, float64, 8 heads
// against 1), with dropout its masks (the attention weights' and three
// C-wide ones; the 10.8M shape's peak RSS at dropout 0.2 against 0 says
// 2,560 values a position a block, this counts 2,688), and one
// vocabulary-wide row a position
// (the logits, whose gradient is written over them). The output
// layer's gradient is taken first, beside all of it; by the end of the
// backward pass every gradient is alive and the activations are gone.
// Between the two ends each block's activations give way to its
// gradients, so what is alive stays below the larger end. Measured, per
// shard: 124M (batch 4 × T 256, 2 shards, tied) 610 MiB alive at once
// (bench/NOTES.md, issue 35); this says 701 MiB. A chunk's part that no
// loan has touched takes no memory (chunkTail).
func (m Model) shardMemory(rows float64) float64 {
	E, C := m.elemSize(), float64(m.Embedding)
	H := float64(m.FFMult) * C
	attention := float64(m.Heads) * float64(m.Context)
	block, once := 12*C+2*H+1.25*attention, 4*C+float64(m.Vocab)
	if m.Dropout > 0 {
		block += attention + 3*C
		once += C
	}
	activations := E * rows * (float64(m.Blocks)*block + once)
	bias := 0.0
	if m.Bias {
		bias = 1
	}
	output := E * float64(m.Vocab) * (C + bias)
	return max(activations+output, E*float64(m.ParamCount()))
}

// TrainShards is how many graphs a fused training step splits its batch
// over (graph/tape.Shards, which this follows: two when the batch is even
// and half of it holds at least 32,768 activation values of the
// embedding's width). Each has its own gradients.
func TrainShards(m Model, batch int) int {
	if batch%2 == 0 && float64(batch/2)*float64(m.Context)*float64(m.Embedding) >= 1<<15 {
		return 2
	}
	return 1
}

// Bounds of EvalBatch: a run of the evaluation graph holds at most
// maxEvalRows positions and maxEvalBytes of (estimated) activations, and
// at most maxEvalChunk training batches.
const (
	maxEvalRows  = 1024
	maxEvalBytes = 64 << 20
	maxEvalChunk = 8
)

// EvalBatch is the number of windows per run of the forward-only graph
// that computes a test loss defined over batches of batch windows (the
// seed's: each batch's mean loss, averaged): k·batch, with k the largest
// of 1 … 8 that is at most batches (the number of batches to cover;
// math.MaxInt when not known yet) and keeps a run within 1024 positions
// and 64 MiB of estimated activations. Whole batches per run keep the
// windows the same as the seed's: the evaluation averages its runs'
// losses weighted by their windows, and runs the batches after the last
// whole run of k at the training batch.
//
// Why 1024 positions: a larger batch only pays where a run at the
// training batch is too small to keep the cores busy — a graph of under
// 32k activation values runs on one goroutine, and every op has a fixed
// cost. Measured (tokens/s of the forward-only graph, 1 and 2 threads):
// at the seed shape (128 positions per batch) 2 threads run 1.0× one
// thread's speed at 128 positions, 1.4–1.7× at 512 to 4096; at nanoGPT's
// CPU shape (768) and at the 10.8M shape (4096) 2, 4 and 8 times the batch
// are no faster, while each position costs 13 and 40 KB more. The 64 MiB
// bound keeps a large vocabulary's logits from growing the evaluation
// past what a small training step takes.
func (m Model) EvalBatch(batch, batches int) int {
	k := 1
	for next := 2; next <= maxEvalChunk && next <= batches; next++ {
		rows := float64(next) * float64(batch) * float64(m.Context)
		if rows > maxEvalRows || m.forwardBytes(rows) > maxEvalBytes {
			break
		}
		k = next
	}
	return k * batch
}

// evalActivations is what a training run's evaluation graph at
// EvalBatch takes beyond the training step's buffers: nothing when it runs
// at the training batch (its graph then takes the size of the step's
// first shard, a batch in TrainShards runs, and borrows that shard's
// buffers), else what a
// forward-only graph holds at its peak (forwardOnlyValues: it lends the
// rest). Counting all its forward values made the seed's estimate twice
// its measured use.
func (m Model) evalActivations(batch int) float64 {
	e := m.EvalBatch(batch, math.MaxInt)
	if e == batch {
		return 0
	}
	return m.elemSize() * m.forwardOnlyValues(float64(e)*float64(m.Context), float64(m.Context))
}

// forwardBytes is the activations of a forward-only graph over rows
// positions of the model's context: its forward values and logits.
func (m Model) forwardBytes(rows float64) float64 {
	return m.elemSize() * (m.forwardValues(rows, float64(m.Context)) + rows*float64(m.Vocab))
}

// forwardOnlyValues is what a forward-only fused graph over rows
// positions holds at its peak: the attention weights of every block
// (heads × seqLen per position), which such a graph keeps for reading
// (gptg attention), and the intermediates alive at once within a block
// (about six C-wide tensors and two of the feed-forward's width), which
// graph.Memory lends and takes back; then the logits and their
// softmax. Measured (the heap a run adds, go test harness over
// eval.compileForward): 80 KB per position at C 768, 7 blocks, 12 heads,
// T 256, float32 (this says 130); 74 KB at C 384, 6 blocks, 6 heads, T
// 256, float64 (this says 118); 26 KB at C 256, 6 blocks, 4 heads, T 128,
// float32 (this says 27).
func (m Model) forwardOnlyValues(rows, seqLen float64) float64 {
	C := float64(m.Embedding)
	H := float64(m.FFMult) * C
	return rows * (float64(m.Blocks)*float64(m.Heads)*seqLen + 6*C + 2*H + 2*float64(m.Vocab))
}

// KeptAttention is what forwardOnlyValues counts for the attention
// weights of every block but one, over rows positions of seqLen: what a
// forward-only program that lends them (sampling's, whose weights nobody
// reads) does not hold, a block's weights being alive at a time.
func (m Model) KeptAttention(rows, seqLen float64) float64 {
	return m.elemSize() * rows * float64(max(m.Blocks-1, 0)) * float64(m.Heads) * seqLen
}

// ForwardMemory estimates graphs that only run forward, as eval, sample and
// attention build: graphs copies of the weights besides the model file's,
// each with its activations for batch × seqLen positions.
func (m Model) ForwardMemory(batch, seqLen, graphs int) MemoryEstimate {
	return m.ForwardGraphs(batch, seqLen, graphs, graphs)
}

// ForwardGraphs is ForwardMemory for graphs of which only pools hold
// activations of their own: graphs that share one pool of intermediate
// buffers (eval's graphs at two batch sizes) never run at once, and a
// graph that is never run (inspect's) holds none.
func (m Model) ForwardGraphs(batch, seqLen, graphs, pools int) MemoryEstimate {
	P, E := m.ParamCount(), m.elemSize()
	rows := float64(batch) * float64(seqLen)
	return MemoryEstimate{
		Params:      P,
		Weights:     float64(P) * E * float64(1+graphs), // the file's copy and each graph's
		Activations: E * float64(pools) * m.forwardOnlyValues(rows, float64(seqLen)),
		Untouched:   float64(pools) * m.chunkTail(rows),
	}
}

// MemoryError is CheckMemory's refusal: bad input (a model or config too
// large for the limits), refused before anything is built.
type MemoryError struct{ msg string }

func (e *MemoryError) Error() string { return e.msg }

// CheckMemory refuses an estimate above limitGiB, saying what it is for,
// and how to raise the limit (override, e.g. "--set train.max_memory=N").
//
// Within the limit, the estimate must also fit in what the process may
// still take (internal/memlimit: ulimit -v and -d, the cgroup's
// memory.max, the machine's memory), with the slack the runtime needs
// under that limit (processSlack): a default of 8 GiB on a smaller
// machine or container would otherwise end in the runtime's out-of-memory
// trace.
func CheckMemory(e MemoryEstimate, limitGiB float64, what, override string) error {
	return checkMemory(e, limitGiB, what, override, true)
}

// checkMemory is CheckMemory, against what this process may still take
// too when here.
func checkMemory(e MemoryEstimate, limitGiB float64, what, override string, here bool) error {
	limit := limitGiB * GiB
	if e.Total() <= limit {
		if h, ok := findHeadroom(); here && ok && e.Total()+processSlack(h, e) > h.Bytes {
			slack := ""
			if s := processSlack(h, MemoryEstimate{}); s > 0 {
				slack = fmt.Sprintf(" plus %s for the Go runtime", FormatBytes(s))
			}
			if h.AddressSpace && e.Untouched > 0 {
				slack += fmt.Sprintf(" and %s of address space its graphs reserve unwritten", FormatBytes(e.Untouched))
			}
			return &MemoryError{fmt.Sprintf("%s needs %s%s, more than this process may still use (%s, under %s): make the model smaller, or give the process more memory",
				what, e, slack, FormatBytes(h.Bytes), h.Limit)}
		}
		return nil
	}
	return &MemoryError{fmt.Sprintf("%s needs %s, more than the limit of %s: make the model smaller, or raise the limit with %s%s",
		what, e, FormatBytes(limit), override, formatFloat(math.Ceil(e.Total()/GiB*10)/10))}
}

// findHeadroom is memlimit.Find; a test gives checkMemory a headroom of
// its choosing, exact where a process's own address space under a real
// ulimit -v varies from run to run by a heap arena.
var findHeadroom = memlimit.Find

// processSlack is what the process takes under limit h beyond an
// estimate's values, the same for every command. A fixed allowance for
// "the running program" is not among it: the program is running already,
// and the headroom is what it may take beyond what it holds (such an
// allowance, 64 MiB, refused tiny models at 4.6 times their use under a
// cgroup).
//
// Under an address-space limit (ulimit -v, -d) Go's heap reserves address
// space a heap arena (64 MiB) at a time, and a large tensor needs a run of
// free pages that the arenas held may not have: one arena is kept back
// (measured: a float64 training accepted without it crashed 1 run of 3 at
// its smallest accepted ulimit -v; with it 3 of 3 run; docs/architecture.md
// "Training").
//
// Under a cgroup's limit or the machine's memory, what counts is memory
// in use: 16 MiB for what grows with any command and no estimate counts
// (the stacks of the threads it starts, the collector's work buffers and
// metadata, garbage the soft limit main sets lets stand). Measured, a
// model command's use exceeded its values' estimate by up to 10 MiB (eval
// of a 4.8M model).
//
// Under an address-space limit the graphs' memory also reserves what it
// never writes (e.Untouched).
func processSlack(h memlimit.Headroom, e MemoryEstimate) float64 {
	if h.AddressSpace {
		return 64<<20 + e.Untouched
	}
	return 16 << 20
}

// FormatBytes prints a size in bytes, KiB, MiB or GiB.
func FormatBytes(n float64) string {
	if n >= GiB {
		return fmt.Sprintf("%.1f GiB", n/GiB)
	}
	if n < 1<<10 {
		return fmt.Sprintf("%.0f B", n)
	}
	if n < 1<<20 {
		return fmt.Sprintf("%.0f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f MiB", n/(1<<20))
}

// CheckTrainMemory refuses a config whose training would need more than
// train.max_memory (or than the process may still take), before anything
// is allocated. With model.vocab still 0 (taken from the data later) it
// checks the rest of the model, and the trainer checks again once the
// vocabulary is known.
//
// Only what trains calls it (train, graph, ablate, sweep): Load does not,
// so that sample, eval or attention reading a run's config.toml for its
// settings are not refused for what training the run would need — they
// check their own, forward-only, estimate.
func (c *Config) CheckTrainMemory() error { return c.CheckTrainMemoryOn(c.CorpusOf()) }

// CheckTrainMemoryOn is CheckTrainMemory once the corpus d is loaded.
func (c *Config) CheckTrainMemoryOn(d Corpus) error {
	return c.checkTrain(c.TrainMemoryOn(d), true)
}

// CheckTrainMemoryLimit refuses a config whose training estimate exceeds
// train.max_memory, and nothing else: for a plan whose runs may train on
// other machines (a sweep, which Slurm or Kubernetes may run), where this
// process's limits say nothing. Each run checks what its own process may
// take when it starts (the trainer's CheckTrainMemoryOn).
func (c *Config) CheckTrainMemoryLimit() error {
	return c.checkTrain(c.TrainMemory(), false)
}

// checkTrain refuses training estimate e beyond train.max_memory or, when
// here, what this process may still take, blaming train.max_memory where
// it was set.
func (c *Config) checkTrain(e MemoryEstimate, here bool) error {
	what := fmt.Sprintf("training this model (batch %d × context %d)", c.Train.Batch, c.Model.Context)
	if err := checkMemory(e, c.Train.MaxMemory, what, "--set train.max_memory=", here); err != nil {
		file := c.Path
		if c.maxMemoryFrom != "" {
			file = c.maxMemoryFrom
		}
		return &Error{File: file, Key: "train.max_memory", Msg: err.Error()}
	}
	return nil
}
