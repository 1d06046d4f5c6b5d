package translate

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/pairs"
)

// Attention is where the model's heads look on one sentence pair: the
// three attentions of the encoder–decoder, per block and head, as gptg
// attention draws them and gptg serve shows them.
type Attention struct {
	// Source is the encoder's positions: the source words as the model
	// read them (<unk> for unknown ones) and <eos>.
	Source []string
	// Target is the decoder's positions as it reads them: <sos> and the
	// translation's words. Written is what each position writes: the
	// translation's words and <eos> (or, for a translation the decoder's
	// length cut short, its last word).
	Target, Written []string
	// Translated says whether the target is the model's own (greedy)
	// translation rather than a given one.
	Translated bool
	// Encoder[b][h] is encoder block b's self-attention, head h (source ×
	// source); Decoder[b][h] decoder block b's causal self-attention
	// (target × target); Cross[b][h] its cross-attention, the alignment:
	// row i is the decoder position writing Written[i], column j the
	// source position Source[j].
	Encoder, Decoder, Cross [][]graph.Matrix
}

// Attention runs the whole model on a sentence and a translation of it —
// target, or, when target is empty, the model's own greedy one — and
// returns its attention weights. Both sides are exactly as long as they
// are: no padding.
func (tr *Translator) Attention(source, target string) (*Attention, error) {
	src, err := tr.SourceIDs(source)
	if err != nil {
		return nil, err
	}
	a := &Attention{Translated: target == ""}
	tgt, last, err := tr.attentionTarget(src, target)
	if err != nil {
		return nil, err
	}
	if T := tr.TargetLen(); len(tgt)+1 > T {
		return nil, fmt.Errorf("%w: the target has %d words; this model writes at most %d", ErrInput, len(tgt), T-1)
	}
	S, T := len(src), len(tgt)+1
	if err := tr.check(S); err != nil {
		return nil, err
	}
	m, err := graph.BuildTranslation(tr.Spec, graph.TranslationOptions{Batch: 1, SrcLen: S, TgtLen: T, Backend: tr.Backend, Weights: tr.Weights})
	if err != nil {
		return nil, err
	}
	p, err := tape.CompileTranslation(m, false)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Run(src, append([]int{pairs.SOS}, tgt...), nil); err != nil {
		return nil, err
	}
	a.Encoder = tr.headMaps(m.EncoderAttention, S, S)
	a.Decoder = tr.headMaps(m.DecoderAttention, T, T)
	a.Cross = tr.headMaps(m.CrossAttention, T, S)
	words := tr.Src.Words()
	for _, id := range src {
		a.Source = append(a.Source, words[id])
	}
	words = tr.Tgt.Words()
	a.Target = append(a.Target, words[pairs.SOS])
	for _, id := range tgt {
		a.Target = append(a.Target, words[id])
		a.Written = append(a.Written, words[id])
	}
	a.Written = append(a.Written, words[last])
	return a, nil
}

// attentionTarget is the target Attention runs the model on, without its
// SOS: target's words, or, when target is empty, the model's own greedy
// translation of src. last is what the last decoder position writes: EOS,
// or the last word of a translation stopped at the decoder's length.
func (tr *Translator) attentionTarget(src []int, target string) (tgt []int, last int, err error) {
	last = pairs.EOS
	if target == "" {
		d, err := tr.decoding(src, 1, 1)
		if err != nil {
			return nil, 0, err
		}
		h, err := search(d, tr.TargetLen(), tr.Spec.TgtVocab, 1, 0, nil)
		if err != nil {
			return nil, 0, err
		}
		tgt = h.ids
		if n := len(tgt); n > 0 && tgt[n-1] == pairs.EOS {
			tgt = tgt[:n-1]
		} else if n > 0 { // stopped at the decoder's length: the last position wrote a word
			tgt, last = tgt[:n-1], tgt[n-1]
		}
	} else {
		if err := checkUTF8("target", target); err != nil {
			return nil, 0, err
		}
		words := pairs.Tokenize(target)
		if len(words) == 0 {
			return nil, 0, fmt.Errorf("%w: the target has no words", ErrInput)
		}
		tgt = tr.Tgt.Encode(words)
	}
	return tgt, last, nil
}

// headMaps reads the attention weights of each block's nodes, (heads,
// rows, cols) for one sentence, as one matrix per head.
func (tr *Translator) headMaps(nodes []*G.Node, rows, cols int) [][]graph.Matrix {
	var out [][]graph.Matrix
	for _, n := range nodes {
		w := graph.Float64s(n.Value()) // (heads, rows, cols) for one sentence
		var heads []graph.Matrix
		for h := range tr.Spec.Heads {
			mat := graph.Matrix{N: rows, K: cols, W: w[h*rows*cols : (h+1)*rows*cols]}
			if rows == cols {
				mat.K = 0
			}
			heads = append(heads, mat)
		}
		out = append(out, heads)
	}
	return out
}
