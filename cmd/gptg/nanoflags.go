package main

import (
	"flag"
	"fmt"
	"io"
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
	"dtype":                       "--set model.dtype=bfloat16 (mixed precision, as nanoGPT's bfloat16 autocast; or float32, float64)",
	"device":                      "--threads N: gptg runs on the CPU",
	"compile":                     "nothing: the graph is built and compiled once, always",
	"start":                       "gptg sample --prompt V (--prompt-file FILE for FILE:...)",
	"num_samples":                 "gptg sample --samples V",
	"max_new_tokens":              "gptg sample --tokens V",
	"top_k":                       "gptg sample --top-k V",
}

// nanoGPTNoOps are nanoGPT flags whose value gptg already follows, taken
// with a note so that a pasted command line runs: gptg always runs on the
// CPU, and compiles its graph once whatever compile says.
var nanoGPTNoOps = map[string]func(value string) (note string, ok bool){
	"device": func(v string) (string, bool) {
		return "gptg runs on the CPU", v == "cpu"
	},
	"compile": func(v string) (string, bool) {
		return "gptg builds and compiles its graph once, always", v == "True" || v == "False" || v == "true" || v == "false"
	},
}

// nanoGPTFlags takes nanoGPT's flags out of args. The ones gptg already
// follows (--device=cpu, --compile=False) are dropped with a note on
// notes; every other one is refused, all of them in one usage error that
// points each to gptg's name for it, so that a pasted command line is
// fixed in one try. Flags fs defines are left alone.
func nanoGPTFlags(fs *flag.FlagSet, args []string, notes io.Writer) ([]string, error) {
	var kept, refused, alone []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			kept = append(kept, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		ours, ok := nanoGPTNames[name]
		if !strings.HasPrefix(a, "-") || !ok || fs.Lookup(name) != nil {
			kept = append(kept, a)
			continue
		}
		if !hasValue {
			value = "N"
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
				i++
			}
		}
		if noOp, ok := nanoGPTNoOps[name]; ok {
			if note, fine := noOp(value); fine {
				fmt.Fprintf(notes, "note: --%s=%s is nanoGPT's; nothing to do: %s\n", name, value, note)
				continue
			}
		}
		ours = strings.ReplaceAll(ours, "V", value)
		refused = append(refused, fmt.Sprintf("--%s=%s → %s", name, value, ours))
		alone = append(alone, fmt.Sprintf("--%s is nanoGPT's name: write %s", name, ours))
	}
	switch len(refused) {
	case 0:
		return kept, nil
	case 1:
		return nil, usagef("%s (docs/nanogpt.md maps its names to gptg's)", alone[0])
	}
	return nil, usagef("%d flags are nanoGPT's names: %s (docs/nanogpt.md maps its names to gptg's)", len(refused), strings.Join(refused, "; "))
}
