package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/translate"
)

// genRequest is the body of POST /api/generate.
type genRequest struct {
	ID          string   `json:"id"`
	Prompt      string   `json:"prompt"`
	Tokens      int      `json:"tokens"`
	Temperature *float64 `json:"temperature"`
	TopK        int      `json:"top_k"`
	TopP        float64  `json:"top_p"`
	Seed        *uint64  `json:"seed"`
	Beam        int      `json:"beam"` // a translation run's beam width (0, 1: greedy)
}

// slot takes one of the model-running slots without waiting; false means
// the server is busy (429).
func (s *Server) slot() (func(), bool) {
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, true
	default:
		return nil, false
	}
}

func (s *Server) busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	httpError(w, http.StatusTooManyRequests, fmt.Sprintf("busy: %d model runs (generations, attention maps) already going, the server's limit; try again in a moment", s.opts.Generations))
}

// apiGenerate draws tokens from a run's model and streams them as
// Server-Sent Events: "token" (the token's text, a JSON string) for each
// one as it is drawn, then "done" ({"tokens", "seconds", "tokens_per_s",
// "stopped"}) or "error". Closing the connection stops the generation.
func (s *Server) apiGenerate(w http.ResponseWriter, r *http.Request) {
	req, temp, seed, ok := s.readGenRequest(w, r)
	if !ok {
		return
	}
	f, _, err := s.lookupID(req.ID, kindRun)
	if err != nil {
		fail(w, err)
		return
	}
	done, ok := s.slot()
	if !ok {
		s.busy(w)
		return
	}
	defer done()
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.TimeLimit)
	defer cancel()
	model, key, err := s.modelPath(f)
	if err != nil {
		fail(w, err)
		return
	}
	if translate.IsTranslationFile(model) {
		s.translationGenerate(w, r, ctx, model, key, req)
		return
	}
	smp, release, err := s.models.sampler(model, key)
	if err != nil {
		fail(w, err)
		return
	}
	defer release()
	// A bad prompt is a 400 before the stream starts.
	if _, err := sample.EncodePrompt(smp.Model.Vocab, req.Prompt); err != nil {
		httpError(w, http.StatusBadRequest, oneLine(err.Error()))
		return
	}
	o := sample.Options{Tokens: req.Tokens, Temperature: temp, TopK: req.TopK, TopP: req.TopP, Seed: seed}
	s.streamTokens(w, r, ctx, func(send func(string) error) (map[string]any, error) {
		err := smp.Generate(req.Prompt, o, func(tok string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return send(tok)
		})
		if err != nil {
			return nil, err
		}
		// A BPE's tokens that end inside a character are sent with the
		// token that completes it: the events undercount the tokens drawn.
		return map[string]any{"tokens": req.Tokens}, nil
	})
}

// readGenRequest reads and checks a generation request, with its
// temperature and seed defaulted; on a bad one it answers the error
// itself and ok is false.
func (s *Server) readGenRequest(w http.ResponseWriter, r *http.Request) (req genRequest, temp float64, seed uint64, ok bool) {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if _, after := dec.Token(); err == nil && after != io.EOF {
		err = errors.New("the body holds more than one JSON value")
	}
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is larger than %d bytes", maxBodyBytes))
			return req, 0, 0, false
		}
		httpError(w, http.StatusBadRequest, "the request is not a generation request in JSON: "+err.Error())
		return req, 0, 0, false
	}
	temp = 1.0
	if req.Temperature != nil {
		temp = *req.Temperature
	}
	seed = uint64(42)
	if req.Seed != nil {
		seed = *req.Seed
	}
	switch {
	case len(req.Prompt) > maxTextBytes:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("the prompt is longer than %d bytes", maxTextBytes))
		return req, 0, 0, false
	case req.Tokens < 1 || req.Tokens > s.opts.MaxTokens:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("tokens %d must be between 1 and %d (the server's limit)", req.Tokens, s.opts.MaxTokens))
		return req, 0, 0, false
	case !(temp >= 0) || math.IsInf(temp, 0) || temp > 100:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("temperature %v must be a number from 0 to 100", temp))
		return req, 0, 0, false
	case req.TopK < 0:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("top_k %d must be ≥ 0", req.TopK))
		return req, 0, 0, false
	case !(req.TopP >= 0 && req.TopP <= 1):
		httpError(w, http.StatusBadRequest, fmt.Sprintf("top_p %v must be between 0 and 1", req.TopP))
		return req, 0, 0, false
	}
	return req, temp, seed, true
}

