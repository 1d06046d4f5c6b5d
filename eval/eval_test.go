// The tests are an external package because they train their models with
// package train, which itself imports eval.
package eval_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/testmodel"
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

// trainTiny trains a tiny model and loads it back from its file.
func trainTiny(t *testing.T, mask bool, steps int, lr float64) *graph.SavedModel {
	t.Helper()
	c := testmodel.Config(filepath.Join(t.TempDir(), "run"), mask, steps)
	c.Train.LR, c.Train.MinLR = lr, lr/10
	path, err := testmodel.Train(c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := graph.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPrefixOnlyOnACausalModel: a causal model never sees what follows a
// position, so scoring each position on its prefix alone changes nothing.
func TestPrefixOnlyOnACausalModel(t *testing.T) {
	m := trainTiny(t, true, 30, 1e-3)
	data := tinyData(t)
	plain, n, err := eval.ModelTestLoss(m, data, 4, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	prefix, np, err := eval.PrefixOnly(m, data, 4, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
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
	data := tinyData(t)
	plain, _, err := eval.ModelTestLoss(m, data, 4, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	prefix, _, err := eval.PrefixOnly(m, data, 4, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
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
	p, err := graph.Compile(g, false)
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
