package graph

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph/fused"
)

// Param is one trainable tensor, named as in the reference's state_dict.
type Param struct {
	Name  string
	Shape []int // PyTorch layout: Linear weights are [out, in]
	Node  *G.Node
}

// Size is the number of values the parameter holds.
func (p *Param) Size() int { return shapeSize(p.Shape) }

// CountParams is the number of values of all the parameters: the model's
// parameter count (config.Model.ParamCount computes it from a config
// alone, and a test holds the two equal).
func CountParams(params []*Param) int {
	n := 0
	for _, p := range params {
		n += p.Size()
	}
	return n
}

func shapeSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Value is the parameter's current value; training updates it in place.
func (p *Param) Value() *tensor.Dense { return p.Node.Value().(*tensor.Dense) }

// Backend says how a graph computes, not what: the same model, the same
// function and gradients whatever it says. The command line sets it once
// (cmd/gptg) and passes it down to training, evaluation and sampling.
type Backend struct {
	// Unfused composes every layer from Gorgonia primitives (MatMul,
	// Transpose, BroadcastAdd, SoftMax, ...) instead of emitting the fused
	// ops. Both compute the same function and gradients (the tests check
	// both against the reference); the fused graph is several times faster
	// and allocates almost nothing per run. The unfused one stays as the
	// readable specification and for comparison (GPTG_UNFUSED=1).
	Unfused bool
	// Threads bounds the goroutines a fused graph's kernels use (0 or 1:
	// the calling goroutine only). The results are the same bits for every
	// value: see package fused's team.
	Threads int
}

// Weights gives a graph its parameters' values instead of drawing them:
// the value of parameter name, of the given shape and the graph's dtype.
// A forward-only graph reads it and never writes it, so every graph
// built from one model file can share the file's one copy of the weights
// (a translator builds an encoder and a decoder per sentence length;
// copying the weights into each took a copy of the model per graph). It
// panics on a tensor it cannot give; the builder returns that as an error.
type Weights func(name string, shape []int) *tensor.Dense

// Zeros is a Weights that gives every parameter zeros of its own, for a
// training graph whose every parameter is set right after it is built (a
// fine-tuning's --init, a resumed run's checkpoint): drawing them took 7.5
// s of CPU at GPT-2 124M, and left the model's size in garbage.
func Zeros(dtype string) Weights {
	return func(_ string, shape []int) *tensor.Dense {
		if dtype == "float64" {
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float64, shapeSize(shape))))
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float32, shapeSize(shape))))
	}
}

// SharedWith is a Weights that gives every parameter the tensor of the
// parameter of the same name in params: the graphs of one run (a training
// step's shards, the evaluation graphs) read, and the optimizer updates,
// one copy of the weights, which none of them draws first.
func SharedWith(params []*Param) Weights {
	byName := make(map[string]*Param, len(params))
	for _, p := range params {
		byName[p.Name] = p
	}
	return func(name string, shape []int) *tensor.Dense {
		p, ok := byName[name]
		if !ok || !slices.Equal(p.Shape, shape) {
			panic(fmt.Sprintf("no parameter %s of shape %v to share", name, shape))
		}
		return p.Value()
	}
}

// SharedZeros is a Weights for a graph that is never run (one that only
// lists a model's parameters): every parameter a view of one buffer of
// zeros of the dtype (float64 or else float32), grown to the largest
// asked for, so that the graph takes about one tensor's memory instead of
// the model's.
func SharedZeros(dtype string) Weights {
	var f32 []float32
	var f64 []float64
	return func(_ string, shape []int) *tensor.Dense {
		n := shapeSize(shape)
		if dtype == "float64" {
			if len(f64) < n {
				f64 = make([]float64, n)
			}
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f64[:n]))
		}
		if len(f32) < n {
			f32 = make([]float32, n)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f32[:n]))
	}
}

// An initializer draws one parameter entry; these are PyTorch's defaults.
type initializer func(*rand.Rand) float64

// normal is nn.Embedding's N(0, 1).
func normal(r *rand.Rand) float64 { return r.NormFloat64() }

// gaussian is N(0, std²), nanoGPT's init "gpt2".
func gaussian(std float64) initializer {
	return func(r *rand.Rand) float64 { return std * r.NormFloat64() }
}

// uniform is nn.Linear's U(−1/√fanIn, 1/√fanIn), for its weight and its bias.
func uniform(fanIn int) initializer {
	bound := 1 / math.Sqrt(float64(fanIn))
	return func(r *rand.Rand) float64 { return (2*r.Float64() - 1) * bound }
}

// ones and zeros are nn.LayerNorm's weight and bias.
func ones(*rand.Rand) float64  { return 1 }
func zeros(*rand.Rand) float64 { return 0 }

// xavier is U(±√(6/(in+out))), torch.nn.init.xavier_uniform_:
// nn.Transformer's initialisation of its linear layers.
func xavier(in, out int) initializer {
	bound := math.Sqrt(6 / float64(in+out))
	return func(r *rand.Rand) float64 { return (2*r.Float64() - 1) * bound }
}

