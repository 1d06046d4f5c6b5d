package hf

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/fidelity"
)

// The folders in testdata/gpt2 (make.sh) are GPT-2s of 2 layers, 2
// heads, embedding 32, context 64 and 300 tokens with random weights, in
// the Hugging Face layouts mkgpt2.py writes; ref.safetensors in each is
// bench/gpt2ref.py's forward pass over ids.txt, computed in float64.
var gpt2Data = filepath.Join("..", "testdata", "gpt2")

// goldenTolerance is the largest relative error ‖a − b‖/‖b‖ allowed at any
// position, for gptg's float32 against the reference's float64.
const goldenTolerance = 1e-5

func readIDs(t *testing.T) []int {
	t.Helper()
	ids, err := fidelity.ReadIDs(filepath.Join(gpt2Data, "ids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestGoldenForward imports each folder and checks that gptg's logits and
// attention weights match the reference's at every position, with the
// fused kernels and with Gorgonia's primitives, and that sampling's
// key/value-cache graph gives the same logits one token at a time, and
// after a prompt's prefill.
func TestGoldenForward(t *testing.T) {
	ids := readIDs(t)
	for _, name := range []string{"small-f32", "small-f16"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(gpt2Data, name)
			m, err := Import(dir, 1)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := fidelity.ReadReference(filepath.Join(dir, "ref.safetensors"), m.Spec.Blocks)
			if err != nil {
				t.Fatal(err)
			}
			T, V := len(ids), m.Spec.Vocab
			for _, be := range []graph.Backend{{}, {Unfused: true}} {
				got, err := fidelity.Forward(m.Spec, m.Tensors, ids, be)
				if err != nil {
					t.Fatal(err)
				}
				check(t, "logits", be, got.Logits, ref.Logits, V)
				for b := range ref.Attention {
					check(t, "attention of block "+strconv.Itoa(b), be, got.Attention[b], ref.Attention[b], T)
				}
			}
			cached, err := fidelity.Cached(m.Spec, m.Tensors, ids, graph.Backend{})
			if err != nil {
				t.Fatal(err)
			}
			check(t, "logits through the cache", graph.Backend{}, cached, ref.Logits, V)
			// Sampling's path: a prompt of 40 tokens prefilled, the rest
			// appended, on two threads.
			const split = 40
			sampled, err := fidelity.Sampled(m.Spec, m.Tensors, ids, split, graph.Backend{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			check(t, "logits through a prefill and the cache", graph.Backend{Threads: 2}, sampled, ref.Logits[(split-1)*V:], V)
		})
	}
}

func check(t *testing.T, what string, be graph.Backend, got, want []float64, n int) {
	t.Helper()
	worst, row, err := fidelity.Worst(got, want, n)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if worst > goldenTolerance {
		t.Errorf("%s (unfused %v): relative error %.2g at row %d, want ≤ %g", what, be.Unfused, worst, row, goldenTolerance)
	}
	t.Logf("%s (unfused %v): worst relative error %.2g", what, be.Unfused, worst)
}
