package graph

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// targetIndex turns the N target ids of the loss into their positions in
// the (N, V) log-probabilities read as one column: r·V + target[r]. It is
// an op of the graph (not computed when the batch is fed) so that both
// emitters read the same input, Model.Targets. Integer in, integer out:
// nothing to differentiate.
type targetIndex struct{ vocab int }

func (op targetIndex) Arity() int { return 1 }

func (op targetIndex) Type() hm.Type {
	ids := G.TensorType{Dims: 1, Of: tensor.Int}
	return hm.NewFnType(ids, ids)
}

func (op targetIndex) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("targetIndex: %d inputs, want 1", len(in))
	}
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("targetIndex: input shape of %T", in[0])
	}
	return s.Clone(), nil
}

func (op targetIndex) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("targetIndex: %d inputs, want 1", len(vals))
	}
	ids, ok := vals[0].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("targetIndex: input holds %T, want []int", vals[0].Data())
	}
	index := make([]int, len(ids))
	for r, t := range ids {
		index[r] = r*op.vocab + t
	}
	return tensor.New(tensor.WithShape(len(index)), tensor.WithBacking(index)), nil
}

func (op targetIndex) ReturnsPtr() bool      { return false }
func (op targetIndex) CallsExtern() bool     { return false }
func (op targetIndex) OverwritesInput() int  { return -1 }
func (op targetIndex) WriteHash(h hash.Hash) { fmt.Fprintf(h, "targetIndex%d", op.vocab) }
func (op targetIndex) String() string        { return "TargetIndex" }

func (op targetIndex) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// targetWeights gives each of the N targets of the encoder–decoder's loss
// its weight in the mean: 1/n for each of the n targets that are not
// ignore (PAD), 0 for the others. Integer in, the graph's dtype out, the
// weight rounded from float64 once; nothing to differentiate.
type targetWeights struct {
	ignore int
	dt     tensor.Dtype
}

func (op targetWeights) Arity() int { return 1 }

func (op targetWeights) Type() hm.Type {
	return hm.NewFnType(G.TensorType{Dims: 1, Of: tensor.Int}, G.TensorType{Dims: 1, Of: op.dt})
}

func (op targetWeights) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return targetIndex{}.InferShape(in...)
}

func (op targetWeights) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, fmt.Errorf("targetWeights: %d inputs, want 1", len(vals))
	}
	ids, ok := vals[0].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("targetWeights: input holds %T, want []int", vals[0].Data())
	}
	n := 0
	for _, id := range ids {
		if id != op.ignore {
			n++
		}
	}
	w := make([]float64, len(ids))
	for r, id := range ids {
		if id != op.ignore {
			w[r] = 1 / float64(n)
		}
	}
	return dense(op.dt, w, len(w)), nil
}

func (op targetWeights) ReturnsPtr() bool     { return false }
func (op targetWeights) CallsExtern() bool    { return false }
func (op targetWeights) OverwritesInput() int { return -1 }
func (op targetWeights) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "targetWeights%d%v", op.ignore, op.dt)
}
func (op targetWeights) String() string { return "TargetWeights" }

// DiffWRT and SymDiff say there is nothing to differentiate: Gorgonia
// asks every op on the path of a loss, and the weights are on it (the
// loss is their sum with the per-target terms).
func (op targetWeights) DiffWRT(n int) []bool { return make([]bool, n) }

func (op targetWeights) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("targetWeights: the weights of the targets have no gradient")
}

func (op targetWeights) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
