// The tests are an external package because they train their models with
// package train, which itself imports eval.
package eval_test

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
)

// tinyData is testdata/tiny.txt cut for the tiny models (context 8) the
// way gptg eval cuts it: stride context/2, split 0.9.
func tinyData(t *testing.T) *corpus.Dataset {
	t.Helper()
	data, err := corpus.Load(testmodel.TinyText(), "char", 8, 0, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// trainTiny trains a tiny model and loads it back from its file; edits
// (if any) change its config first.
func trainTiny(t *testing.T, mask bool, steps int, lr float64, edits ...func(*config.Config)) *savedmodel.Model {
	t.Helper()
	c := testmodel.Config(filepath.Join(t.TempDir(), "run"), mask, steps)
	c.Train.LR, c.Train.MinLR = lr, lr/10
	for _, edit := range edits {
		edit(c)
	}
	path, err := testmodel.Train(c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := savedmodel.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// plainAndPrefixOnly is m's test loss on data in batches of 4, plainly and
// prefix-only, each with the number of batches it averages.
func plainAndPrefixOnly(t *testing.T, m *savedmodel.Model, data *corpus.Dataset) (plain float64, n int, prefix float64, np int) {
	t.Helper()
	plain, n, err := eval.ModelTestLoss(m, data, 4, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	prefix, np, err = eval.PrefixOnly(m, data, 4, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	return plain, n, prefix, np
}

// TestPrefixOnlyOnACausalModel: a causal model never sees what follows a
// position, so scoring each position on its prefix alone changes nothing.
func TestPrefixOnlyOnACausalModel(t *testing.T) {
	m := trainTiny(t, true, 30, 1e-3)
	data := tinyData(t)
	plain, n, prefix, np := plainAndPrefixOnly(t, m, data)
	if n != data.NumTest()/4 || np != n {
		t.Errorf("batches: plain %d, prefix-only %d, want %d", n, np, data.NumTest()/4)
	}
	if math.Abs(plain-prefix) > 1e-9 {
		t.Errorf("test loss %.12f, prefix-only %.12f: differ by %g", plain, prefix, plain-prefix)
	}
	if math.IsNaN(plain) || plain <= 0 {
		t.Errorf("test loss %v", plain)
	}
}

// TestPrefixOnlyExposesAnUnmaskedModel: without the mask, the plain loss
// lets position i read token i+1, the very token it predicts, and training
// learns to copy it. Scored on prefixes only, that trick is gone. It takes
// about two epochs (1300 steps, a second or two) for the tiny model to
// learn the copy well; after 200 steps the gap is still under 0.1.
func TestPrefixOnlyExposesAnUnmaskedModel(t *testing.T) {
	m := trainTiny(t, false, 1300, 1e-2)
	plain, _, prefix, _ := plainAndPrefixOnly(t, m, tinyData(t))
	t.Logf("unmasked model: test loss %.4f, prefix-only %.4f", plain, prefix)
	if !(prefix > plain+1) {
		t.Errorf("prefix-only loss %.4f is not clearly above the plain test loss %.4f", prefix, plain)
	}
}

// TestTestLossByHand recomputes TestLoss from its definition: the test
// windows in order (window i starts at Cut + i·Stride), cut into whole
// batches (the incomplete last batch dropped), each batch's mean
// cross-entropy computed here from the logits, averaged over the batches.
func TestTestLossByHand(t *testing.T) {
	data := tinyData(t)
	spec := testmodel.Config("", true, 1).Model
	spec.Vocab = data.Vocab.Size()
	const B = 3
	if data.NumTest()%B == 0 {
		t.Fatalf("%d test windows: pick a batch size that leaves some out", data.NumTest())
	}
	g, err := graph.Build(spec, graph.Options{Batch: B, Loss: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tape.Compile(g, false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	got, n, err := eval.TestLoss(p, data)
	if err != nil {
		t.Fatal(err)
	}
	if n != data.NumTest()/B {
		t.Fatalf("%d batches, want %d", n, data.NumTest()/B)
	}

	T, V := data.Context, spec.Vocab
	sum := 0.0
	for b := 0; b < n; b++ {
		var x, y []int
		for i := b * B; i < (b+1)*B; i++ {
			start := data.Cut + i*data.Stride
			x = append(x, data.Tokens()[start:start+T]...)
			y = append(y, data.Tokens()[start+1:start+T+1]...)
		}
		if err := p.Run(x, y); err != nil {
			t.Fatal(err)
		}
		logits := graph.Float64s(p.Logits.Value())
		batch := 0.0
		for r := 0; r < B*T; r++ {
			row := logits[r*V : (r+1)*V]
			maxL := math.Inf(-1)
			for _, v := range row {
				maxL = math.Max(maxL, v)
			}
			z := 0.0
			for _, v := range row {
				z += math.Exp(v - maxL)
			}
			batch += maxL + math.Log(z) - row[y[r]]
		}
		sum += batch / float64(B*T)
	}
	want := sum / float64(n)
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("TestLoss %.15f, by hand %.15f", got, want)
	}
	// An untrained model is about uniform: a loss near log(vocab).
	if math.Abs(want-math.Log(float64(V))) > 1.5 {
		t.Errorf("loss %v is far from log(%d) = %v for an untrained model", want, V, math.Log(float64(V)))
	}
}

// TestPrefixOnlyAgreesWithOnePassPerPrefix holds the single masked pass
// that PrefixOnly takes for causal models and for unmasked models of one
// block against the definition, one graph per prefix length, in float64
// and float32.
func TestPrefixOnlyAgreesWithOnePassPerPrefix(t *testing.T) {
	data := tinyData(t)
	for _, tc := range []struct {
		name   string
		mask   bool
		blocks int
		dtype  string
		tol    float64
	}{
		{"causal, 2 blocks, float64", true, 2, "float64", 1e-12},
		{"unmasked, 1 block, float64", false, 1, "float64", 1e-12},
		{"unmasked, 1 block, float32", false, 1, "float32", 1e-5},
		{"causal, 1 block, float32", true, 1, "float32", 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testmodel.Config(filepath.Join(t.TempDir(), "run"), tc.mask, 60)
			c.Model.Blocks, c.Model.Dtype = tc.blocks, tc.dtype
			c.Train.LR, c.Train.MinLR = 1e-2, 1e-3
			path, err := testmodel.Train(c)
			if err != nil {
				t.Fatal(err)
			}
			m, err := savedmodel.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			want, nw, err := eval.PerPrefix(m, data, 3, graph.Backend{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			got, n, err := eval.PrefixOnlyProgress(m, data, 3, graph.Backend{}, func(done, total int) error {
				calls++
				if done != calls || total != data.TestBatches(3) {
					t.Errorf("progress(%d, %d) at call %d, want total %d", done, total, calls, data.TestBatches(3))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != nw || calls != n {
				t.Errorf("batches %d, per prefix %d, progress calls %d", n, nw, calls)
			}
			if math.Abs(got-want) > tc.tol*want {
				t.Errorf("prefix-only %.12f, one pass per prefix %.12f: differ by %g", got, want, got-want)
			}
		})
	}
}

// TestPrefixOnlyStopsWhenProgressFails: an interrupt reported through the
// progress callback ends the evaluation with that error.
func TestPrefixOnlyStopsWhenProgressFails(t *testing.T) {
	m := trainTiny(t, false, 5, 1e-3)
	stop := errors.New("stop")
	calls := 0
	_, _, err := eval.PrefixOnlyProgress(m, tinyData(t), 2, graph.Backend{}, func(done, total int) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("err %v after %d calls, want stop after 1", err, calls)
	}
}

// TestPrefixOnlyIsWhatGenerationSees scores a two-block unmasked model
// (which takes one pass per prefix length, on several workers) against the
// sampler: for every test window and position, the logits gptg sample
// would draw from after the window's prefix.
func TestPrefixOnlyIsWhatGenerationSees(t *testing.T) {
	data := tinyData(t)
	c := testmodel.Config(filepath.Join(t.TempDir(), "run"), false, 60)
	c.Model.Blocks = 2
	path, err := testmodel.Train(c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := savedmodel.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	const B = 3
	got, n, err := eval.PrefixOnly(m, data, B, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sample.New(m, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	T := data.Context
	x, y, sum := make([]int, T), make([]int, T), 0.0
	for w := 0; w < n*B; w++ {
		data.TestBatch(x, y, []int{w})
		for L := 1; L <= T; L++ {
			logits, err := s.NextLogits(x[:L])
			if err != nil {
				t.Fatal(err)
			}
			mx := math.Inf(-1)
			for _, v := range logits {
				mx = math.Max(mx, v)
			}
			z := 0.0
			for _, v := range logits {
				z += math.Exp(v - mx)
			}
			sum += mx + math.Log(z) - logits[y[L-1]]
		}
	}
	want := sum / float64(n*B*T)
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("prefix-only %.15f, from the sampler's logits %.15f", got, want)
	}
}

// TestModelTestLossProgress: the progress variant reports after every run
// the batches done so far (k at a time, then one at a time for the rest),
// gives the same loss, and stops at the first error it is handed.
func TestModelTestLossProgress(t *testing.T) {
	m := trainTiny(t, true, 5, 1e-3)
	data := tinyData(t)
	want, _, err := eval.ModelTestLoss(m, data, 2, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	total := data.TestBatches(2)
	k := m.Spec.EvalBatch(2, total) / 2
	calls, last := 0, 0
	got, n, err := eval.ModelTestLossProgress(m, data, 2, graph.Backend{}, func(done, total int) error {
		calls++
		step := k
		if last+k > total {
			step = 1
		}
		if done != last+step || total != data.TestBatches(2) {
			t.Errorf("progress(%d, %d) at call %d, after %d", done, total, calls, last)
		}
		last = done
		return nil
	})
	if err != nil || got != want || n != total || last != n || calls != n/k+n%k {
		t.Errorf("loss %v (err %v) after %d calls up to %d of %d batches, want %v in %d calls", got, err, calls, last, n, want, n/k+n%k)
	}
	stop := errors.New("stop")
	if _, _, err := eval.ModelTestLossProgress(m, data, 2, graph.Backend{}, func(int, int) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("err %v, want stop", err)
	}
}
