package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
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
// then "done", as apiGenerate streams tokens.
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
	start := time.Now()
	type result struct {
		r   *translate.Result
		err error
	}
	// A translation is at most the model's max_target words: it runs to
	// its end, and the time limit answers the request if it does not.
	ch := make(chan result, 1)
	go func() {
		defer release() // when it ends, even past the time limit: the translator is in use until then
		res, err := tr.Translate(req.Prompt, translate.Options{Beam: max(1, req.Beam), Alpha: 0.6})
		ch <- result{res, err}
	}()
	var res result
	select {
	case res = <-ch:
	case <-ctx.Done():
		if r.Context().Err() == nil {
			httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("the translation took longer than the time limit (%s)", s.opts.TimeLimit))
		}
		return
	}
	if errors.Is(res.err, translate.ErrInput) {
		httpError(w, http.StatusBadRequest, oneLine(res.err.Error()))
		return
	}
	if res.err != nil {
		fail(w, res.err)
		return
	}
	ev, ok := newEventStream(w)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	for i, word := range res.r.Words {
		if i > 0 {
			word = " " + word
		}
		b, _ := json.Marshal(word)
		if ev.send("token", string(b)) != nil {
			return
		}
	}
	secs := time.Since(start).Seconds()
	n := len(res.r.Words)
	b, _ := json.Marshal(map[string]any{"tokens": n, "seconds": secs, "tokens_per_s": float64(n) / math.Max(secs, 1e-9),
		"stopped": "", "text": res.r.Text, "log_p": res.r.LogProb, "source": res.r.Source})
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
	buf := make([]byte, 0, 32)
	for vi, v := range []struct {
		name       string
		rows, cols []string
		maps       [][]matrixT
	}{{"cross", a.Written, a.Source, a.Cross}, {"encoder", a.Source, a.Source, a.Encoder}, {"decoder", a.Target, a.Target, a.Decoder}} {
		if vi > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%q:{"rows":%s,"cols":%s,"maps":[`, v.name, js(v.rows), js(v.cols))
		for bi, heads := range v.maps {
			if bi > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('[')
			for h, mat := range heads {
				if h > 0 {
					b.WriteByte(',')
				}
				b.WriteByte('[')
				for i, x := range mat.W {
					if i > 0 {
						b.WriteByte(',')
					}
					if math.IsNaN(x) || math.IsInf(x, 0) {
						b.WriteString("null")
						continue
					}
					b.Write(strconv.AppendFloat(buf[:0], x, 'g', 6, 64))
				}
				b.WriteByte(']')
			}
			b.WriteByte(']')
		}
		b.WriteString("]}")
	}
	b.WriteString("}}")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte(b.String()))
}
