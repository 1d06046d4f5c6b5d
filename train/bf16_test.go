package train

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/savedmodel"
)

// bf16Config is tinyConfig as a bfloat16 model, at a width where the
// products have some depth (embedding 32).
func bf16Config(t *testing.T, dir string) *config.Config {
	t.Helper()
	c := tinyConfig(t, dir)
	c.Model.Embedding, c.Model.Dtype = 32, config.DtypeBF16
	return c
}

// TestBF16IsUsed: a bfloat16 run trains (its loss falls) to other weights
// than the float32 run of the same seed, and the run's config and model
// file say bfloat16. On the unfused graph it trains too, and where the CPU
// lacks AVX512_BF16 the log says the products run on the slow kernel.
func TestBF16IsUsed(t *testing.T) {
	bf, f32 := t.TempDir(), t.TempDir()
	var log strings.Builder
	if _, err := Run(context.Background(), bf16Config(t, bf), Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	c := bf16Config(t, f32)
	c.Model.Dtype = "float32"
	if _, err := Run(context.Background(), c, Options{}); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(params(t, bf), params(t, f32)) {
		t.Fatal("bfloat16 and float32 trained the same weights")
	}
	r := rows(t, bf)
	if first, last := r[0]["loss"].(float64), r[len(r)-1]["loss"].(float64); !(last < first) {
		t.Fatalf("bfloat16: loss did not fall: %v → %v", first, last)
	}
	for _, tensor := range params(t, bf) {
		if tensor.F32 == nil {
			t.Fatal("a bfloat16 model file holds other than float32 weights")
		}
	}
	m, err := savedmodel.Load(filepath.Join(bf, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec.Dtype != config.DtypeBF16 {
		t.Fatalf("the model file's dtype: %q", m.Spec.Dtype)
	}
	slow := fused.BF16Kernel() == "go"
	if noted := strings.Contains(log.String(), "no AVX512_BF16"); noted != slow {
		t.Errorf("kernel %q, the log's note of a slow kernel: %v\n%s", fused.BF16Kernel(), noted, log.String())
	}
	// The CPUs measured are far from the note's bound of 1 (Zen 5 1.94;
	// an Intel core of the Sapphire Rapids kind 0.50 for VDPBF16PS, 14
	// for its AMX tiles), so a second measurement here agrees with the
	// run's.
	if !slow {
		r := fused.BF16PeakRatio()
		if noted := strings.Contains(log.String(), "float32's multiply-add rate"); noted != (r <= 1) {
			t.Errorf("bfloat16's peak %.2f× float32's here; the log's note that it is slower: %v\n%s", r, noted, log.String())
		}
	}
	unfused := t.TempDir()
	if _, err := Run(context.Background(), bf16Config(t, unfused), Options{Backend: graph.Backend{Unfused: true}}); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(params(t, unfused), params(t, f32)) {
		t.Fatal("bfloat16 on the unfused graph trained float32's weights")
	}
}

// TestInterruptAndResumeBF16: a bfloat16 run stopped and resumed ends
// bit-identical to the uninterrupted one, as a float32 run does.
func TestInterruptAndResumeBF16(t *testing.T) { interruptAndResume(t, bf16Config) }

// TestBF16ThreadsGiveSameWeights: a bfloat16 run gives the same weights
// on 1 and 2 threads, one graph (batch 8) or two shards (batch 16), as the
// products' bits do not depend on the split.
func TestBF16ThreadsGiveSameWeights(t *testing.T) {
	for _, batch := range []int{8, 16} {
		var want any
		for _, threads := range []int{1, 2} {
			dir := t.TempDir()
			c := bf16Config(t, dir)
			c.Model.Context, c.Model.Embedding = 32, 128
			c.Data.Stride = 16
			c.Train.Batch, c.Train.MaxSteps, c.Train.EvalEvery, c.Train.Threads = batch, 8, 4, threads
			if _, err := Run(context.Background(), c, Options{}); err != nil {
				t.Fatal(err)
			}
			got := params(t, dir)
			if threads == 1 {
				want = got
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("batch %d: 2 threads trained other weights than 1", batch)
			}
		}
	}
}

// TestBF16Note: the start of a bfloat16 run says when its products are
// slower than float32's here — on the plain-Go kernel, or where the CPU's
// bfloat16 peak is at most float32's — and is silent where they are faster.
func TestBF16Note(t *testing.T) {
	measured := func(r float64) func() float64 { return func() float64 { return r } }
	for _, c := range []struct {
		kernel string
		ratio  float64
		want   string // "" for no note
	}{
		{"go", 0, "no AVX512_BF16, so the products run on the plain-Go kernel"},
		{"avx512bf16", 0.50, "this CPU's VDPBF16PS measures 0.50× float32's multiply-add rate, so the products run slower"},
		{"avx512bf16", 1.00, "measures 1.00×"},
		{"avx512bf16", 1.94, ""},
		{"amx", 14.4, ""},
		{"amx", 0.90, "this CPU's AMX tiles (TDPBF16PS) measure 0.90× float32's multiply-add rate, so the products run slower"},
		{"avx512bf16 (AMX unused: arch_prctl(ARCH_REQ_XCOMP_PERM) refused: operation not permitted)", 0.49,
			"VDPBF16PS measures 0.49× float32's multiply-add rate, so the products run slower than float32 (the same numbers; float32 is faster here: docs/configs.md; AMX unused: arch_prctl(ARCH_REQ_XCOMP_PERM) refused: operation not permitted)"},
	} {
		got := bf16Note(c.kernel, measured(c.ratio))
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("kernel %s, peak ratio %.2f: note %q, want %q", c.kernel, c.ratio, got, c.want)
		}
	}
}
