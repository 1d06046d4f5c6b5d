package graph

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
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

// builder carries what every layer of model.go needs while the graph is
// emitted: the parameters it creates, and the emitter that turns each
// layer into nodes.
type builder struct {
	g      *G.ExprGraph
	spec   config.Model
	batch  int
	seqLen int
	dt     tensor.Dtype
	rng    *rand.Rand
	params []*Param
	op     Emitter
	fused  *fused.Emitter // op when it is the fused emitter, else nil

	tok      *G.Node   // the token embedding, which a tied output layer reads too
	dropoutP float64   // 0 unless this graph has dropout
	masks    []*G.Node // its dropout masks, in the order they were made
	given    Weights   // when set, the parameters' values (Options.Weights)
}

func newBuilder(spec config.Model, o Options) *builder {
	dt := tensor.Float32
	if spec.Dtype == "float64" {
		dt = tensor.Float64
	}
	b := &builder{
		g: G.NewGraph(), spec: spec, batch: o.Batch, seqLen: o.SeqLen, dt: dt,
		rng: rand.New(rand.NewSource(o.Seed)), given: o.Weights,
	}
	if o.Dropout {
		b.dropoutP = spec.Dropout
	}
	if o.Unfused {
		b.op = &primitives{g: b.g, dt: dt, batch: o.Batch, seqLen: o.SeqLen,
			heads: spec.Heads, context: spec.Context, consts: map[string]*G.Node{}}
	} else {
		b.fused = fused.New(dt, fused.Sizes{Batch: o.Batch, Seq: o.SeqLen, Width: spec.Embedding,
			Heads: spec.Heads, Vocab: spec.Vocab, Context: spec.Context}, o.Threads, o.Memory)
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

// param creates a trainable tensor, filled by init from the builder's RNG
// (or given its value by Options.Weights).
// Parameters are drawn in the order model.go asks for them, whichever
// emitter runs, so both graphs of a seed start from the same values.
//
// The values are drawn straight into the dtype's slice: a float64 copy
// first would be garbage twice the size of a float32 model's weights, for
// every graph that a command builds only to load a model file into.
func (b *builder) param(name string, init initializer, shape ...int) *G.Node {
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
