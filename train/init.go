package train

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/savedmodel"
)

// initFrom sets the new run's parameters to those of the model file at
// path: fine-tuning, as nanoGPT's init_from. The file must hold the model
// the config describes (dropout aside, which only training uses) over the
// same vocabulary as the run's corpus; the optimiser starts afresh.
func (t *trainer) initFrom(path string) error {
	m, err := savedmodel.Load(path)
	if err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	want, got := config.Default(), config.Default()
	want.Model, got.Model = t.cfg.Model, m.Spec
	got.Model.Dropout, got.Model.Dtype = want.Model.Dropout, want.Model.Dtype // the run's own
	if want.Model.Arch == "" {                                                // a Config built in code: the file's defaults
		want.Model.Arch, want.Model.Positions = got.Model.Arch, got.Model.Positions
	}
	if diff := got.Diff(want); len(diff) > 0 {
		return &config.Error{File: t.cfg.Path, Key: "--init", Msg: fmt.Sprintf(
			"%s holds another model than this config describes: it has %s; set the config's [model] to the file's (gptg inspect %s)",
			path, strings.Join(diff, ", "), path)}
	}
	if !slices.Equal(m.Vocab.Tokens(), t.data.Vocab.Tokens()) {
		return &config.Error{File: t.cfg.Path, Key: "--init", Msg: fmt.Sprintf(
			"%s has a vocabulary of %d tokens, the corpus %s one of %d (or in another order): fine-tuning needs the same tokens",
			path, m.Vocab.Size(), t.cfg.Data.Path, t.data.Vocab.Size())}
	}
	if err := m.Apply(t.prog.Params); err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	fmt.Fprintf(t.opts.Log, "starting from the weights of %s\n", path)
	return nil
}
