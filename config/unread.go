package config

import (
	"bytes"
	"fmt"
)

// unread is a key that the run of a config does not read.
type unread struct {
	key string
	// ok: the value is the key's default, or the value resolve derives
	// for it, which a run folder's config.toml writes out like every
	// other key; any other value is refused.
	ok  bool
	by  string // what leaves the key unread: `model.arch = "encoder-decoder"`
	why string // what the run goes by instead
}

// unreadKeys lists the keys c's run does not read: the settings of the
// other architecture, of the other data format and of the other
// schedule. checkUnread refuses them set, TOML marks them in config.toml.
func (c *Config) unreadKeys() []unread {
	def := Default()
	d, m, t := c.Data, c.Model, c.Train
	var out []unread
	add := func(key string, ok bool, by, why string, args ...any) {
		out = append(out, unread{key: key, ok: ok, by: by, why: fmt.Sprintf(why, args...)})
	}

	if d.Format == "pairs" {
		// resolve derives stride before the encoder-decoder's context,
		// from the default context: config.toml records that value.
		ok := d.Stride == max(1, m.Context/2) || d.Stride == max(1, def.Model.Context/2)
		add("data.stride", ok, `data.format = "pairs"`, "a pairs corpus is batched by whole sentence pairs, not cut into windows")
	} else {
		by := fmt.Sprintf("data.format = %q", d.Format)
		const why = "only a pairs corpus reads it"
		add("data.min_count", d.MinCount == def.Data.MinCount, by, why)
		add("data.min_source", d.MinSource == def.Data.MinSource, by, why)
		add("data.max_source", d.MaxSource == def.Data.MaxSource, by, why)
		add("data.max_target", d.MaxTarget == def.Data.MaxTarget, by, why)
		add("data.buckets", d.Buckets == def.Data.Buckets, by, why)
	}

	if m.EncoderDecoder() {
		const by = `model.arch = "encoder-decoder"`
		add("model.vocab", m.Vocab == 0, by, "the source and target vocabularies come from the pairs (gptg inspect shows them)")
		if m.Positions == "sinusoidal" {
			add("model.context", m.Context == max(d.SourceLen(), d.TargetLen()), by,
				`with positions = "sinusoidal" there is no position table to size; the lengths are data.max_source and data.max_target`)
		}
		if m.Blocks != m.EncoderBlocks && m.Blocks != m.DecoderBlocks {
			add("model.blocks", m.Blocks == def.Model.Blocks, by, "encoder_blocks = %d and decoder_blocks = %d size the stacks", m.EncoderBlocks, m.DecoderBlocks)
		}
		if m.FFHidden != m.FFMult*m.Embedding {
			add("model.ff_mult", m.FFMult == def.Model.FFMult, by, "ff_hidden = %d is the feed-forward width", m.FFHidden)
		}
		add("model.bias", m.Bias == def.Model.Bias, by, "its layers always have biases, as the paper's")
		add("model.final_norm", m.FinalNorm == def.Model.FinalNorm, by, "each stack always ends in a layer norm (nn.Transformer's encoder.norm and decoder.norm)")
		add("model.init", m.Init == def.Model.Init, by, "it initialises as PyTorch's nn.Transformer (Xavier)")
		s, ds := c.Sample, def.Sample
		const why = "a translation model does not sample (gptg translate takes --beam and --alpha)"
		add("sample.prompt", s.Prompt == ds.Prompt, by, why)
		add("sample.tokens", s.Tokens == ds.Tokens, by, why)
		add("sample.temperature", s.Temperature == ds.Temperature, by, why)
		add("sample.top_k", s.TopK == ds.TopK, by, why)
		add("sample.top_p", s.TopP == ds.TopP, by, why)
	} else {
		// validate refuses these set, naming the architecture.
		by := `model.arch = "decoder-only"`
		const why = "only the encoder-decoder reads it"
		add("model.encoder_blocks", m.EncoderBlocks == 0, by, why)
		add("model.decoder_blocks", m.DecoderBlocks == 0, by, why)
		add("model.ff_hidden", m.FFHidden == 0, by, why)
		add("model.positions", m.Positions == "" || m.Positions == "learned", by, why+" (the decoder-only model learns its positions)")
		add("model.label_smoothing", m.LabelSmoothing == 0, by, why)
	}

	if t.Schedule == "noam" {
		const by, why = `train.schedule = "noam"`, "the rate is d^-0.5 · min(step^-0.5, step · warmup^-1.5) with d = model.embedding"
		add("train.lr", t.LR == def.Train.LR, by, why)
		add("train.min_lr", t.MinLR == t.LR/10, by, why)
	}
	return out
}

// checkUnread refuses a key set to a value the run would not read. A
// config says what runs: a value that changes nothing would let its
// reader believe otherwise. The train package's
// TestEverySettingIsUsedOrRefused walks every key to hold this.
func (c *Config) checkUnread(origin func(key string) string) error {
	v := &checker{origin: origin}
	for _, u := range c.unreadKeys() {
		if !u.ok {
			v.fail(u.key, "is not used with %s: %s; leave it out", u.by, u.why)
		}
	}
	return v.err
}

// markUnread appends "# not used: why" to the lines of toml (TOML's
// output for c) that set a key c's run does not read, so that a reader
// of a run's config.toml is not misled by them.
func (c *Config) markUnread(toml []byte) []byte {
	for _, u := range c.unreadKeys() {
		if !u.ok {
			continue // not a value Load gives; and a default is one line
		}
		f := getSchema().byName[u.key]
		table := bytes.Index(toml, []byte("\n["+f.section+"]\n"))
		if table < 0 {
			continue
		}
		section := toml[table+1:]
		if next := bytes.Index(section, []byte("\n[")); next >= 0 {
			section = section[:next+1]
		}
		line := bytes.Index(section, []byte("\n"+f.key+" = "))
		if line < 0 {
			continue
		}
		start := table + 1 + line + 1
		end := bytes.IndexByte(toml[start:], '\n')
		if end < 0 {
			end = len(toml) - start
		}
		end += start
		note := " # not used: " + u.why
		toml = append(toml[:end], append([]byte(note), toml[end:]...)...)
	}
	return toml
}
