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
		return &config.Error{File: tr.cfg.Path, Key: "--init", Msg: fmt.Sprintf(
			"%s holds another model than this config describes: it has %s; set the config's [model] to the file's (gptg inspect %s)",
			path, strings.Join(diff, ", "), path)}
	}
	for _, side := range []struct {
		name      string
		file, run []string
	}{{"source", m.Src.Words(), tr.corpus.Src.Words()}, {"target", m.Tgt.Words(), tr.corpus.Tgt.Words()}} {
		if !slices.Equal(side.file, side.run) {
			return &config.Error{File: tr.cfg.Path, Key: "--init", Msg: fmt.Sprintf(
				"%s has a %s vocabulary of %d words, the corpus %s one of %d (or in another order): starting from a model needs the same words",
				path, side.name, len(side.file), tr.cfg.Data.Path, len(side.run))}
		}
	}
	if err := m.Apply(tr.params); err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	fmt.Fprintf(tr.opts.Log, "starting from the weights of %s\n", path)
	return nil
}