// builder emits layers (layers.go) on rows of one size, into one graph:
// the parameters the layers create join the graph's list, and its
// emitter turns each layer into nodes. A GPT has one builder; an
// encoder–decoder one per side, sharing the graph, since a fused op is
// sized for its rows and the encoder's rows are not the decoder's.
type builder struct {
	*graphState
	op    Emitter
	fused *fused.Emitter // op when it is the fused emitter, else nil
	// batch and seqLen say what the rows are: batch sequences of seqLen
	// positions (B·T rows).
	batch, seqLen int
	layers        // the model's settings of the shared layers

	spec config.Model // the GPT's [model] table (model.go); empty in an encoder–decoder
	tok  *G.Node      // the GPT's token embedding, which a tied output layer reads too
}

// graphState is what the builders of one graph share: the graph, the
// parameters created so far and the dropout masks.
type graphState struct {
	g      *G.ExprGraph
	dt     tensor.Dtype
	rng    *rand.Rand
	given  Weights // when set, the parameters' values (Options.Weights)
	params []*Param

	dropoutP float64   // 0 unless this graph has dropout
	masks    []*G.Node // its dropout masks, in the order they were made
}

func newGraphState(dtype string, seed int64, given Weights) *graphState {
	dt := tensor.Float32
	if dtype == "float64" {
		dt = tensor.Float64
	}
	return &graphState{g: G.NewGraph(), dt: dt, rng: rand.New(rand.NewSource(seed)), given: given}
}

// on returns a builder of the same graph and layers for other rows: the
// rows of seqLen positions per sequence that op is sized for.
func (b *builder) on(op Emitter, seqLen int) *builder {
	c := *b
	c.op, c.seqLen = op, seqLen
	c.fused, _ = op.(*fused.Emitter)
	return &c
}

// bf16Reference makes the unfused graphs of float64 models round their
// products as bfloat16 ones do: the tests' reference for the bfloat16
// graphs (BuildBF16Reference), its sums in float64.
var bf16Reference bool

// newBuilder is the builder of a GPT graph.
func newBuilder(spec config.Model, o Options) *builder {
	st := newGraphState(spec.Dtype, o.Seed, o.Weights)
	if o.Dropout {
		st.dropoutP = spec.Dropout
	}
	b := &builder{graphState: st, batch: o.Batch, seqLen: o.SeqLen, spec: spec, layers: layers{
		width: spec.Embedding, heads: spec.Heads, ffHidden: spec.FFMult * spec.Embedding, activation: spec.Activation,
		norm: spec.Norm, residual: spec.Residual, bias: spec.Bias, init: spec.Init, blocks: spec.Blocks,
		qkv: spec.QKV, outProj: spec.OutProj, dropWeights: true,
	}}
	if o.Unfused {
		b.op = &primitives{g: st.g, dt: st.dt, batch: o.Batch, seqLen: o.SeqLen,
			heads: spec.Heads, context: spec.Context, consts: map[string]*G.Node{}, bf16: spec.Dtype == config.DtypeBF16 || bf16Reference}
	} else {
		b.fused = fused.New(st.dt, fused.Sizes{Batch: o.Batch, Seq: o.SeqLen, Width: spec.Embedding,
			Heads: spec.Heads, Vocab: spec.Vocab, Context: spec.Context}, o.Threads, o.Memory)
		if spec.Dtype == config.DtypeBF16 {
			b.fused.BF16()
		}
		b.op = b.fused
	}
	return b
}

// checkSpec rejects a model the builder cannot emit. The rules are a
// config file's [model] table's, owned by config.Validate: a model built
// in code or read from a model file's metadata meets the same ones. The
// builder adds that there is a vocabulary and a batch.
func checkSpec(s config.Model, batch int) error {
	switch {
	case s.Vocab < 1:
		return fmt.Errorf("model: vocab %d must be at least 1", s.Vocab)
	case batch < 1:
		return fmt.Errorf("batch %d must be at least 1", batch)
	}
	c := config.Default()
	c.Model = s
	if err := c.Validate(); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "config: "))
	}
	return nil
}

// param creates a trainable tensor, filled by init from the graph's RNG
// (or given its value by Options.Weights). Parameters are drawn in the
// order the model asks for them, whichever emitter runs, so both graphs
// of a seed start from the same values.
//
// The values are drawn straight into the dtype's slice: a float64 copy
// first would be garbage twice the size of a float32 model's weights, for
// every graph that a command builds only to load a model file into.
func (b *graphState) param(name string, init initializer, shape ...int) *G.Node {
	var value *tensor.Dense
	switch {
	case b.given != nil:
		value = b.given(name, shape)
	case b.dt == tensor.Float64:
		data := make([]float64, shapeSize(shape))
		for i := range data {
			data[i] = init(b.rng)
		}
		value = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	default:
		data := make([]float32, shapeSize(shape))
		for i := range data {
			data[i] = float32(init(b.rng))
		}
		value = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	}
	node := G.NewTensor(b.g, b.dt, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(value))
	b.params = append(b.params, &Param{Name: name, Shape: append([]int(nil), shape...), Node: node})
	return node
}

// dense makes a tensor of dtype dt from float64 data.
func dense(dt tensor.Dtype, data []float64, shape ...int) *tensor.Dense {
	if dt == tensor.Float64 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	}
	f := make([]float32, len(data))
	for i, v := range data {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
}
