package train

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/savedmodel"
)

// checkInitVocab refuses a corpus whose tokens are not those of the model
// file a new run starts from (--init), before model.vocab is compared
// with the corpus: the corpus is what differs, and "model.vocab is 55 but
// the corpus has 52" sent the user round in a circle (set model.vocab,
// then "leave vocab out"). It reads the file's header only.
func checkInitVocab(path string, cfg *config.Config, data *corpus.Dataset) error {
	m, err := savedmodel.LoadMeta(path)
	if err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	have, want := data.Vocab, m.Vocab
	if slices.Equal(have.Tokens(), want.Tokens()) && have.Kind() == want.Kind() {
		return nil
	}
	fail := func(format string, args ...any) error {
		return &config.Error{File: cfg.Path, Key: "--init", Msg: fmt.Sprintf(format, args...) +
			"; fine-tuning needs a corpus of exactly the model's tokens, as the text it was trained on has: use such a corpus, or train a new model without --init"}
	}
	if have.Kind() != want.Kind() {
		return fail("%s is a %s-level model, and the corpus %s is read as %s tokens (data.tokenizer)", path, want.Kind(), cfg.Data.Path, have.Kind())
	}
	missing, extra := notIn(want.Tokens(), have.Tokens()), notIn(have.Tokens(), want.Tokens())
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("lacks %d of the %d %s tokens of %s (%s)", len(missing), want.Size(), want.Kind(), path, listTokens(missing)))
	}
	if len(extra) > 0 {
		parts = append(parts, fmt.Sprintf("has %d %s tokens that %s does not know (%s)", len(extra), have.Kind(), path, listTokens(extra)))
	}
	if len(parts) == 0 { // the same tokens in another order
		parts = append(parts, fmt.Sprintf("has the tokens of %s in another order", path))
	}
	return fail("the corpus %s %s", cfg.Data.Path, strings.Join(parts, " and "))
}

// initBPE is the vocabulary a tokenizer = "bpe" run reads its corpus with
// when it starts from the model file init (--init): the model's own
// merges, not merges learned on the new corpus, whose tokens would be
// other ones. It is nil (learn them) without --init, for another
// tokenizer, or when the model is not a learned BPE (checkInitVocab then
// says so).
func initBPE(cfg *config.Config, init string) (*corpus.Vocab, error) {
	if init == "" || cfg.Data.Tokenizer != corpus.BPE {
		return nil, nil
	}
	m, err := savedmodel.LoadMeta(init)
	if err != nil {
		return nil, fmt.Errorf("--init: %w", err)
	}
	if m.Vocab.Kind() != corpus.BPE {
		return nil, nil
	}
	if m.Vocab.Size() != cfg.Data.VocabSize {
		return nil, &config.Error{File: cfg.Path, Key: "data.vocab_size", Msg: fmt.Sprintf(
			"is %d, but %s's learned BPE has %d tokens: fine-tuning reads the corpus with the model's merges; set vocab_size = %d", cfg.Data.VocabSize, init, m.Vocab.Size(), m.Vocab.Size())}
	}
	return m.Vocab, nil
}

// notIn lists the tokens of a that b does not have, in a's order.
func notIn(a, b []string) []string {
	in := map[string]bool{}
	for _, t := range b {
		in[t] = true
	}
	var out []string
	for _, t := range a {
		if !in[t] {
			out = append(out, t)
		}
	}
	return out
}

// listTokens quotes the first few tokens of a list.
func listTokens(tokens []string) string {
	const most = 8
	q := make([]string, 0, most+1)
	for i, t := range tokens {
		if i == most {
			q = append(q, "…")
			break
		}
		q = append(q, fmt.Sprintf("%q", t))
	}
	return strings.Join(q, ", ")
}

// initFrom sets the new run's parameters to those of the model file at
// path: fine-tuning, as nanoGPT's init_from. The file must hold the model
// the config describes (dropout aside, which only training uses) over the
// same vocabulary as the run's corpus; the optimiser starts afresh.
func (t *trainer) initFrom(path string) error {
	m, err := savedmodel.Load(path)
	if err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	full := m.Spec.Context
	cropped := cropPositions(m, t.cfg.Model.Context)
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
	if cropped {
		fmt.Fprintf(t.opts.Log, "  its %d learned positions cut to the config's context of %d\n", full, t.cfg.Model.Context)
	}
	return nil
}

// cropPositions cuts the learned position table of m to its first
// context rows when the config trains a shorter context than the file's,
// as nanoGPT's crop_block_size does for fine-tuning GPT-2 at block_size
// 256: every other weight is independent of the context, and a position
// the run never reaches would only be carried along unchanged. A longer
// context than the file's is left for initFrom to refuse.
func cropPositions(m *savedmodel.Model, context int) bool {
	spec := m.Spec
	if spec.Positions != "learned" || context <= 0 || context >= spec.Context || spec.EncoderDecoder() {
		return false
	}
	pos, ok := m.Tensors["pos.weight"]
	if !ok || len(pos.Shape) != 2 || pos.Shape[0] != spec.Context || pos.Len() != spec.Context*pos.Shape[1] {
		return false // Apply names what is wrong
	}
	n := context * pos.Shape[1]
	pos.Shape = []int{context, pos.Shape[1]}
	if pos.F32 != nil {
		pos.F32 = pos.F32[:n]
	} else {
		pos.F64 = pos.F64[:n]
	}
	m.Tensors["pos.weight"] = pos
	m.Spec.Context = context
	return true
}
