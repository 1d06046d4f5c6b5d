package config

// The memory estimate of a translation model's forward graphs (translate,
// eval, attention, inspect, serve), as estimate.go's ForwardMemory is the
// GPT's. A translation model's graphs read the model file's own tensors
// (graph.Weights), so the weights count once however many graphs a
// command builds; each graph adds its activations.

// TranslationParams is the number of parameters of an encoder–decoder of
// this [model] table with vocabularies of srcVocab and tgtVocab words:
// what graph.BuildTranslation declares and its model file holds.
func (m Model) TranslationParams(srcVocab, tgtVocab int) int64 {
	C, F := int64(m.Embedding), int64(m.FFHidden)
	linear := C*C + C
	norm := 2 * C
	ff := C*F + F + F*C + C
	n := int64(srcVocab+tgtVocab) * C
	if m.Positions == "learned" {
		n += 2 * int64(m.Context) * C
	}
	n += int64(m.EncoderBlocks) * (4*linear + 2*norm + ff)
	n += int64(m.DecoderBlocks) * (8*linear + 3*norm + ff)
	n += 2 * norm // encoder.norm, decoder.norm
	if !m.TieEmbeddings {
		n += int64(tgtVocab)*C + int64(tgtVocab)
	}
	return n
}

// TranslationGraphs says which graphs a command builds from a translation
// model. Lengths are in positions: SrcLen the longest source with its EOS,
// TgtLen the decoder's (the longest translation and EOS).
type TranslationGraphs struct {
	SrcLen, TgtLen int
	// Decoders is the number of encoder and decoder-step graph pairs that
	// decoding builds (one per source length and number of rows met), each
	// of DecodeRows rows: the beam width, or the sentences of a batch.
	Decoders, DecodeRows int
	// EncodeRows is the rows of the encoder graph before each decoding:
	// the sentences of a batch (0: DecodeRows), or 1 for the beams of one
	// sentence, which all read one encoding.
	EncodeRows int
	// Wholes is the number of whole-model graphs of WholeBatch sentences
	// each (eval's loss graphs, one per bucket; attention's one), with the
	// loss when Loss.
	Wholes, WholeBatch int
	Loss               bool
}

// TranslationMemory estimates the graphs g of a translation model with
// vocabularies of srcVocab and tgtVocab words whose file holds fileBytes
// of tensor data (0: as many as the model's dtype takes).
//
// Weights: the file's tensors, which the graphs read; a file whose
// tensors are of the other float type is converted once, both copies
// held for a moment.
//
// Activations, per position and block, as forwardValues counts a GPT
// block's: the encoder about 12 values of the embedding's width, two of
// the feed-forward's and a row of attention weights per head; the decoder
// 18 and the same (self- and cross-attention). An encoder graph also keeps
// each decoder block's cross-attention keys and values of its output, which
// decoding copies to float64 for the step graph (once per row); the step
// graph keeps the self-attention caches (TgtLen rows) and the cross keys
// and values (SrcLen rows) per row and block, and the logits of one
// position. A whole graph keeps every attention map and the logits of
// every position (twice with the loss: the log-probabilities).
func (m Model) TranslationMemory(srcVocab, tgtVocab int, fileBytes int64, g TranslationGraphs) MemoryEstimate {
	P, E := m.TranslationParams(srcVocab, tgtVocab), m.elemSize()
	weights := float64(P) * E
	if fileBytes > 0 && float64(fileBytes) != weights {
		weights += float64(fileBytes)
	}
	C, F, H := float64(m.Embedding), float64(m.FFHidden), float64(m.Heads)
	Be, Bd := float64(m.EncoderBlocks), float64(m.DecoderBlocks)
	S, T, V := float64(g.SrcLen), float64(g.TgtLen), float64(tgtVocab)

	encoder := func(rows float64, cross bool) float64 { // values of an encoder graph over rows·S positions
		n := rows * S
		v := n * (Be*(12*C+2*F+H*S) + 4*C)
		if cross {
			v += 2 * Bd * n * C
		}
		return v
	}
	var values, float64s float64
	if g.Decoders > 0 {
		R, Re := float64(g.DecodeRows), float64(g.DecodeRows)
		if g.EncodeRows > 0 {
			Re = float64(g.EncodeRows)
		}
		step := Bd*R*C*(2*T+2*S) + R*(Bd*(18*C+2*F+H*(T+1+S))+4*C) + R*V
		values += float64(g.Decoders) * (encoder(Re, true) + step)
		// decoding's float64 copies of the cross keys and values (the
		// encoder's rows, then one per beam row), and of a step's logits
		float64s += 8 * (2*Bd*C*S*(1+R) + 2*R*V)
	}
	if g.Wholes > 0 {
		B := float64(g.WholeBatch)
		n := B * T
		logits := n * V
		if g.Loss {
			logits *= 2
		}
		whole := encoder(B, false) + n*(Bd*(18*C+2*F+H*(T+S))+4*C) + logits
		values += float64(g.Wholes) * whole
	}
	return MemoryEstimate{Params: P, Weights: weights, Activations: E*values + float64s}
}

