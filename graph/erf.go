package graph

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// erfOp is the one primitive Gorgonia v0.9.18 lacks for the exact GELU
// (PyTorch's nn.GELU(), nanoGPT's): erf, element by element. Its
// derivative, 2/√π·exp(−x²), is composed from Gorgonia's own operations,
// so the unfused graph stays a composition Gorgonia differentiates.
type erfOp struct{ dims int }

func (op erfOp) Arity() int { return 1 }

func (op erfOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := G.TensorType{Dims: op.dims, Of: a}
	return hm.NewFnType(t, t)
}

func (op erfOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("erf: input shape %v", in[0])
	}
	return s.Clone(), nil
}

func (op erfOp) Do(vals ...G.Value) (G.Value, error) {
	t, ok := vals[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("erf: input is %T", vals[0])
	}
	out := tensor.New(tensor.Of(t.Dtype()), tensor.WithShape(t.Shape().Clone()...))
	switch x := t.Data().(type) {
	case []float64:
		y := out.Data().([]float64)
		for i, v := range x {
			y[i] = math.Erf(v)
		}
	case []float32:
		y := out.Data().([]float32)
		for i, v := range x {
			y[i] = float32(math.Erf(float64(v)))
		}
	default:
		return nil, fmt.Errorf("erf: unsupported dtype %T", x)
	}
	return out, nil
}

func (op erfOp) ReturnsPtr() bool      { return false }
func (op erfOp) CallsExtern() bool     { return false }
func (op erfOp) OverwritesInput() int  { return -1 }
func (op erfOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "erf%d", op.dims) }
func (op erfOp) String() string        { return "Erf" }
func (op erfOp) DiffWRT(n int) []bool  { return []bool{true} }
func (op erfOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// SymDiff: ∂x = ∂y·(2/√π)·exp(−x²).
func (op erfOp) SymDiff(in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
	x := in[0]
	var coef, minus *G.Node
	if x.Dtype() == tensor.Float64 {
		coef = G.NewConstant(2/math.Sqrt(math.Pi), G.WithName("erf.coef64"))
		minus = G.NewConstant(-1.0, G.WithName("erf.minus64"))
	} else {
		coef = G.NewConstant(float32(2/math.Sqrt(math.Pi)), G.WithName("erf.coef32"))
		minus = G.NewConstant(float32(-1), G.WithName("erf.minus32"))
	}
	e, err := G.Exp(G.Must(G.Mul(G.Must(G.Square(x)), minus)))
	if err != nil {
		return nil, err
	}
	dx, err := G.HadamardProd(dy, G.Must(G.Mul(e, coef)))
	return G.Nodes{dx}, err
}

// geluExact is GELU with the exact normal CDF: 0.5·x·(1 + erf(x/√2)).
func (e *primitives) geluExact(x *G.Node) *G.Node {
	z := G.Must(G.Mul(x, e.scalar("gelu_exact.rsqrt2", 1/math.Sqrt2)))
	erf := G.Must(G.ApplyOp(erfOp{dims: x.Dims()}, z))
	onePlus := G.Must(G.Add(erf, e.scalar("gelu_exact.one", 1)))
	return G.Must(G.Mul(G.Must(G.HadamardProd(x, onePlus)), e.scalar("gelu_exact.half", 0.5)))
}
