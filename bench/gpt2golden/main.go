// Command gpt2golden compares gptg's forward pass of a Hugging Face GPT-2
// folder with bench/gpt2ref.py's: the logits and every block's attention
// weights at every position, through the window graph (fused kernels) and
// the logits through sampling's key/value cache one token at a time, and
// through sampling's own path: half the tokens as a prompt (one prefill
// run), the rest appended one at a time.
// bench/gpt2-golden.sh runs it at the 124M shape.
//
//	go run ./bench/gpt2golden DIR REF.safetensors IDS.txt [--no-cache]
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/hf"
	"github.com/gptg/gptg/internal/fidelity"
)

// tolerance is the largest relative error allowed at any position.
const tolerance = 1e-5

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gpt2golden:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("usage: gpt2golden DIR REF.safetensors IDS.txt [--no-cache]")
	}
	cache := !(len(args) > 3 && args[3] == "--no-cache")
	m, err := hf.Import(args[0], 16)
	if err != nil {
		return err
	}
	ids, err := fidelity.ReadIDs(args[2])
	if err != nil {
		return err
	}
	ref, err := fidelity.ReadReference(args[1], m.Spec.Blocks)
	if err != nil {
		return err
	}
	T, V := len(ids), m.Spec.Vocab
	start := time.Now()
	got, err := fidelity.Forward(m.Spec, m.Tensors, ids, graph.Backend{})
	if err != nil {
		return err
	}
	fmt.Printf("forward over %d tokens: %.1f s\n", T, time.Since(start).Seconds())
	failed := false
	report := func(what string, got, want []float64, n int) error {
		worst, row, err := fidelity.Worst(got, want, n)
		if err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
		verdict := "ok"
		if worst > tolerance {
			verdict, failed = "FAIL", true
		}
		fmt.Printf("%-34s max relative error %.2e (row %d)  %s\n", what, worst, row, verdict)
		return nil
	}
	if err := report("logits (window graph)", got.Logits, ref.Logits, V); err != nil {
		return err
	}
	for b := range ref.Attention {
		if err := report(fmt.Sprintf("attention, block %d", b), got.Attention[b], ref.Attention[b], T); err != nil {
			return err
		}
	}
	if cache {
		got = nil
		start = time.Now()
		logits, err := fidelity.Cached(m.Spec, m.Tensors, ids, graph.Backend{})
		if err != nil {
			return err
		}
		fmt.Printf("cached, one token at a time: %.1f s\n", time.Since(start).Seconds())
		if err := report("logits (key/value cache)", logits, ref.Logits, V); err != nil {
			return err
		}
	}
	got = nil
	split := T / 2
	start = time.Now()
	sampled, err := fidelity.Sampled(m.Spec, m.Tensors, ids, split, graph.Backend{Threads: 2})
	if err != nil {
		return err
	}
	fmt.Printf("sampling's path, a prompt of %d tokens prefilled, %d appended: %.1f s\n", split, T-split, time.Since(start).Seconds())
	if err := report("logits (prefill, then cache)", sampled, ref.Logits[(split-1)*V:], V); err != nil {
		return err
	}
	if failed {
		return fmt.Errorf("relative error above %g", tolerance)
	}
	return nil
}