// streamTokens runs one generation, gen, and streams it as Server-Sent
// Events, the same for a GPT run's tokens and a translation's words:
// "token" (its text, a JSON string) for each one gen sends, then "done"
// ({"tokens", "seconds", "tokens_per_s", "stopped"} and the fields gen
// returns; "tokens" counts the events unless gen says how many it drew) or
// "error". ctx is the generation's (the request's, cut at the
// time limit): reaching the limit ends the stream with "done" saying so;
// a closed connection (the page went away or pressed stop) ends it
// without a word.
func (s *Server) streamTokens(w http.ResponseWriter, r *http.Request, ctx context.Context, gen func(send func(token string) error) (map[string]any, error)) {
	ev, ok := newEventStream(w)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	start := time.Now()
	n := 0
	done, err := gen(func(tok string) error {
		b, _ := json.Marshal(tok)
		n++
		return ev.send("token", string(b))
	})
	secs := time.Since(start).Seconds()
	stopped := ""
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		stopped = fmt.Sprintf("time limit (%s) reached", s.opts.TimeLimit)
	case r.Context().Err() != nil:
		return // nobody to tell
	case err != nil:
		b, _ := json.Marshal(map[string]string{"error": oneLine(err.Error())})
		ev.send("error", string(b))
		return
	}
	if done == nil {
		done = map[string]any{}
	}
	if drawn, ok := done["tokens"].(int); ok {
		n = drawn
	}
	done["tokens"], done["seconds"], done["tokens_per_s"], done["stopped"] = n, secs, float64(n)/math.Max(secs, 1e-9), stopped
	b, _ := json.Marshal(done)
	ev.send("done", string(b))
}

// apiAttention runs a run's model on a text and answers every block's
// and head's attention weights over its tokens: the numbers gptg
// attention draws (sample.Sampler.Attention, the same function).
func (s *Server) apiAttention(w http.ResponseWriter, r *http.Request) {
	text := r.URL.Query().Get("text")
	switch {
	case text == "":
		httpError(w, http.StatusBadRequest, "give a text: ?text=...")
		return
	case len(text) > maxTextBytes:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("the text is longer than %d bytes", maxTextBytes))
		return
	}
	f, _, err := s.lookup(r, kindRun)
	if err != nil {
		fail(w, err)
		return
	}
	done, ok := s.slot()
	if !ok {
		s.busy(w)
		return
	}
	defer done()
	model, key, err := s.modelPath(f)
	if err != nil {
		fail(w, err)
		return
	}
	if translate.IsTranslationFile(model) {
		s.translationAttention(w, model, key, text, r.URL.Query().Get("target"))
		return
	}
	smp, release, err := s.models.sampler(model, key)
	if err != nil {
		fail(w, err)
		return
	}
	defer release()
	m := smp.Model
	ids, err := m.Vocab.Encode(text)
	if err != nil {
		httpError(w, http.StatusBadRequest, "the text: "+oneLine(err.Error()))
		return
	}
	if len(ids) == 0 {
		httpError(w, http.StatusBadRequest, "the text has no tokens")
		return
	}
	cut := 0
	if T := m.Spec.Context; len(ids) > T { // as gptg attention: the last context tokens
		cut = len(ids) - T
		ids = ids[cut:]
	}
	// A model of up to gridAbove heads answers every head's map; a larger
	// one (GPT-2: 144) the block × head summary and one head's map, the
	// head= one or block 0's head 0, as gptg attention shows them.
	B, H := m.Spec.Blocks, m.Spec.Heads
	chosen, ok := chooseHead(w, r.URL.Query().Get("head"), B, H)
	if !ok {
		return
	}
	all := chosen[0] < 0
	// The answer holds blocks × heads × T² weights, or T² for one head:
	// bounded, so that one request cannot make a response of gigabytes (a
	// 12-block, 12-head model over 1,024 tokens would be 151 million).
	per := 1
	if all {
		per = B * H
	}
	if per*len(ids)*len(ids) > maxAttentionWeights {
		most := int(math.Sqrt(float64(maxAttentionWeights / per)))
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the attention maps of %d tokens (%d × %d² weights) are more than the server answers at once (%d weights): give a text of at most %d tokens",
			len(ids), per, len(ids), maxAttentionWeights, most))
		return
	}
	stats, maps, err := smp.AttentionHeads(ids, func(b, h int) bool { return all || (b == chosen[0] && h == chosen[1]) })
	if err != nil {
		fail(w, err)
		return
	}
	writeAttention(w, m, ids, cut, stats, maps, chosen)
}

