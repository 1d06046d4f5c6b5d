package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

var evalCommand = command{
	summary: "test loss of a model file on a corpus",
	usage: `Usage: gptg eval MODEL.safetensors|RUN_DIR [--data FILE] [--batch N] [--split F] [--stride N] [--prefix-only]

A translation model (model.arch = "encoder-decoder") prints its test loss
per target word over the run's test pairs, translates them greedily and
prints the corpus BLEU of those translations (4-grams, brevity penalty,
lower-cased 13a tokens);
--data, --batch, --split, --stride and --prefix-only are the language
models' and are refused.

For a language model, prints the test loss as the seed defines it: the mean, over the whole
batches of the corpus's test split (the last 1−split of its tokens, cut
into windows of the model's context every stride tokens), of each batch's
mean cross-entropy. The corpus must have the model's vocabulary. Where
a batch is small (under 1024 positions), several batches go through the
model at once: the same windows and the same loss, sooner.

A run folder stands for its model.safetensors. Without --data, the corpus,
split and stride are those of the config.toml beside the model file: the
corpus the run recorded (data.sha256, data.size), found from any working
directory (data.path, where it was when the run started, the same place
relative to the run folder or inside it, its name beside the run folder,
or built into gptg); a file that holds other text is refused.

A run on nanoGPT's token files (data.format = "tokens") is evaluated on
its validation token file (data.val_path, found the same way), every
window of it; --data FILE is then another token file of the model's
vocabulary, and --split is refused. --tokens --data FILE evaluates any
model on a token file of its vocabulary, every window of it (nanoGPT's
eval_gpt2: an imported GPT-2 on openwebtext's val.bin).

Flags:
  --data FILE      the corpus, a file or builtin:NAME (default: the run's own)
  --tokens         --data FILE is a token file (nanoGPT's uint16 ids, as
                   in train.bin and val.bin) of the model's vocabulary
  --batch N        windows per batch (default the run's train.batch, as its
                   training measured it; 4 for a model file elsewhere)
  --split F        fraction of the tokens used for training (default 0.9,
                   or the run's data.split)
  --stride N       tokens between window starts (default context/2, or
                   the run's data.stride when --data is not given)
  --show N         translation models: print N test pairs with their
                   greedy translations
  --prefix-only    score every position seeing only its prefix, as
                   generation does. For a causal model this equals the plain
                   loss; a model without the mask reads the tokens it
                   predicts in the plain loss, and this exposes it.
` + threadsUsage,
	run: runEval,
}

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	threads := threadsFlag(fs)
	dataPath := fs.String("data", "", "")
	batch := fs.Int("batch", 4, "")
	split := fs.Float64("split", 0.9, "")
	prefixOnly := fs.Bool("prefix-only", false, "")
	tokenFile := fs.Bool("tokens", false, "")
	strideFlag := fs.Int("stride", 0, "")
	show := fs.Int("show", 0, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *show < 0 || *show > 1_000_000 {
		return usagef("--show %d must be between 0 and 1000000", *show)
	}
	if len(pos) == 1 {
		if path, err := modelPath(pos[0]); err == nil && translate.IsTranslationFile(path) {
			// A flag that would be ignored would print a loss the user
			// did not ask for: it is refused instead.
			for _, name := range []string{"data", "batch", "split", "stride", "prefix-only"} {
				if set[name] {
					return usagef("--%s is for language models: a translation model is evaluated on its run's test pairs (the config.toml beside it names them)", name)
				}
			}
			return evalTranslation(path, *threads, *show, stdout, stderr)
		}
	}
	switch {
	case len(pos) != 1:
		return usagef("eval needs exactly one MODEL file, got %d arguments", len(pos))
	case set["show"]:
		return usagef("--show is for translation models (it prints test pairs with their translations)")
	case *batch < 1 || *batch > 4096:
		return usagef("--batch %d must be between 1 and 4096", *batch)
	case !(*split > 0 && *split < 1):
		return usagef("--split %v must be between 0 and 1 (exclusive)", *split)
	case *strideFlag < 0:
		return usagef("--stride %d must be ≥ 0 (0: context/2)", *strideFlag)
	}
	model, err := modelPath(pos[0])
	if err != nil {
		return err
	}
	if _, ok := builtin.Parse(*dataPath); *dataPath != "" && !ok {
		if _, err := os.Lstat(*dataPath); errors.Is(err, iofs.ErrNotExist) {
			return usagef("--data %s: no such file", quote.Name(*dataPath))
		}
	}
	s := evalSource{data: *dataPath, split: *split, batch: *batch}
	if err := s.resolve(model, set, *tokenFile, *strideFlag); err != nil {
		return err
	}
	m, err := s.openModel(model, *prefixOnly)
	if err != nil {
		return err
	}
	data, err := s.load(m)
	if err != nil {
		return err
	}
	defer data.Close()
	return s.testLoss(m, data, *threads, *prefixOnly, stdout, stderr)
}

