package main

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/translate"
)

// inspectTranslation is `gptg inspect` of an encoder–decoder model file:
// its metadata, then its parameters, checked against the graph it
// describes; --vocab prints both vocabularies.
func inspectTranslation(path string, vocab bool, stdout io.Writer) error {
	limit, err := memoryLimit()
	if err != nil {
		return err
	}
	// The file is read a tensor at a time (the table needs the names and
	// shapes, the check every value), into a graph that is never run.
	m, err := translate.Scan(path, func(m *translate.Model, dataBytes int64) error {
		e := translationScanMemory(m, dataBytes)
		if err := config.CheckMemory(e, limit, fmt.Sprintf("%s: inspecting this model", path), envMaxMemory+"="); err != nil {
			return refusedError{err}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The graph checks the file's names and shapes (ZeroWeights).
	g, err := graph.BuildTranslation(m.Spec, graph.TranslationOptions{Batch: 1, SrcLen: 1, TgtLen: 1, Weights: m.ZeroWeights()})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if vocab {
		for _, side := range []struct {
			name string
			v    *pairs.Vocab
		}{{"source", m.Src}, {"target", m.Tgt}} {
			fmt.Fprintf(stdout, "# %s vocabulary\n", side.name)
			for id, w := range side.v.Words() {
				fmt.Fprintf(stdout, "%d\t%q\n", id, w)
			}
		}
		return nil
	}
	f := m.Config
	fmt.Fprintf(stdout, "file: %s (weights stored as %s)\narch: %s\n", path, storedDtypes(modelfile.CountDtypes(slices.Collect(maps.Values(m.Tensors)))), translate.Arch)
	fmt.Fprintf(stdout, "model: embedding %d, heads %d, encoder_blocks %d, decoder_blocks %d, ff_hidden %d, norm %s, positions %s, activation %s, tie_embeddings %v, dropout %v, label_smoothing %v, dtype %s\n",
		f.Embedding, f.Heads, m.Spec.EncoderBlocks, m.Spec.DecoderBlocks, m.Spec.FFHidden, m.Spec.Norm, m.Spec.Positions,
		m.Spec.Activation, m.Spec.TieEmbeddings, m.Spec.Dropout, m.Spec.LabelSmoothing, m.Spec.Dtype)
	fmt.Fprintf(stdout, "vocabularies: %d source words, %d target words (word tokenizer; PAD=0 SOS=1 EOS=2 UNK=3)\n", m.Src.Size(), m.Tgt.Size())
	fmt.Fprintf(stdout, "lengths: sources up to %d words, translations up to %d\n", m.MaxSource, m.MaxTarget)
	fmt.Fprintln(stdout)
	printParams(stdout, g.Params)
	return nil
}

// translationScanMemory is what inspect holds of a translation model file
// of dataBytes of tensor data, read by translate.Scan: its largest tensor
// as read (float64 when the file holds more than 6 bytes a parameter) and
// the zeros the graph's parameters share.
func translationScanMemory(m *translate.Model, dataBytes int64) config.MemoryEstimate {
	s := m.Spec
	params := m.Config.TranslationParams(s.SrcVocab, s.TgtVocab)
	largest := float64(max(s.SrcVocab, s.TgtVocab, s.MaxLen, s.FFHidden)) * float64(s.Embedding)
	elem := 4.0
	if s.Dtype == "float64" || dataBytes > 6*params {
		elem = 8
	}
	return config.MemoryEstimate{Params: params, Weights: 2 * elem * largest}
}

// graphTranslation is `gptg graph` of an encoder–decoder config: the
// vocabularies come from the pairs file; the training graph of the
// largest batch shape is built and counted.
func graphTranslation(cfg *config.Config, stdout io.Writer, forward bool, dot func(string) error) error {
	c, err := pairs.LoadFor(cfg)
	if err != nil {
		return err
	}
	spec := translate.Spec(cfg.Model, c.Src.Size(), c.Tgt.Size())
	S, T := cfg.Data.SourceLen(), cfg.Data.TargetLen()
	m, err := graph.BuildTranslation(spec, graph.TranslationOptions{Batch: cfg.Train.Batch, SrcLen: S, TgtLen: T,
		Loss: true, Seed: cfg.Train.Seed, Backend: backend(1)})
	if err != nil {
		return err
	}
	nodes, forwardNodes := "forward", len(m.G.AllNodes())
	if !forward { // Compile adds the backward nodes (gorgonia.Grad)
		p, err := tape.CompileTranslation(m, true)
		if err != nil {
			return err
		}
		defer p.Close()
		nodes = "forward + backward"
	}
	printParams(stdout, m.Params)
	fmt.Fprintf(stdout, "graph nodes (%s, batch %d, source length %d, target length %d): %d\n",
		nodes, cfg.Train.Batch, S, T, len(m.G.AllNodes()))
	return dot(graph.Dot(m.G, forwardNodes))
}

// refuseTranslation answers a language-model command given an
// encoder–decoder model file; doing says what the command was to do.
func refuseTranslation(path, doing string) error {
	if translate.IsTranslationFile(path) {
		return usagef("%s is a translation model (encoder-decoder), and %s needs a language model: use gptg translate, eval or inspect", path, doing)
	}
	return nil
}

// refuseLanguageModel is refuseTranslation the other way round: a model
// file that reads but holds a language model, given to a command that
// needs a translation model.
func refuseLanguageModel(path, doing string) error {
	meta, err := modelfile.ReadMeta(path, modelfile.Limits{}) // the header only
	if err == nil && !translate.IsTranslation(meta) {
		return usagef("%s is a language model (decoder-only), and %s needs a translation model (encoder-decoder): use gptg sample or attention", path, doing)
	}
	return nil
}