// TranslationShape is one batch shape of translation training: S source
// positions (the longest source with its EOS), T decoder positions.
type TranslationShape struct{ S, T int }

// TranslationPairs is what a loaded pairs corpus holds for training: its
// pairs (training and test), their word ids and their text (kept for
// BLEU's references).
type TranslationPairs struct{ Pairs, IDs, TextBytes int64 }

// TranslationTrainMemory estimates training the encoder–decoder c with
// vocabularies of srcVocab and tgtVocab words over batches of the given
// shapes (one training and one evaluation graph each, data.buckets), on
// corpus p (zero: not loaded yet).
func (c *Config) TranslationTrainMemory(srcVocab, tgtVocab int, shapes []TranslationShape, p TranslationPairs) MemoryEstimate {
	return c.translationTrainMemory(srcVocab, tgtVocab, shapes, &p)
}

// CheckTranslationTrainMemory refuses training c as TranslationTrainMemory
// estimates it beyond train.max_memory or what the process may still
// take, as CheckTrainMemory does a GPT's.
func (c *Config) CheckTranslationTrainMemory(srcVocab, tgtVocab int, shapes []TranslationShape, p TranslationPairs) error {
	return c.checkTrain(c.TranslationTrainMemory(srcVocab, tgtVocab, shapes, p), true)
}

// translationTrainMemory: the parameters (E), each training graph's
// gradients (E), AdamW's moments (2×E), and once the weights another
// graph draws before it is given the first one's (E); each shape's
// training activations — the whole model's forward values
// (TranslationMemory's count, the loss's log-probabilities included) and
// a quarter more for the backward pass, its attention maps 1.6 times
// (the evaluation graph of a shape shares the training graph's buffers,
// its logits too: fused.Memory); the corpus: each
// pair's struct and text, 8 bytes an id, an int in the batcher's buckets
// and in an epoch's order.
func (c *Config) translationTrainMemory(srcVocab, tgtVocab int, shapes []TranslationShape, p *TranslationPairs) MemoryEstimate {
	m := c.Model
	P, E := m.TranslationParams(srcVocab, tgtVocab), m.elemSize()
	C, F, H := float64(m.Embedding), float64(m.FFHidden), float64(m.Heads)
	Be, Bd := float64(m.EncoderBlocks), float64(m.DecoderBlocks)
	B, V := float64(c.Train.Batch), float64(tgtVocab)
	var values, attention float64
	for _, s := range shapes {
		S, T := float64(s.S), float64(s.T)
		enc := B * S * (Be*(12*C+2*F+H*S) + 4*C)
		dec := B * T * (Bd*(18*C+2*F+H*(T+S)) + 4*C)
		logits := B * T * V
		values += 1.25 * (enc + dec + 2*logits)
		attention += B * (Be*H*S*S + Bd*H*T*(T+S))
	}
	e := MemoryEstimate{
		Params:      P,
		Weights:     float64(P) * (E*float64(1+len(shapes)) + 2*E + E),
		Activations: E * (values + 0.4*attention),
	}
	if p != nil {
		e.Data = float64(p.TextBytes) + 8*float64(p.IDs) + (88+16)*float64(p.Pairs)
	}
	return e
}
