package translate

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/pairs"
)

// Translator decodes sentences with a Model: the encoder runs once per
// sentence, then the decoder once per target word over every beam at once.
// Graphs are static, so one is built per source length (and beam width)
// the first time it is needed and kept.
type Translator struct {
	*Model
	Backend graph.Backend
	enc     map[[2]int]*tape.TranslationProgram // by (rows, source length S)
	dec     map[[2]int]*tape.TranslationProgram // by (rows, S): beams, or sentences
}

// NewTranslator prepares m for decoding.
func NewTranslator(m *Model, be graph.Backend) *Translator {
	return &Translator{Model: m, Backend: be,
		enc: map[[2]int]*tape.TranslationProgram{}, dec: map[[2]int]*tape.TranslationProgram{}}
}

// Options of one translation.
type Options struct {
	// Beam is the number of hypotheses kept at each step; 1 is greedy.
	Beam int
	// Alpha is the length penalty's exponent (Wu et al. 2016, which the
	// paper's beam search uses with α = 0.6): a finished hypothesis scores
	// log p / ((5 + length)/6)^α; 0 ranks by log p alone.
	Alpha float64
}

// Result is one translation.
type Result struct {
	Source  []string // the source words as the model read them (<unk> for unknown ones)
	Words   []string // the translation's words, without EOS
	Text    string   // the words joined back into a sentence
	LogProb float64  // log p of the words and EOS under the model
}

// ErrInput marks a sentence the model cannot translate (no words, or more
// than its positions hold): the caller's input, not a failure.
var ErrInput = errors.New("cannot translate")

// Translate decodes one sentence.
func (tr *Translator) Translate(text string, o Options) (*Result, error) {
	words := pairs.Tokenize(text)
	if len(words) == 0 {
		return nil, fmt.Errorf("%w: the sentence has no words", ErrInput)
	}
	src := append(tr.Src.Encode(words), pairs.EOS)
	if tr.Spec.Positions == "learned" && len(src) > tr.Spec.MaxLen {
		return nil, fmt.Errorf("%w: the sentence has %d words; this model (learned positions) reads at most %d", ErrInput, len(words), tr.Spec.MaxLen-1)
	}
	beam := max(1, o.Beam)
	memory, err := tr.encode(1, src)
	if err != nil {
		return nil, err
	}
	hyp, err := tr.search(src, memory, beam, o.Alpha)
	if err != nil {
		return nil, err
	}
	r := &Result{LogProb: hyp.logp}
	for _, id := range src[:len(src)-1] {
		r.Source = append(r.Source, tr.Src.Words()[id])
	}
	r.Words = tr.Tgt.Decode(hyp.ids)
	r.Text = pairs.Detokenize(r.Words)
	return r, nil
}

// encode runs the encoder over rows sentences' ids (EOS included, PAD
// after it), rows·S ids, and returns its output rows (rows·S, C).
func (tr *Translator) encode(rows int, src []int) ([]float64, error) {
	S := len(src) / rows
	p, ok := tr.enc[[2]int{rows, S}]
	if !ok {
		var err error
		if p, err = tr.build(rows, S, "encoder"); err != nil {
			return nil, err
		}
		tr.enc[[2]int{rows, S}] = p
	}
	if err := p.Run(src, nil, nil); err != nil {
		return nil, err
	}
	return graph.Float64s(p.Memory.Value()), nil
}

// targetLen is the decoder graph's length: the longest translation the
// model was trained to give, plus EOS.
func (tr *Translator) targetLen() int {
	T := tr.MaxTarget + 1
	if tr.Spec.Positions == "learned" {
		T = min(T, tr.Spec.MaxLen)
	}
	return T
}

// build compiles one forward graph of the model and loads its weights.
func (tr *Translator) build(batch, S int, part string) (*tape.TranslationProgram, error) {
	m, err := graph.BuildTranslation(tr.Spec, graph.TranslationOptions{
		Batch: batch, SrcLen: S, TgtLen: tr.targetLen(), Part: part, Backend: tr.Backend})
	if err != nil {
		return nil, err
	}
	if err := tr.Apply(m.Params); err != nil {
		return nil, err
	}
	return tape.CompileTranslation(m, false)
}

// hypothesis is one partial or finished translation: its ids after SOS
// and the sum of their log-probabilities.
type hypothesis struct {
	ids  []int
	logp float64
	done bool // ends with EOS
}

// score ranks finished hypotheses: log p over the length penalty
// ((5 + length)/6)^α, length counting EOS.
func (h hypothesis) score(alpha float64) float64 {
	return h.logp / math.Pow((5+float64(len(h.ids)))/6, alpha)
}

