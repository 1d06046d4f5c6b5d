package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/translate"
)

// memoryLimit is GPTG_MAX_MEMORY in GiB, or config.DefaultMaxMemory.
func memoryLimit() (float64, error) {
	s := os.Getenv(envMaxMemory)
	if s == "" {
		return config.DefaultMaxMemory, nil
	}
	limit, err := strconv.ParseFloat(s, 64)
	if err != nil || !(limit > 0) {
		return 0, usagef("%s=%q is not a number of GiB", envMaxMemory, s)
	}
	return limit, nil
}

// translationGraphs says which graphs a command builds from a
// translation model for sources of srcLen positions (words and EOS).
type translationGraphs func(m *translate.Model, srcLen int) config.TranslationGraphs

// openTranslation reads a translation model file after checking, from its
// header, that the model and the graphs the command builds (graphs, for
// what: "translating with", …) fit in GPTG_MAX_MEMORY and in what the
// process may still take: a model too large is refused unread, in one
// line, instead of ending in the runtime's out-of-memory trace.
func openTranslation(path, what string, graphs translationGraphs) (*translate.Model, error) {
	return openTranslationOn(path, what, graphs, "", 0)
}

// openTranslationOn is openTranslation for a command that reads the pairs
// file corpusPath, of size bytes, after the model: what it will hold of it
// (pairs.HeldBytes) is counted in the check, so that a corpus too large
// is refused before the model or the pairs are read.
func openTranslationOn(path, what string, graphs translationGraphs, corpusPath string, size int64) (*translate.Model, error) {
	limit, err := memoryLimit()
	if err != nil {
		return nil, err
	}
	held := pairs.HeldBytes(size)
	return translate.LoadChecked(path, func(m *translate.Model, dataBytes int64) error {
		e := m.Config.TranslationMemory(m.Src.Size(), m.Tgt.Size(), dataBytes, graphs(m, m.UsualSource()))
		doing := fmt.Sprintf("%s: %s this model", path, what)
		rest := e.Weights + e.Activations
		e.Activations += held
		if held >= 1<<20 {
			doing += fmt.Sprintf(" on %s (its pairs take up to %s)", quote.Name(corpusPath), config.FormatBytes(held))
		}
		err := config.CheckMemory(e, limit, doing, envMaxMemory+"=")
		if err != nil && held >= 1<<20 && held > rest {
			// The pairs, more than the model, are what does not fit.
			err = errors.New(strings.Replace(err.Error(), "make the model smaller", "evaluate on fewer pairs", 1))
		}
		if err != nil {
			return refusedError{err}
		}
		return nil
	})
}

// checkLonger is a Translator.Check for tr's model, opened with
// openTranslation: a source longer than Model.UsualSource is checked again, its
// graphs at its length — all of the estimate against GPTG_MAX_MEMORY, and
// what is not yet held (the pair of graphs this length adds) against what
// the process may still take. The error is the translator's ErrInput: the sentence is
// refused, exit 2.
func checkLonger(m *translate.Model, what string, graphs translationGraphs) func(int) error {
	return func(S int) error {
		if S <= m.UsualSource() {
			return nil
		}
		limit, err := memoryLimit()
		if err != nil {
			return err
		}
		what := fmt.Sprintf("%s a sentence of %d words with %s", what, S-1, m.Path)
		g := graphs(m, S)
		e := m.Config.TranslationMemory(m.Src.Size(), m.Tgt.Size(), 0, g)
		if e.Total() <= limit*config.GiB {
			// Against the headroom, only what this length adds: its pair
			// of decoding graphs. The weights and the graphs of other
			// lengths the translator holds are in the process's use
			// already (counting all at this length made a 3,000-word
			// sentence's need 2.5× its peak).
			g.Decoders = min(g.Decoders, 1)
			e = m.Config.TranslationMemory(m.Src.Size(), m.Tgt.Size(), 0, g)
			e.Weights = 0
		}
		if err := config.CheckMemory(e, limit, what, envMaxMemory+"="); err != nil {
			// The sentence, not the model, is what is too large.
			msg := strings.Replace(err.Error(), "make the model smaller", "give shorter sentences", 1)
			return fmt.Errorf("%w: %s", translate.ErrInput, msg)
		}
		return nil
	}
}

// decodeGraphs are the graphs a translator keeps while it translates
// sentence by sentence over rows rows (the beam width): up to
// translate.MaxPrograms, an encoder and a decoder step each — or, with
// recompute (--no-cache), an encoder and a whole decoder, counted as whole
// graphs. attention adds the whole model's graph of one sentence.
func decodeGraphs(rows int, recompute, attention bool) translationGraphs {
	return func(m *translate.Model, S int) config.TranslationGraphs {
		g := config.TranslationGraphs{SrcLen: S, TgtLen: m.TargetLen(), EncodeRows: 1}
		if recompute {
			g.Wholes, g.WholeBatch = translate.MaxPrograms/2, rows
		} else {
			g.Decoders, g.DecodeRows = translate.MaxPrograms/2, rows
		}
		if attention {
			g.Wholes, g.WholeBatch = g.Wholes+1, 1
		}
		return g
	}
}
