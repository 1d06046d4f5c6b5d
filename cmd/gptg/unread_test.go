package main

// unreadInputs are TestBadInputs' rows for settings the config's run would
// not read (config's unreadKeys): refused, never ignored.
func unreadInputs() []badInput {
	return []badInput{
		{name: "a translation config with a [sample] setting", files: map[string]string{"c.toml": pairsConfig + "[sample]\ntemperature = 0.8\n", "p.tsv": goodPairs},
			args: []string{"train", "c.toml"}, code: 2,
			msg: `c.toml: sample.temperature: is not used with model.arch = "encoder-decoder": a translation model does not sample (gptg translate takes --beam and --alpha); leave it out`},
		{name: "a pairs setting on a text corpus", files: map[string]string{"c.toml": "[data]\nbuckets = 4\n"},
			args: []string{"graph", "c.toml"}, code: 2,
			msg: `c.toml: data.buckets: is not used with data.format = "text": only a pairs corpus reads it; leave it out`},
		{name: "lr with the noam schedule", files: map[string]string{"c.toml": "[train]\nschedule = \"noam\"\nwarmup = 10\nlr = 3e-4\n"},
			args: []string{"graph", "c.toml"}, code: 2,
			msg: `c.toml: train.lr: is not used with train.schedule = "noam": the rate is d^-0.5 · min(step^-0.5, step · warmup^-1.5) with d = model.embedding; leave it out`},
	}
}
