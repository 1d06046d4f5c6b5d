package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

type matrixT = graph.Matrix

// A translation run (model.arch = "encoder-decoder") has no sampler: its
// playground translates and its explorer shows the encoder's and the
// decoder's self-attention and the cross-attention alignment. These
// handlers take over apiGenerate and apiAttention for such runs, inside
// the same model-running slot and time limit. The model and its
// translators come from the server's model cache, as samplers do.

// maxBeam bounds a playground translation's beam width.
const maxBeam = 8

// translationGenerate translates req.Prompt (greedily, or by beam search
// with req.Beam) and streams the translation's words as apiGenerate
// streams tokens (streamTokens): a greedy translation word by word as the
// decoder writes them, a beam search's at its end; "done" adds the
// translation's "text", "log_p" and "source" words.
func (s *Server) translationGenerate(w http.ResponseWriter, r *http.Request, ctx context.Context, model string, key fileKey, req genRequest) {
	if req.Beam < 0 || req.Beam > maxBeam {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("beam %d must be between 1 and %d (0: greedy)", req.Beam, maxBeam))
		return
	}
	// A translation is a search for the likeliest sentence, not a draw:
	// settings of sampling would be accepted and ignored.
	if req.Temperature != nil || req.TopK != 0 || req.TopP != 0 || req.Seed != nil {
		httpError(w, http.StatusBadRequest, "temperature, top_k, top_p and seed are sampling settings; a translation run translates greedily or by beam search (beam)")
		return
	}
	tr, release, err := s.models.translator(model, key)
	if err != nil {
		fail(w, err)
		return
	}
	defer release()
	// A sentence the model cannot read is a 400 before the stream starts.
	if _, err := tr.SourceIDs(req.Prompt); err != nil {
		httpError(w, http.StatusBadRequest, oneLine(err.Error()))
		return
	}
	s.streamTokens(w, r, ctx, func(send func(string) error) (map[string]any, error) {
		first := true
		word := func(w string) error { // words as the page shows them: spaced
			if !first {
				w = " " + w
			}
			first = false
			return send(w)
		}
		res, err := tr.Translate(req.Prompt, translate.Options{Beam: max(1, req.Beam), Alpha: 0.6, Word: word, Context: ctx, MaxWords: req.Tokens})
		if err != nil {
			return nil, err
		}
		if req.Beam > 1 { // its words, now that the search is over
			for _, w := range res.Words {
				if err := word(w); err != nil {
					return nil, err
				}
			}
		}
		return map[string]any{"text": res.Text, "log_p": res.LogProb, "source": res.Source}, nil
	})
}

// translationAttention answers the three attentions of a translation run
// on a sentence and its translation (the model's own greedy one, or
// target): translate.Translator.Attention's numbers, which gptg attention
// draws.
func (s *Server) translationAttention(w http.ResponseWriter, model string, key fileKey, text, target string) {
	if len(target) > maxTextBytes {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("the target is longer than %d bytes", maxTextBytes))
		return
	}
	tr, release, err := s.models.translator(model, key)
	if err != nil {
		fail(w, err)
		return
	}
	a, err := tr.Attention(text, target)
	release()
	if errors.Is(err, translate.ErrInput) {
		httpError(w, http.StatusBadRequest, oneLine(err.Error()))
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	var b strings.Builder
	js := func(v any) string { j, _ := json.Marshal(v); return string(j) }
	fmt.Fprintf(&b, `{"translation":true,"translated":%t,"source":%s,"target":%s,"written":%s,"heads":%d,"views":{`,
		a.Translated, js(a.Source), js(a.Target), js(a.Written), tr.Spec.Heads)
	for vi, v := range []struct {
		name       string
		rows, cols []string
		maps       [][]matrixT
	}{{"cross", a.Written, a.Source, a.Cross}, {"encoder", a.Source, a.Source, a.Encoder}, {"decoder", a.Target, a.Target, a.Decoder}} {
		if vi > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%q:{"rows":%s,"cols":%s,"maps":[`, v.name, js(v.rows), js(v.cols))
		writeMaps(&b, v.maps)
		b.WriteString("]}")
	}
	b.WriteString("}}")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	setWriteDeadline(w) // a client that does not read must not hold the model slot
	w.Write([]byte(b.String()))
}

// bibleVerse is what a run of the built-in Bible corpus from before runs
// recorded an example sentence starts from (the en-es configs' source
// language).
const bibleVerse = "In the beginning God created the heavens and the earth."

// exampleSentence is the text a run's page starts from: the one the run
// recorded from its own training data (train.Example), so that a first
// click translates or explores words the model knows; for an older
// translation run of the built-in Bible corpus, a verse; else none (the
// page's own default for a language model).
func exampleSentence(cfg *config.Config, cfgText string) string {
	if s := train.Example([]byte(cfgText)); s != "" {
		return s
	}
	if cfg.Model.EncoderDecoder() && cfg.Data.Path == "builtin:bible-en-es" {
		return bibleVerse
	}
	return ""
}