// search is beam search over the decoder (beam 1: greedy). At each step
// every live hypothesis is one row of the decoder's batch: SOS and its
// ids, PAD after them (the causal mask keeps the PAD from mattering); the
// row's logits at its last position give the next word. The best beam
// continuations by log p stay live; one that ends in EOS is finished. The
// search stops when beam hypotheses are finished or the decoder's length
// is reached; the best finished one (by score) wins, or, if none
// finished, the best live one.
func (tr *Translator) search(src []int, memory []float64, beam int, alpha float64) (hypothesis, error) {
	S, T, V := len(src), tr.targetLen(), tr.Spec.TgtVocab
	p, err := tr.decoder(beam, S)
	if err != nil {
		return hypothesis{}, err
	}
	rowsSrc := make([]int, 0, beam*S)
	rowsMem := make([]float64, 0, beam*len(memory))
	for range beam {
		rowsSrc = append(rowsSrc, src...)
		rowsMem = append(rowsMem, memory...)
	}
	if err := p.SetMemory(rowsMem); err != nil {
		return hypothesis{}, err
	}
	live := []hypothesis{{}}
	var finished []hypothesis
	decIn := make([]int, beam*T)
	logp := make([]float64, V)
	for step := 0; step < T && len(live) > 0 && len(finished) < beam; step++ {
		clear(decIn)
		for k := range beam {
			decIn[k*T] = pairs.SOS
			if k < len(live) {
				copy(decIn[k*T+1:], live[k].ids)
			}
		}
		if err := p.Run(rowsSrc, decIn, nil); err != nil {
			return hypothesis{}, err
		}
		logits := graph.Float64s(p.Logits.Value())
		var next []hypothesis
		for k, h := range live {
			row := logits[(k*T+step)*V : (k*T+step+1)*V]
			logSoftmax(logp, row)
			for _, id := range topK(logp, beam) {
				ids := append(append([]int(nil), h.ids...), id)
				next = append(next, hypothesis{ids: ids, logp: h.logp + logp[id], done: id == pairs.EOS || step == T-1})
			}
		}
		sort.SliceStable(next, func(i, j int) bool { return next[i].logp > next[j].logp })
		live = live[:0]
		for _, h := range next {
			if len(live)+len(finished) >= beam {
				break
			}
			if h.done {
				finished = append(finished, h)
			} else {
				live = append(live, h)
			}
		}
	}
	pool := finished
	if len(pool) == 0 {
		pool = live
	}
	best := pool[0]
	for _, h := range pool[1:] {
		if h.score(alpha) > best.score(alpha) {
			best = h
		}
	}
	return best, nil
}

// decoder returns the decoder graph of rows rows over sources of length S.
func (tr *Translator) decoder(rows, S int) (*tape.TranslationProgram, error) {
	key := [2]int{rows, S}
	if p, ok := tr.dec[key]; ok {
		return p, nil
	}
	p, err := tr.build(rows, S, "decoder")
	if err != nil {
		return nil, err
	}
	tr.dec[key] = p
	return p, nil
}

// GreedyBatch translates a batch of sentences at once, greedily: rows·S
// source ids (each row the sentence's ids, EOS, PAD after), as a
// pairs.Batch holds them. It returns each row's translation ids, without
// EOS.
func (tr *Translator) GreedyBatch(rows int, src []int) ([][]int, error) {
	S, T, V := len(src)/rows, tr.targetLen(), tr.Spec.TgtVocab
	memory, err := tr.encode(rows, src)
	if err != nil {
		return nil, err
	}
	p, err := tr.decoder(rows, S)
	if err != nil {
		return nil, err
	}
	if err := p.SetMemory(memory); err != nil {
		return nil, err
	}
	out := make([][]int, rows)
	done := make([]bool, rows)
	decIn := make([]int, rows*T)
	for r := range rows {
		decIn[r*T] = pairs.SOS
	}
	left := rows
	for step := 0; step < T && left > 0; step++ {
		if err := p.Run(src, decIn, nil); err != nil {
			return nil, err
		}
		logits := graph.Float64s(p.Logits.Value())
		for r := range rows {
			if done[r] {
				continue
			}
			row := logits[(r*T+step)*V : (r*T+step+1)*V]
			id := topK(row, 1)[0]
			if id == pairs.EOS || step == T-1 {
				done[r], left = true, left-1
				if id != pairs.EOS {
					out[r] = append(out[r], id)
				}
				continue
			}
			out[r] = append(out[r], id)
			if step+1 < T {
				decIn[r*T+step+1] = id
			}
		}
	}
	return out, nil
}

// topK returns the ids of the k largest entries of logp, largest first,
// never PAD or SOS (the decoder is not to emit them).
func topK(logp []float64, k int) []int {
	var ids []int
	for id := range logp {
		if id == pairs.PAD || id == pairs.SOS {
			continue
		}
		i := sort.Search(len(ids), func(i int) bool { return logp[ids[i]] < logp[id] })
		if i < k {
			ids = append(ids, 0)
			copy(ids[i+1:], ids[i:])
			ids[i] = id
			if len(ids) > k {
				ids = ids[:k]
			}
		}
	}
	return ids
}

// logSoftmax writes log softmax(x) into dst.
func logSoftmax(dst, x []float64) {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(v - m)
	}
	lse := m + math.Log(sum)
	for i, v := range x {
		dst[i] = v - lse
	}
}
