package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gptg/gptg/graph"
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
// with req.Beam) and streams the translation's words as "token" events,
// then "done", as apiGenerate streams tokens: a greedy translation word
// by word as the decoder writes them, a beam search's at its end.
// Closing the connection (the page's stop) or the time limit stops it.
func (s *Server) translationGenerate(w http.ResponseWriter, r *http.Request, model string, key fileKey, req genRequest) {
	if req.Beam < 0 || req.Beam > maxBeam {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("beam %d must be between 1 and %d (0: greedy)", req.Beam, maxBeam))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.TimeLimit)
	defer cancel()
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
	ev, ok := newEventStream(w)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	start := time.Now()
	n := 0
	send := func(word string) error {
		if n > 0 {
			word = " " + word
		}
		n++
		b, _ := json.Marshal(word)
		return ev.send("token", string(b))
	}
	res, err := tr.Translate(req.Prompt, translate.Options{Beam: max(1, req.Beam), Alpha: 0.6, Word: send, Context: ctx})
	stopped := ""
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		stopped = fmt.Sprintf("time limit (%s) reached", s.opts.TimeLimit)
	case r.Context().Err() != nil:
		return // the page went away or pressed stop: nobody to tell
	case err != nil:
		b, _ := json.Marshal(map[string]string{"error": oneLine(err.Error())})
		ev.send("error", string(b))
		return
	}
	done := map[string]any{"stopped": stopped}
	if res != nil {
		if req.Beam > 1 { // its words, now that the search is over
			for _, word := range res.Words {
				if send(word) != nil {
					return
				}
			}
		}
		done["text"], done["log_p"], done["source"] = res.Text, res.LogProb, res.Source
	}
	secs := time.Since(start).Seconds()
	done["tokens"], done["seconds"], done["tokens_per_s"] = n, secs, float64(n)/math.Max(secs, 1e-9)
	b, _ := json.Marshal(done)
	ev.send("done", string(b))
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
