package graph

import (
	"fmt"
	"math"
	"math/rand"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// Param is one trainable tensor, named as in the reference's state_dict.
type Param struct {
	Name  string
	Shape []int // PyTorch layout: Linear weights are [out, in]
	Node  *G.Node
}

// Value is the parameter's current value; training updates it in place.
func (p *Param) Value() *tensor.Dense { return p.Node.Value().(*tensor.Dense) }

// An initializer draws one parameter entry; these are PyTorch's defaults.
type initializer func(*rand.Rand) float64

// normal is nn.Embedding's N(0, 1).
func normal(r *rand.Rand) float64 { return r.NormFloat64() }

// uniform is nn.Linear's U(−1/√fanIn, 1/√fanIn), for its weight and its bias.
func uniform(fanIn int) initializer {
	bound := 1 / math.Sqrt(float64(fanIn))
	return func(r *rand.Rand) float64 { return (2*r.Float64() - 1) * bound }
}

// ones and zeros are nn.LayerNorm's weight and bias.
func ones(*rand.Rand) float64  { return 1 }
func zeros(*rand.Rand) float64 { return 0 }

// builder carries what every layer needs while the graph is emitted.
type builder struct {
	g      *G.ExprGraph
	spec   config.Model
	batch  int
	seqLen int
	dt     tensor.Dtype
	rng    *rand.Rand
	params []*Param
	consts map[string]*G.Node

	// fused emits the fused ops of fused.go instead of compositions of
	// Gorgonia primitives; ws is their shared scratch space.
	fused bool
	ws    *gemm.Workspace
}

func newBuilder(spec config.Model, batch, seqLen int, seed int64, fused bool) *builder {
	dt := tensor.Float32
	if spec.Dtype == "float64" {
		dt = tensor.Float64
	}
	return &builder{
		g: G.NewGraph(), spec: spec, batch: batch, seqLen: seqLen, dt: dt,
		rng: rand.New(rand.NewSource(seed)), consts: map[string]*G.Node{},
		fused: fused, ws: &gemm.Workspace{},
	}
}

// checkSpec rejects a model the builder cannot emit. Configs are validated
// when loaded; this guards the other way in, a model file's metadata.
func checkSpec(s config.Model, batch int) error {
	switch {
	case s.Vocab < 1:
		return fmt.Errorf("model: vocab %d must be at least 1", s.Vocab)
	case s.Context < 1 || s.Embedding < 1 || s.Blocks < 0 || s.FFMult < 1:
		return fmt.Errorf("model: context %d, embedding %d and ff_mult %d must be at least 1, blocks %d at least 0",
			s.Context, s.Embedding, s.FFMult, s.Blocks)
	case s.Heads < 1 || s.Embedding%s.Heads != 0:
		return fmt.Errorf("model: heads %d must divide embedding %d", s.Heads, s.Embedding)
	case s.Norm != "none" && s.Norm != "pre" && s.Norm != "post":
		return fmt.Errorf("model: norm %q must be none, pre or post", s.Norm)
	case s.Activation != "gelu" && s.Activation != "relu":
		return fmt.Errorf("model: activation %q must be gelu or relu", s.Activation)
	case s.TieEmbeddings || !s.Bias || s.FinalNorm || s.Init == "gpt2" || s.Dropout != 0:
		// config accepts nanoGPT's switches (issue #11); the graph has yet to emit them.
		return fmt.Errorf("model: tie_embeddings, bias = false, final_norm, init = \"gpt2\" and dropout are not built yet")
	case s.Dtype != "float32" && s.Dtype != "float64":
		return fmt.Errorf("model: dtype %q must be float32 or float64", s.Dtype)
	case batch < 1:
		return fmt.Errorf("batch %d must be at least 1", batch)
	}
	return nil
}

// param creates a trainable tensor, filled by init from the builder's RNG.
func (b *builder) param(name string, init initializer, shape ...int) *G.Node {
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]float64, n)
	for i := range data {
		data[i] = init(b.rng)
	}
	node := G.NewTensor(b.g, b.dt, len(shape), G.WithShape(shape...), G.WithName(name),
		G.WithValue(b.dense(data, shape...)))
	b.params = append(b.params, &Param{Name: name, Shape: append([]int(nil), shape...), Node: node})
	return node
}

// dense makes a tensor of the graph's dtype from float64 data.
func (b *builder) dense(data []float64, shape ...int) *tensor.Dense {
	if b.dt == tensor.Float64 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	}
	f := make([]float32, len(data))
	for i, v := range data {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
}

// linear is nn.Linear on rows: y = x·Wᵀ + b, with W stored [out, in].
func (b *builder) linear(name string, x *G.Node, in, out int) *G.Node {
	w := b.param(name+".weight", uniform(in), out, in)
	bias := b.param(name+".bias", uniform(in), out)
	if b.fused {
		return b.fusedLinear(x, w, bias, in, out)
	}
	y := G.Must(G.Mul(x, G.Must(G.Transpose(w))))
	return G.Must(G.BroadcastAdd(y, bias, nil, []byte{0}))
}

