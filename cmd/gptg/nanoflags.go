package main

import (
	"flag"
	"strings"
)

// nanoGPTNames are the flags of nanoGPT's train.py and sample.py, each
// with gptg's spelling of it (V stands for the value given). gptg takes
// no aliases — one name per setting keeps configs, --set and messages in
// one vocabulary — but a nanoGPT habit gets a pointer instead of "flag
// provided but not defined". docs/nanogpt.md has the same table.
var nanoGPTNames = map[string]string{
	"max_iters":                   "--set train.max_steps=V",
	"lr_decay_iters":              "nothing: the cosine ends at the last step (--set train.max_steps=V)",
	"out_dir":                     "--set train.out=V",
	"init_from":                   "--init RUN to start from a model file, or gptg train --resume RUN",
	"block_size":                  "--set model.context=V",
	"n_layer":                     "--set model.blocks=V",
	"n_head":                      "--set model.heads=V",
	"n_embd":                      "--set model.embedding=V",
	"batch_size":                  "--set train.batch=V",
	"gradient_accumulation_steps": "--set train.grad_accum=V",
	"learning_rate":               "--set train.lr=V",
	"min_lr":                      "--set train.min_lr=V",
	"warmup_iters":                "--set train.warmup=V",
	"weight_decay":                "--set train.weight_decay=V",
	"beta1":                       "--set train.beta1=V",
	"beta2":                       "--set train.beta2=V",
	"grad_clip":                   "--set train.clip=V",
	"eval_interval":               "--set train.eval_every=V",
	"log_interval":                "--set train.log_every=V",
	"eval_iters":                  "--set train.eval_batches=V",
	"dropout":                     "--set model.dropout=V",
	"bias":                        "--set model.bias=V",
	"dtype":                       "--set model.dtype=float32 (or float64)",
	"device":                      "--threads N: gptg runs on the CPU",
	"compile":                     "nothing: the graph is built and compiled once, always",
	"start":                       "gptg sample --prompt V (--prompt-file FILE for FILE:...)",
	"num_samples":                 "gptg sample --samples V",
	"max_new_tokens":              "gptg sample --tokens V",
	"top_k":                       "gptg sample --top-k V",
}

// nanoGPTFlag returns a usage error pointing a nanoGPT flag in args to
// gptg's name for it, or nil. Flags fs defines are left alone.
func nanoGPTFlag(fs *flag.FlagSet, args []string) error {
	for i, a := range args {
		if a == "--" {
			return nil
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		ours, ok := nanoGPTNames[name]
		if !ok || fs.Lookup(name) != nil {
			continue
		}
		if !hasValue {
			value = "N"
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
			}
		}
		return usagef("--%s is nanoGPT's name: write %s (docs/nanogpt.md maps its names to gptg's)",
			name, strings.ReplaceAll(ours, "V", value))
	}
	return nil
}
