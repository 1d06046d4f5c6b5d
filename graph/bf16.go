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

// The unfused graph's model.dtype "bfloat16": the specification of what
// the fused graph computes with gemm.Workspace.BF16, composed from
// Gorgonia's products and one rounding op. Each product of a layer (the
// linear layers, the output layer, the attention's scores and weighted
// sums) multiplies its operands rounded to bfloat16, and its gradient
// enters the backward products rounded too: y = keep(round(a)·round(b)),
// where round rounds the values and passes the gradient through, and
// keep passes the values and rounds the gradient. So ∂a = round(∂y)·
// round(b)ᵀ, as the fused backward's products round both their operands.
// The graph's own dtype (float32, or float64 in the tests' reference)
// holds the sums.

// bf16Op rounds its input to bfloat16 (values: forward, else gradient).
type bf16Op struct {
	dims   int
	values bool // round the values (its gradient passes); false: pass the values, round the gradient
}

// roundBF16 is v rounded to the nearest bfloat16 (8 significant bits, ties
// to even), as the fused products round float32 operands: a magnitude
// below float32's smallest normal becomes a zero of its sign, as the
// hardware conversion flushes denormals.
func roundBF16(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	if math.Abs(v) < 0x1p-126 {
		return math.Copysign(0, v)
	}
	frac, exp := math.Frexp(v) // v = frac·2^exp, 0.5 ≤ |frac| < 1
	return math.Ldexp(math.RoundToEven(math.Ldexp(frac, 8)), exp-8)
}

func (op bf16Op) Arity() int { return 1 }

func (op bf16Op) Type() hm.Type {
	t := G.TensorType{Dims: op.dims, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t)
}

func (op bf16Op) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("bf16: input shape %v", in[0])
	}
	return s.Clone(), nil
}

func (op bf16Op) Do(vals ...G.Value) (G.Value, error) {
	t, ok := vals[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("bf16: input is %T", vals[0])
	}
	out := tensor.New(tensor.Of(t.Dtype()), tensor.WithShape(t.Shape().Clone()...))
	switch x := t.Data().(type) {
	case []float64:
		y := out.Data().([]float64)
		for i, v := range x {
			y[i] = v
			if op.values {
				y[i] = roundBF16(v)
			}
		}
	case []float32:
		y := out.Data().([]float32)
		for i, v := range x {
			y[i] = v
			if op.values {
				y[i] = float32(roundBF16(float64(v)))
			}
		}
	default:
		return nil, fmt.Errorf("bf16: unsupported dtype %T", x)
	}
	return out, nil
}

func (op bf16Op) ReturnsPtr() bool     { return false }
func (op bf16Op) CallsExtern() bool    { return false }
func (op bf16Op) OverwritesInput() int { return -1 }
func (op bf16Op) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "bf16%d%v", op.dims, op.values)
}
func (op bf16Op) String() string {
	if op.values {
		return "RoundBF16"
	}
	return "RoundBF16Grad"
}
func (op bf16Op) DiffWRT(n int) []bool { return []bool{true} }
func (op bf16Op) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// SymDiff: rounding the values passes the gradient (the products' rounding
// is not part of what is differentiated, as in the fused backward);
// passing the values rounds the gradient.
func (op bf16Op) SymDiff(in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
	if op.values {
		return G.Nodes{dy}, nil
	}
	dx, err := G.ApplyOp(bf16Op{dims: op.dims, values: true}, dy)
	return G.Nodes{dx}, err
}

// product is f(a, b), a layer's matrix product (G.Mul, or BatchedMatMul
// with its transposes), in bfloat16 when the graph's model is.
func (e *primitives) product(f func(a, b *G.Node) (*G.Node, error), a, b *G.Node) *G.Node {
	if !e.bf16 {
		return G.Must(f(a, b))
	}
	round := func(x *G.Node) *G.Node { return G.Must(G.ApplyOp(bf16Op{dims: x.Dims(), values: true}, x)) }
	y := G.Must(f(round(a), round(b)))
	return G.Must(G.ApplyOp(bf16Op{dims: y.Dims()}, y))
}

// batched is BatchedMatMul with the given transposes, as product takes it.
func batched(transA, transB bool) func(a, b *G.Node) (*G.Node, error) {
	return func(a, b *G.Node) (*G.Node, error) { return G.BatchedMatMul(a, b, transA, transB) }
}