// splitHeads turns rows (B·T, C) into per-head sequences (B·H, T, C/H).
//
// It transposes even for one head, where a reshape alone would do: Gorgonia's
// Reshape returns a view sharing its input's memory, which the register
// allocator does not know about. When the input has another consumer that
// works in place (the residual Add of qkv = false) it overwrites the memory
// the view still needs in the backward pass, and the gradients come out
// silently wrong (TestFiniteDifferences catches it). Transpose copies.
func (b *builder) splitHeads(x *G.Node) *G.Node {
	B, T, C, H := b.batch, b.seqLen, b.spec.Embedding, b.spec.Heads
	x = G.Must(G.Reshape(x, tensor.Shape{B, T, H, C / H}))
	x = G.Must(G.Transpose(x, 0, 2, 1, 3))
	return G.Must(G.Reshape(x, tensor.Shape{B * H, T, C / H}))
}

// mergeHeads is splitHeads backwards: (B·H, T, C/H) to rows (B·T, C).
func (b *builder) mergeHeads(y *G.Node, B, T, C int) *G.Node {
	H := b.spec.Heads
	y = G.Must(G.Reshape(y, tensor.Shape{B, H, T, C / H}))
	y = G.Must(G.Transpose(y, 0, 2, 1, 3))
	return G.Must(G.Reshape(y, tensor.Shape{B * T, C}))
}

// scalar is a named constant. Gorgonia merges constants that share a name
// (and names unnamed ones by their printed value), so every distinct
// constant gets its own name and repeated requests reuse the node.
func (b *builder) scalar(name string, v float64) *G.Node {
	if n, ok := b.consts[name]; ok {
		return n
	}
	var n *G.Node
	if b.dt == tensor.Float64 {
		n = G.NewConstant(v, G.WithName(name))
	} else {
		n = G.NewConstant(float32(v), G.WithName(name))
	}
	b.consts[name] = n
	return n
}

// causalMask is the (T, T) constant added to the scores: 0 where a position
// may look (itself and earlier), −1e9 above the diagonal. Adding −1e9 rather
// than multiplying by 0/1 keeps exp() of masked scores at 0; −Inf would give NaN.
func (b *builder) causalMask(name string) *G.Node {
	if n, ok := b.consts["mask"]; ok {
		return n
	}
	T := b.seqLen
	data := make([]float64, T*T)
	for i := 0; i < T; i++ {
		for j := i + 1; j < T; j++ {
			data[i*T+j] = -1e9
		}
	}
	// A graph-owned matrix rather than a constant: broadcasting reshapes its
	// operand inside the graph, which a graph-less constant cannot do.
	n := G.NewMatrix(b.g, b.dt, G.WithShape(T, T), G.WithName("causal_mask"), G.WithValue(b.dense(data, T, T)))
	b.consts["mask"] = n
	return n
}

// subtractRowMax shifts every row so its largest entry is 0. Gorgonia's
// SoftMax seeds each row's running max with the tensor's first element, which
// overflows float32 when rows differ by ~88 (a masked −1e9 row does): after
// the shift that seed can no longer exceed the true row max. The shift
// changes no softmax value and, in exact arithmetic, no gradient.
func (b *builder) subtractRowMax(x *G.Node) *G.Node {
	last := x.Dims() - 1
	m := G.Must(G.Max(x, last))
	return G.Must(G.BroadcastSub(x, m, nil, []byte{byte(last)}))
}

// softmax over the last axis.
func (b *builder) softmax(x *G.Node) *G.Node {
	return G.Must(G.SoftMax(b.subtractRowMax(x)))
}

// gelu is GELU in its tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func (b *builder) gelu(name string, x *G.Node) *G.Node {
	inner := G.Must(G.Add(x, G.Must(G.Mul(G.Must(G.Cube(x)), b.scalar("gelu.a", 0.044715)))))
	t := G.Must(G.Tanh(G.Must(G.Mul(inner, b.scalar("gelu.c", math.Sqrt(2/math.Pi))))))
	onePlus := G.Must(G.Add(t, b.scalar("gelu.one", 1)))
	return G.Must(G.Mul(G.Must(G.HadamardProd(x, onePlus)), b.scalar("gelu.half", 0.5)))
}

// layerNorm normalises each row (B·T, C) to mean 0 and variance 1 (biased,
// eps 1e-5 as nn.LayerNorm), then scales and shifts it per channel.
// Built from Sqrt and a divide because InverseSqrt's gradient is wrong.
func (b *builder) layerNorm(name string, x *G.Node) *G.Node {
	C := b.spec.Embedding
	w := b.param(name+".weight", ones, C)
	bias := b.param(name+".bias", zeros, C)
	if b.fused {
		return b.fusedLayerNorm(x, w, bias, 1e-5)
	}
	mean := G.Must(G.Mean(x, 1))
	xc := G.Must(G.BroadcastSub(x, mean, nil, []byte{1}))
	variance := G.Must(G.Mean(G.Must(G.Square(xc)), 1))
	std := G.Must(G.Sqrt(G.Must(G.Add(variance, b.scalar("layernorm.eps", 1e-5)))))
	xn := G.Must(G.BroadcastHadamardDiv(xc, std, nil, []byte{1}))
	y := G.Must(G.BroadcastHadamardProd(xn, w, nil, []byte{0}))
	return G.Must(G.BroadcastAdd(y, bias, nil, []byte{0}))
}
