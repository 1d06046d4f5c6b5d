package config

import "fmt"

// checkUnread refuses a key set to something the run would not read: a
// setting of the other architecture, of the other data format or of the
// other schedule. A config says what runs; a value that changes nothing
// would let its reader believe otherwise. A key at its default value is
// accepted, since a run folder's config.toml writes every key out; where
// a default is derived (stride, context, blocks, ff_mult, min_lr), the
// derived value is accepted too. The train package's
// TestEverySettingIsUsedOrRefused walks every key to hold this.
func (c *Config) checkUnread(origin func(key string) string) error {
	v := &checker{origin: origin}
	def := Default()
	d, m, t := c.Data, c.Model, c.Train

	if d.Format == "pairs" {
		// resolve derives stride before the encoder-decoder's context,
		// so a run folder's config.toml records half the default context.
		if d.Stride != max(1, m.Context/2) && d.Stride != max(1, def.Model.Context/2) {
			v.fail("data.stride", "%d is not used by a pairs corpus (data.format = \"pairs\"): its batches are whole sentence pairs, not windows: leave stride out", d.Stride)
		}
	} else {
		pairsOnly := func(key string, set bool) {
			if set {
				v.fail(key, "only a pairs corpus reads it (data.format is %q): leave it out", d.Format)
			}
		}
		pairsOnly("data.min_count", d.MinCount != def.Data.MinCount)
		pairsOnly("data.min_source", d.MinSource != def.Data.MinSource)
		pairsOnly("data.max_source", d.MaxSource != def.Data.MaxSource)
		pairsOnly("data.max_target", d.MaxTarget != def.Data.MaxTarget)
		pairsOnly("data.buckets", d.Buckets != def.Data.Buckets)
	}

	if m.EncoderDecoder() {
		notRead := func(key string, set bool, format string, args ...any) {
			if set {
				v.fail(key, "is not used by model.arch = \"encoder-decoder\": %s", fmt.Sprintf(format, args...))
			}
		}
		notRead("model.vocab", m.Vocab != 0, "its source and target vocabularies come from the pairs (data.min_count); leave vocab out")
		if lengths := max(d.SourceLen(), d.TargetLen()); m.Positions == "sinusoidal" {
			notRead("model.context", m.Context != lengths, "with positions = \"sinusoidal\" it has no position table to size, and its lengths are data.max_source and data.max_target; leave context out")
		}
		notRead("model.blocks", m.Blocks != def.Model.Blocks && m.Blocks != m.EncoderBlocks && m.Blocks != m.DecoderBlocks,
			"encoder_blocks = %d and decoder_blocks = %d size its stacks; leave blocks out", m.EncoderBlocks, m.DecoderBlocks)
		notRead("model.ff_mult", m.FFMult != def.Model.FFMult && m.FFHidden != m.FFMult*m.Embedding,
			"ff_hidden = %d is its feed-forward width; leave ff_mult out", m.FFHidden)
		notRead("model.bias", m.Bias != def.Model.Bias, "its layers always have biases, as the paper's; leave bias out")
		notRead("model.final_norm", m.FinalNorm != def.Model.FinalNorm, "it has no final norm; leave final_norm out")
		notRead("model.init", m.Init != def.Model.Init, "it initialises as PyTorch's nn.Transformer (Xavier); leave init out")
		s, ds := c.Sample, def.Sample
		for _, f := range []struct {
			key string
			set bool
		}{
			{"sample.prompt", s.Prompt != ds.Prompt},
			{"sample.tokens", s.Tokens != ds.Tokens},
			{"sample.temperature", s.Temperature != ds.Temperature},
			{"sample.top_k", s.TopK != ds.TopK},
			{"sample.top_p", s.TopP != ds.TopP},
		} {
			notRead(f.key, f.set, "a translation model does not sample (gptg translate takes --beam and --alpha); leave [sample] out")
		}
	}

	if t.Schedule == "noam" {
		noam := func(key string, set bool) {
			if set {
				v.fail(key, "is not used with schedule = \"noam\": its rate is d^-0.5 · min(step^-0.5, step · warmup^-1.5) with d = model.embedding; leave lr and min_lr out, or use schedule = \"cosine\"")
			}
		}
		noam("train.lr", t.LR != def.Train.LR)
		noam("train.min_lr", t.MinLR != t.LR/10)
	}
	return v.err
}
