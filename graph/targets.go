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