// evalSource is what gptg eval of a language model reads its test windows
// from: the corpus (or token file), its cut and the batch.
type evalSource struct {
	data   string
	split  float64
	stride int // 0: context/2
	batch  int
	tokens bool // data is a token file
}

// resolve fills in what the flags left to the run: the run's own batch,
// and without --data its corpus and cut, so that `gptg eval runs/x`
// reproduces the test loss its training printed.
func (s *evalSource) resolve(model string, set map[string]bool, tokenFile bool, strideFlag int) error {
	why := "its batch"
	if s.data == "" {
		why = "the corpus (--data is not given)"
	}
	cfg, err := runConfig(model, why)
	if err != nil {
		return err
	}
	if cfg != nil && !set["batch"] {
		s.batch = cfg.Train.Batch
	}
	// A run on token files: its test split is a token file of its own
	// (data.val_path), or --data's, read in the model's vocabulary.
	s.tokens = (cfg != nil && cfg.Data.Format == config.FormatTokens) || tokenFile
	if tokenFile && s.data == "" {
		return usagef("--tokens says that --data FILE is a token file: give --data")
	}
	if tokenFile && set["split"] {
		return usagef("--split is for a text: a token file (--tokens) is read whole as the test split")
	}
	if s.tokens && set["split"] {
		return usagef("--split is for a text: run %s trained on token files, and its test split is a token file of its own (data.val_path, or --data)", filepath.Dir(model))
	}
	if s.tokens && s.data == "" {
		if s.data, err = train.FindValidation(filepath.Dir(model), cfg); err != nil {
			return fmt.Errorf("%w, or give --data FILE", err)
		}
		s.stride = cfg.Data.Stride
	}
	if s.data == "" {
		if cfg == nil {
			return usagef("eval needs --data FILE (there is no %s beside %s to take it from)", train.ConfigFile, model)
		}
		// From any working directory, and only the very text the run
		// was trained on (train.FindCorpus).
		if s.data, err = train.FindCorpus(filepath.Dir(model), cfg); err != nil {
			return fmt.Errorf("%w, or give --data FILE", err)
		}
		s.stride = cfg.Data.Stride
		if !set["split"] {
			s.split = cfg.Data.Split
		}
	}
	if set["stride"] {
		s.stride = strideFlag
	}
	return nil
}

