package train

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/translate"
)

// initFrom sets a new translation run's parameters to those of the model
// file at path (gptg train --init): the file must hold the encoder–decoder
// the config describes (dropout, label smoothing and dtype aside, which
// only training uses) over the same two vocabularies; AdamW and the
// schedule start afresh. Two trainers started from one file start from the
// same weights: bench/transref.py's --init compares them step by step.
func (tr *translation) initFrom(path string) error {
	m, err := translate.Load(path)
	if err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	want, got := config.Default(), config.Default()
	want.Model, got.Model = tr.cfg.Model, m.Config
	got.Model.Dropout, got.Model.Dtype, got.Model.LabelSmoothing = want.Model.Dropout, want.Model.Dtype, want.Model.LabelSmoothing
	if diff := got.Diff(want); len(diff) > 0 {
		for i, d := range diff {
			// A pairs config's context comes from its length limits.
			if strings.HasPrefix(d, "model.context=") {
				diff[i] += fmt.Sprintf(" (trained with data.max_source = %d, data.max_target = %d)", m.MaxSource, m.MaxTarget)
			}
		}
		return &config.Error{File: tr.cfg.Path, Key: "--init", Msg: fmt.Sprintf(
			"%s holds another model than this config describes: it has %s; set the config's [model] to the file's (gptg inspect %s)",
			path, strings.Join(diff, ", "), path)}
	}
	for _, side := range []struct {
		name      string
		file, run []string
	}{{"source", m.Src.Words(), tr.corpus.Src.Words()}, {"target", m.Tgt.Words(), tr.corpus.Tgt.Words()}} {
		if slices.Equal(side.file, side.run) {
			continue
		}
		var parts []string
		if missing := notIn(side.file, side.run); len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("lacks %d of the model's %d (%s)", len(missing), len(side.file), listTokens(missing)))
		}
		if extra := notIn(side.run, side.file); len(extra) > 0 {
			parts = append(parts, fmt.Sprintf("has %d the model does not know (%s)", len(extra), listTokens(extra)))
		}
		if len(parts) == 0 { // a word's id is its rank by count in the corpus
			parts = append(parts, "has them counted in another order (words are numbered by how often they occur)")
		}
		return &config.Error{File: tr.cfg.Path, Key: "--init", Msg: fmt.Sprintf(
			"the %s words of the corpus %s are not those of %s: it %s; starting from a model needs exactly its words: use the pairs it was trained on, or train without --init",
			side.name, tr.cfg.Data.Path, path, strings.Join(parts, " and "))}
	}
	if err := m.Apply(tr.params); err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	fmt.Fprintf(tr.opts.Log, "starting from the weights of %s\n", path)
	return nil
}