// chooseHead reads head= (q) against the model's B blocks and H heads:
// the one head whose map to answer, or {-1, -1} for every head's; on a bad
// one it answers the error itself and ok is false.
func chooseHead(w http.ResponseWriter, q string, B, H int) (chosen [2]int, ok bool) {
	chosen = [2]int{-1, -1}
	if q != "" {
		if chosen, ok = parseHead(q); !ok {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("head=%s: want BLOCK.HEAD, such as 0.3 for block 0's head 3", oneLine(q)))
			return chosen, false
		}
		if chosen[0] >= B || chosen[1] >= H {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("head=%d.%d: the model has blocks 0–%d and heads 0–%d", chosen[0], chosen[1], B-1, H-1))
			return chosen, false
		}
	} else if B*H > gridAbove {
		chosen = [2]int{0, 0}
	}
	return chosen, true
}

// writeAttention answers the tokens (ids, the first cut of the text's
// dropped), the block × head summary, and every head's map or the chosen
// one's.
func writeAttention(w http.ResponseWriter, m *savedmodel.Model, ids []int, cut int, stats [][]sample.HeadStats, maps [][]matrixT, chosen [2]int) {
	all := chosen[0] < 0
	tokens := make([]string, len(ids))
	for i, id := range ids {
		tokens[i] = m.Vocab.Label(id) // a BPE piece's broken bytes as <0xE2>
	}
	// Written by hand: 6 significant digits keep the answer a third of
	// encoding/json's size for a 256-token context.
	var b strings.Builder
	tj, _ := json.Marshal(tokens)
	fmt.Fprintf(&b, `{"tokens":%s,"dropped":%d,"blocks":%d,"heads":%d,"mask":%t,"norm":%q,"summary":`, tj, cut, m.Spec.Blocks, m.Spec.Heads, m.Spec.Mask, m.Spec.Norm)
	writeSummary(&b, stats)
	if all {
		b.WriteString(`,"maps":[`)
		writeMaps(&b, maps)
		b.WriteString("]}")
	} else {
		fmt.Fprintf(&b, `,"head":[%d,%d],"map":`, chosen[0], chosen[1])
		writeWeights(&b, maps[chosen[0]][chosen[1]].W)
		b.WriteString("}")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	setWriteDeadline(w)
	io.WriteString(w, b.String())
}

// parseHead reads a head= BLOCK.HEAD, both counted from 0.
func parseHead(s string) ([2]int, bool) {
	bs, hs, ok := strings.Cut(s, ".")
	b, errB := strconv.Atoi(bs)
	h, errH := strconv.Atoi(hs)
	if !ok || errB != nil || errH != nil || b < 0 || h < 0 {
		return [2]int{}, false
	}
	return [2]int{b, h}, true
}

// writeSummary writes every head's sample.HeadStats as blocks × heads
// arrays of [entropy, distance], null for a number a diverged model made
// NaN.
func writeSummary(b *strings.Builder, stats [][]sample.HeadStats) {
	num := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "null"
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	b.WriteByte('[')
	for bi, heads := range stats {
		if bi > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		for h, s := range heads {
			if h > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "[%s,%s]", num(s.Entropy), num(s.Distance))
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
}

// writeMaps writes attention maps, blocks × heads × weights, as nested JSON
// arrays (writeWeights).
func writeMaps(b *strings.Builder, maps [][]matrixT) {
	for bi, heads := range maps {
		if bi > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		for h, mat := range heads {
			if h > 0 {
				b.WriteByte(',')
			}
			writeWeights(b, mat.W)
		}
		b.WriteByte(']')
	}
}

// writeWeights writes one head's map as a JSON array: 6 significant
// digits, and null for a weight a diverged model made NaN or infinite
// (JSON has no NaN).
func writeWeights(b *strings.Builder, w []float64) {
	buf := make([]byte, 0, 32)
	b.WriteByte('[')
	for i, v := range w {
		if i > 0 {
			b.WriteByte(',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.WriteString("null")
			continue
		}
		b.Write(strconv.AppendFloat(buf[:0], v, 'g', 6, 64))
	}
	b.WriteByte(']')
}
