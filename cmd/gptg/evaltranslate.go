package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"

	"github.com/gptg/gptg/bleu"
	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

// evalTranslation is `gptg eval` of an encoder–decoder: the test loss per
// target word over the run's test pairs, as training printed it, then
// the greedy translations of the test sources (show of them printed) and
// their corpus BLEU against the references.
func evalTranslation(model string, threads, show int, stdout, stderr io.Writer) error {
	// The run's config says the graphs' batch and buckets; what is wrong
	// with it is said after what is wrong with the model, as before.
	cfg, cfgErr := runConfig(model, "the test pairs")
	// The pairs are counted with the model, from the size the run
	// recorded (or the file's, for an older run), before either is read.
	pairsPath, size := "", int64(0)
	if cfg != nil {
		pairsPath, size = cfg.Data.Path, cfg.Data.Size
		if size == 0 {
			size = corpus.FileSize(pairsPath)
		}
	}
	m, err := openTranslationOn(model, "evaluating", evalGraphs(cfg), pairsPath, size)
	if err != nil {
		return err
	}
	if cfgErr != nil {
		return cfgErr
	}
	if cfg == nil {
		return usagef("evaluating a translation model needs its run's %s beside %s (it names the pairs and the split)", train.ConfigFile, model)
	}
	c, err := runPairs(model, cfg, m)
	if err != nil {
		return err
	}
	B := cfg.Train.Batch
	shapes := pairs.NewBatcher(c.Train, B, cfg.Data.MaxSource, cfg.Data.MaxTarget, cfg.Data.Buckets).Shapes()
	test := pairs.NewBatcherShapes(c.Test, B, shapes)
	be := backend(threads)
	evals, err := translate.LossGraphs(m, B, shapes, be)
	if err != nil {
		return err
	}
	bar := newStatus(stderr, "test loss")
	loss, err := translate.Loss(test, evals)
	bar.done()
	if err != nil {
		return err
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return notFiniteIn(m.Path, m.Tensors, "test loss")
	}
	fmt.Fprintf(stdout, "test loss %.6f (per target word, %d test pairs of %s)\n", loss, len(c.Test), c.Path)

	tr := translate.NewTranslator(m, be)
	tr.Check = checkLonger(m, "evaluating", evalGraphs(cfg))
	shown := 0
	bar = newStatus(stderr, "translating the test pairs")
	var hyps []string
	var refs [][]string
	err = tr.GreedyTestSet(test, B, func(i, n int) { bar.update(i, n) }, func(k int, hyp string) {
		hyps, refs = append(hyps, hyp), append(refs, []string{c.Test[k].TgtText})
		if shown < show {
			fmt.Fprintf(stdout, "\nsource:    %s\nreference: %s\ngreedy:    %s\n", c.Test[k].SrcText, c.Test[k].TgtText, hyp)
			shown++
		}
	})
	if err != nil {
		return err
	}
	bar.done()
	// The vocabulary is lower-case, so the references are folded too
	// (sacrebleu's -lc); the hypotheses are the model's words joined back.
	score, err := bleu.Corpus(hyps, refs, bleu.Options{Lowercase: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "greedy translations of the %d test pairs, lower-cased 13a tokens: %s\n", len(hyps), score)
	return nil
}

// runPairs loads the pairs the run of model was trained on, from any
// working directory and only those (data.sha256 and data.size in its
// config.toml), and checks that they give the model's vocabularies.
func runPairs(model string, cfg *config.Config, m *translate.Model) (*pairs.Corpus, error) {
	var err error
	if cfg.Data.Path, err = train.FindCorpus(filepath.Dir(model), cfg); err != nil {
		return nil, err
	}
	c, err := pairs.LoadFor(cfg)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(c.Src.Words(), m.Src.Words()) || !slices.Equal(c.Tgt.Words(), m.Tgt.Words()) {
		return nil, fmt.Errorf("%s gives other vocabularies (%d source, %d target words) than the model's (%d, %d): the pairs file or [data] changed since training",
			c.Path, c.Src.Size(), c.Tgt.Size(), m.Src.Size(), m.Tgt.Size())
	}
	return c, nil
}

// evalGraphs are the graphs evalTranslation builds, at the largest of the
// run's shapes: a loss graph per bucket of the training batch, then the
// greedy decoders of the test batches (a translator keeps up to
// translate.MaxPrograms).
func evalGraphs(cfg *config.Config) translationGraphs {
	batch, buckets := config.Default().Train.Batch, 1
	if cfg != nil {
		batch, buckets = cfg.Train.Batch, max(cfg.Data.Buckets, 1)
	}
	return func(m *translate.Model, S int) config.TranslationGraphs {
		return config.TranslationGraphs{SrcLen: S, TgtLen: m.TargetLen(),
			Wholes: buckets, WholeBatch: batch, Loss: true,
			Decoders: min(buckets, translate.MaxPrograms/2), DecodeRows: batch}
	}
}
