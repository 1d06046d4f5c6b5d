package graph

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/golden"
)

// layerRun is what one layer graph computed: its outputs and the gradient
// of a random linear function of them with respect to every parameter.
type layerRun struct {
	outs  [][]float64
	grads map[string][]float64
}

// runLayer emits layer on a fresh builder (fused or not), drives it with
// the parameters the builder draws from seed, and returns what it computed.
// The loss is Σ outs[0]⊙r with a fixed random r (or outs[0] itself when it
// is a scalar), so the gradients check the whole backward of the layer;
// further outputs are compared by value only (the attention weights, which
// the model reads but never differentiates on their own: fused/attention.go).
// It runs the graph twice and requires identical results: fused ops
// reuse their buffers from run to run.
func runLayer(t *testing.T, spec config.Model, batch, seqLen int, fused bool, layer func(b *builder) []*G.Node) layerRun {
	t.Helper()
	b := newBuilder(spec, Options{Batch: batch, SeqLen: seqLen, Seed: 1, Dropout: true, Backend: Backend{Unfused: !fused}})
	outs := layer(b)
	fillDropout(b.masks, spec.Dropout, rand.NewPCG(3, 3))
	rng := rand.New(rand.NewPCG(5, 5))
	loss := outs[0]
	if !loss.IsScalar() {
		data := make([]float64, loss.Shape().TotalSize())
		for j := range data {
			data[j] = 2*rng.Float64() - 1
		}
		r := G.NewTensor(b.g, b.dt, loss.Dims(), G.WithShape(loss.Shape()...), G.WithName("r"),
			G.WithValue(dense(b.dt, data, loss.Shape()...)))
		loss = G.Must(G.Sum(G.Must(G.HadamardProd(loss, r))))
	}
	nodes := make(G.Nodes, len(b.params))
	for i, p := range b.params {
		nodes[i] = p.Node
	}
	grads, err := G.Grad(loss, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(b.g)
	defer vm.Close()
	var runs [2]layerRun
	for k := range runs {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		runs[k].grads = map[string][]float64{}
		for _, o := range outs {
			runs[k].outs = append(runs[k].outs, Float64s(o.Value()))
		}
		for i, p := range b.params {
			runs[k].grads[p.Name] = Float64s(grads[i].Value())
		}
	}
	if !reflect.DeepEqual(runs[0], runs[1]) {
		t.Fatalf("fused=%v: a second run computed something else", fused)
	}
	return runs[0]
}

// compareLayer runs layer fused and unfused in float64 and requires the
// same outputs and gradients to 1e-12 relative (gradients 1e-3 of the
// whole gradient's norm or smaller to 1e-15 of that norm).
func compareLayer(t *testing.T, spec config.Model, batch, seqLen int, layer func(b *builder) []*G.Node) {
	t.Helper()
	spec.Dtype = "float64"
	fused := runLayer(t, spec, batch, seqLen, true, layer)
	unfused := runLayer(t, spec, batch, seqLen, false, layer)
	const tol = 1e-12
	for i := range unfused.outs {
		if e := golden.RelErr(fused.outs[i], unfused.outs[i], 0); !(e <= tol) {
			t.Errorf("output %d: relative error %.3g", i, e)
		}
	}
	// A gradient that is zero in exact arithmetic (a key bias: softmax
	// ignores a constant added to a row of scores) holds only round-off in
	// both graphs; the floor compares it with the whole instead of itself.
	var all []float64
	for _, g := range unfused.grads {
		all = append(all, g...)
	}
	floor := 1e-3 * golden.Norm(all)
	for name, want := range unfused.grads {
		if e := golden.RelErr(fused.grads[name], want, floor); !(e <= tol) {
			t.Errorf("gradient of %s: relative error %.3g", name, e)
		}
	}
}

// input adds a trainable (rows, cols) matrix standing for a layer's input,
// so that the test also checks the gradient flowing out of the layer.
func input(b *builder, rows, cols int) *G.Node {
	return b.param("x", uniform(1), rows, cols) // U(−1, 1)
}

var layerSpec = config.Model{Bias: true, Init: "torch",
	Vocab: 7, Context: 5, Embedding: 6, Blocks: 1, Heads: 2, FFMult: 3,
	QKV: true, Mask: true, OutProj: true, Norm: "pre", Activation: "gelu",
}

func TestFusedLinear(t *testing.T) {
	compareLayer(t, layerSpec, 3, 5, func(b *builder) []*G.Node {
		return []*G.Node{b.linear("lin", input(b, 15, 6), 6, 17, false)}
	})
	noBias := layerSpec
	noBias.Bias = false
	compareLayer(t, noBias, 3, 5, func(b *builder) []*G.Node {
		return []*G.Node{b.linear("lin", input(b, 15, 6), 6, 17, false)}
	})
}

// TestFusedDropout: the dropout of a residual branch and that of the
// attention weights, with masks of zeros and 1/(1 − p).
func TestFusedDropout(t *testing.T) {
	spec := layerSpec
	spec.Dropout = 0.3
	compareLayer(t, spec, 2, 5, func(b *builder) []*G.Node {
		if b.dropoutP != 0.3 {
			t.Fatalf("dropout %v in a training graph, want 0.3", b.dropoutP)
		}
		y, w := b.attention("att", input(b, 10, 6))
		return []*G.Node{b.dropout(y), w}
	})
}

// TestAttentionWeightsInLoss: a loss that reads the attention weights
// directly (the model's never does) must fail to differentiate rather than
// lose that part of its gradient.
func TestAttentionWeightsInLoss(t *testing.T) {
	spec := layerSpec
	spec.Dtype = "float64"
	b := newBuilder(spec, Options{Batch: 2, SeqLen: 5, Seed: 1})
	_, w := b.attention("att", input(b, 10, 6))
	_, err := G.Grad(G.Must(G.Sum(w)), b.params[0].Node)
	if err == nil || !strings.Contains(err.Error(), "only through y") {
		t.Fatalf("differentiating a loss that reads w: err = %v, want the attention weights' refusal", err)
	}
}

// TestFusedAttention checks the weights and the output (both are read: the
// weights by Model.Attention) for every mask, head and Q/K/V combination.
func TestFusedAttention(t *testing.T) {
	for _, heads := range []int{1, 2, 3} {
		for _, mask := range []bool{false, true} {
			for _, qkv := range []bool{false, true} {
				spec := layerSpec
				spec.Heads, spec.Mask, spec.QKV = heads, mask, qkv
				t.Run(fmt.Sprintf("h%d_mask%v_qkv%v", heads, mask, qkv), func(t *testing.T) {
					compareLayer(t, spec, 2, 5, func(b *builder) []*G.Node {
						y, w := b.attention("att", input(b, 10, 6))
						return []*G.Node{y, w}
					})
				})
			}
		}
	}
}

func TestFusedLayerNorm(t *testing.T) {
	compareLayer(t, layerSpec, 2, 5, func(b *builder) []*G.Node {
		return []*G.Node{b.layerNorm("norm", input(b, 10, 6))}
	})
	noBias := layerSpec
	noBias.Bias = false
	compareLayer(t, noBias, 2, 5, func(b *builder) []*G.Node {
		return []*G.Node{b.layerNorm("norm", input(b, 10, 6))}
	})
}

func TestFusedActivations(t *testing.T) {
	for _, act := range []string{"gelu", "gelu_exact", "relu"} {
		spec := layerSpec
		spec.Activation = act
		t.Run(act, func(t *testing.T) {
			compareLayer(t, spec, 2, 5, func(b *builder) []*G.Node {
				return []*G.Node{b.op.Activation(input(b, 10, 18), act)}
			})
		})
	}
}

// TestFusedEmbedding includes a graph shorter than the context, which
// reads only the first rows of the position table.
func TestFusedEmbedding(t *testing.T) {
	for _, seqLen := range []int{5, 3, 1} {
		t.Run(fmt.Sprint(seqLen), func(t *testing.T) {
			compareLayer(t, layerSpec, 3, seqLen, func(b *builder) []*G.Node {
				ids := make([]int, 3*seqLen)
				for i := range ids {
					ids[i] = (5 * i) % layerSpec.Vocab // repeated ids accumulate
				}
				tokens := G.NewVector(b.g, tensor.Int, G.WithShape(len(ids)), G.WithName("tokens"),
					G.WithValue(tensor.New(tensor.WithBacking(ids))))
				return []*G.Node{b.embedding(tokens)}
			})
		})
	}
}

// TestFusedCrossEntropy: integer targets, some repeated, every id of the
// vocabulary among them.
func TestFusedCrossEntropy(t *testing.T) {
	compareLayer(t, layerSpec, 3, 5, func(b *builder) []*G.Node {
		logits := input(b, 15, 7)
		ids := make([]int, 15)
		for i := range ids {
			ids[i] = (4 * i) % 7
		}
		targets := G.NewVector(b.g, tensor.Int, G.WithShape(15), G.WithName("targets"), G.WithValue(tensor.New(tensor.WithBacking(ids))))
		return []*G.Node{b.op.CrossEntropy(logits, targets)}
	})
}
