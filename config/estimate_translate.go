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
	return MemoryEstimate{Params: P, Weights: weights, Activations: E*values + float64s, Untouched: m.translationTails(g)}
}

// translationTails is the address space the graphs g reserve and never
// write: the end of a chunk of each graph's own Memory (the encoder
// graphs' and the whole ones'; a step graph lends nothing).
func (m Model) translationTails(g TranslationGraphs) float64 {
	S, T := float64(g.SrcLen), float64(g.TgtLen)
	var tails float64
	if g.Decoders > 0 {
		rows := float64(g.DecodeRows)
		if g.EncodeRows > 0 {
			rows = float64(g.EncodeRows)
		}
		tails += float64(g.Decoders) * m.translationChunkTail(rows*S, S)
	}
	if g.Wholes > 0 {
		tails += float64(g.Wholes) * m.translationChunkTail(float64(g.WholeBatch)*max(S, T), max(S, T))
	}
	return tails
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

// translationTrainMemory counts, in the model's dtype (E bytes a value):
//
//   - the weights, AdamW's two moments, each training graph's gradients
//     (one graph per shape; a translation step keeps its gradients in
//     buffers of their own, not lent), and once the weights another graph
//     draws before it is given the first one's (garbage);
//   - per shape, what its training and evaluation graphs keep in buffers
//     of their own (graph/tape.CompileTranslation keeps every attention
//     map, and an output Gorgonia's residual sum reads cannot be lent):
//     counted in C-wide rows from the built graphs, post-norm, per block
//     — the training graph 16 a source position of each encoder block
//     and 4 of each decoder block (its cross-attention's keys and values
//     and their gradients), 22 a target position of each decoder block;
//     the evaluation graph 6 and 9, and one for the source's embedding;
//     dropout's masks, 2 and 3 a block and the embeddings'; the attention
//     maps of both graphs;
//   - per shape, the output layer's logits over every target position,
//     one buffer its training and evaluation graphs share (fused's
//     OutputLoss);
//   - the lent intermediates (graph/fused's Memory, one for every graph):
//     at most what the largest shape's training graph borrows at once,
//     per position and block 5 C-wide values and 2.3 of the feed-forward's
//     width in the encoder, 8 and 2.3 in the decoder (0.95–1.09 times
//     the measured peak: embedding 64 to 512, ff_hidden 256 to 2048, 1 to
//     6 blocks a side). Pre-norm borrows 15 % more than this and keeps
//     14 % less than the post-norm count above, less in all;
//   - the pairs held (each pair's struct and text, 8 bytes an id, an int in
//     the batcher's buckets and in an epoch's order), and runSlack.
//
// Measured (peak RSS less the 17 MiB of a process refused before it reads
// the pairs; docs/architecture.md "Training",
// TestTranslationTrainMemoryMeasured): 1.05–1.31 times, from the seed's
// 0.6M parameters to 53.9M, post- and pre-norm.
func (c *Config) translationTrainMemory(srcVocab, tgtVocab int, shapes []TranslationShape, p *TranslationPairs) MemoryEstimate {
	m := c.Model
	P, E := m.TranslationParams(srcVocab, tgtVocab), m.elemSize()
	C, F, H := float64(m.Embedding), float64(m.FFHidden), float64(m.Heads)
	Be, Bd := float64(m.EncoderBlocks), float64(m.DecoderBlocks)
	B, V := float64(c.Train.Batch), float64(tgtVocab)
	var kept, logits, lent, tail float64
	for _, s := range shapes {
		S, T := float64(s.S), float64(s.T)
		src, tgt := B*S, B*T // positions
		maps := B * H * (Be*S*S + Bd*T*(T+S))
		kept += src*C*(16*Be+4*Bd) + tgt*C*22*Bd + maps // training graph
		kept += src*C*(6*Be+1) + tgt*C*9*Bd + maps      // evaluation graph
		if m.Dropout > 0 {
			kept += src*C*(2*Be+1) + tgt*C*(3*Bd+1)
		}
		logits += tgt * V
		lent = max(lent, src*Be*(5*C+2.3*F)+tgt*Bd*(8*C+2.3*F))
		tail = max(tail, m.translationChunkTail(max(src, tgt), max(S, T)))
	}
	e := MemoryEstimate{
		Params:      P,
		Weights:     float64(P) * E * float64(1+len(shapes)+2+1),
		Activations: E * (kept + logits + lent),
		Data:        runSlack,
		Untouched:   tail,
	}
	if p != nil {
		e.Data += float64(p.TextBytes) + 8*float64(p.IDs) + (88+16)*float64(p.Pairs)
	}
	return e
}

// runSlack is what a translation training adds beyond its tensors and
// the pairs it holds, whatever the model: the pairs reader's garbage
// (every line of the file tokenized, the vocabularies counted, the lines
// the length filter drops), the code its kernels run and the collector's
// slack. Measured: the seed's training (0.6M parameters) grows 13.6 MiB
// past its tensors and pairs, and a process refused once it has read the
// pairs 18 MiB past one refused before (en-es: 36 MiB).
const runSlack = 16 << 20

// translationChunkTail is what a translation graph's Memory may reserve
// and never write over rows positions of sequences of length L (as
// chunkTail is the GPT's): the end of a chunk, at most 64 MiB or 64 of
// the graph's widest lent tensor — the feed-forward's hidden values, a
// few C-wide ones side by side, a row of attention scores per head.
func (m Model) translationChunkTail(rows, L float64) float64 {
	return m.tailOf(rows * max(float64(m.FFHidden), 4*float64(m.Embedding), float64(m.Heads)*L))
}