// openModel opens the model, its graphs and the corpus counted against
// the memory the process may use before either is read.
func (s *evalSource) openModel(model string, prefixOnly bool) (*savedmodel.Model, error) {
	// The corpus is held whole as token ids: counted with the model, from
	// its size, before either is read.
	held := func(spec config.Model) float64 { return 0 }
	if size := corpus.FileSize(s.data); size > 0 && !s.tokens { // token files are read a window at a time
		kind := corpus.Char
		if meta, err := savedmodel.LoadMeta(model); err == nil { // else openModel says what is wrong
			kind = meta.Vocab.Kind()
		}
		held = func(spec config.Model) float64 { return corpus.HeldBytes(size, kind, spec.Vocab) }
	}
	m, err := openModel(model, func(spec config.Model) graphsOf {
		// The plain loss: a graph at --batch and, where the model's
		// EvalBatch is larger, one at that batch, sharing one pool of
		// buffers (counted at the larger batch). The prefix-only loss, at
		// --batch: at worst one graph per prefix length besides the
		// plain one, each with buffers of its own.
		g := graphsOf{batch: spec.EvalBatch(s.batch, math.MaxInt), seqLen: spec.Context, count: 1, pools: 1, what: "evaluating"}
		if g.batch > s.batch {
			g.count = 2
		}
		if prefixOnly {
			prefix := graphsOf{batch: s.batch, seqLen: spec.Context, count: 1 + spec.Context, pools: 1 + spec.Context, what: "evaluating"}
			if spec.ForwardGraphs(prefix.batch, prefix.seqLen, prefix.count, prefix.pools).Total() > spec.ForwardGraphs(g.batch, g.seqLen, g.count, g.pools).Total() {
				g = prefix
			}
		}
		g.corpus, g.corpusPath, g.bf16 = held(spec), s.data, true
		return g
	})
	return m, err
}

// load reads the test windows in the model's vocabulary.
func (s *evalSource) load(m *savedmodel.Model) (*corpus.Dataset, error) {
	var data *corpus.Dataset
	var err error
	if s.tokens {
		data, err = corpus.LoadTokens(context.Background(), "", s.data, m.Vocab, m.Spec.Context, s.stride)
	} else if m.Vocab.Kind() == corpus.BPE {
		// The model's own merges read the text: nothing is learned again.
		data, err = corpus.LoadBPE(context.Background(), s.data, m.Vocab, m.Spec.Context, s.stride, s.split)
	} else {
		data, err = corpus.Load(s.data, m.Vocab.Kind(), m.Spec.Context, s.stride, s.split)
	}
	if err != nil {
		return nil, err
	}
	if !slices.Equal(data.Vocab.Tokens(), m.Vocab.Tokens()) {
		data.Close()
		return nil, fmt.Errorf("%s has a different vocabulary (%d tokens) from the model's (%d tokens)",
			s.data, data.Vocab.Size(), m.Vocab.Size())
	}
	return data, nil
}

// testLoss prints the model's test loss on data, and with prefixOnly its
// prefix-only loss.
func (s *evalSource) testLoss(m *savedmodel.Model, data *corpus.Dataset, threads int, prefixOnly bool, stdout, stderr io.Writer) error {
	bar := newStatus(stderr, "test loss")
	loss, n, err := eval.ModelTestLossProgress(m, data, s.batch, backend(threads), bar.update)
	bar.done()
	if err != nil {
		return err
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return notFinite(m, "test loss")
	}
	// The corpus is named: the run's own is found by its content wherever
	// it is (train.FindCorpus), which need not be where data.path says now.
	of := fmt.Sprintf("split %v of %s", s.split, s.data)
	if s.tokens {
		of = "token file " + s.data
	}
	fmt.Fprintf(stdout, "test loss %.6f\n%s: %d test windows (context %d, stride %d), %d batches of %d\n",
		loss, of, data.NumTest(), data.Context, data.Stride, n, s.batch)
	if prefixOnly {
		bar = newStatus(stderr, "prefix-only loss")
		pl, _, err := eval.PrefixOnlyProgress(m, data, s.batch, backend(threads), bar.update)
		bar.done()
		if err != nil {
			return err
		}
		if math.IsNaN(pl) || math.IsInf(pl, 0) {
			return notFinite(m, "prefix-only test loss")
		}
		fmt.Fprintf(stdout, "prefix-only test loss %.6f\n", pl)
	}
	return nil
}
