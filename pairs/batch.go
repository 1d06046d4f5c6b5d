package pairs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// Shape is one static graph shape: S source positions (words + EOS) and T
// target positions (SOS + words in dec_in, words + EOS in dec_tgt).
type Shape struct{ S, T int }

// Batch is B pairs padded to one Shape, row-major.
type Batch struct {
	Shape
	B int

	Src    []int // B×S: source ids, EOS, PAD…
	DecIn  []int // B×T: SOS, target ids, PAD…
	DecTgt []int // B×T: target ids, EOS, PAD…
	// SrcPad and TgtPad are true at PAD positions of Src and of DecIn (the
	// convention of PyTorch's src_key_padding_mask / memory_key_padding_mask
	// and tgt_key_padding_mask). The loss counts the positions where
	// DecTgt is not PAD.
	SrcPad []bool
	TgtPad []bool

	// Rows is how many rows hold pairs; the B−Rows filler rows at the end
	// are src = [EOS], dec_in = [SOS], dec_tgt all PAD: they add nothing to
	// a loss averaged over non-PAD targets, and no attention row of theirs
	// is fully masked.
	Rows int
	// Pairs are the indices of the rows' pairs in the batcher's slice.
	Pairs []int
	// Tokens is the number of non-PAD DecTgt positions (target words + EOS).
	Tokens int
}

// Plan is one batch of an epoch: which bucket's shape and which pairs.
type Plan struct {
	Bucket int
	Pairs  []int
}

// Batcher cuts pairs into batches of a fixed size and a few fixed shapes.
// With one bucket every batch is padded to the maxima (SourceLen,
// TargetLen); with K buckets each pair goes to the smallest shape it fits,
// and each shape is one more graph to build.
type Batcher struct {
	pairs  []Pair
	batch  int
	shapes []Shape
	bucket [][]int // pair indices per bucket, in slice order
}

// NewBatcher prepares batches of batch pairs over ps, whose sentences have
// at most maxSource and maxTarget words (the Options' maxima). buckets > 1
// adds smaller shapes, spaced so that each holds about the same number of
// pairs of ps (so build the training batcher first and give a test batcher
// the same Shapes with NewBatcherShapes).
func NewBatcher(ps []Pair, batch, maxSource, maxTarget, buckets int) *Batcher {
	return NewBatcherShapes(ps, batch, BucketShapes(ps, maxSource, maxTarget, buckets))
}

// NewBatcherShapes is NewBatcher with given shapes, smallest first; the
// last must fit every pair in ps.
func NewBatcherShapes(ps []Pair, batch int, shapes []Shape) *Batcher {
	b := &Batcher{pairs: ps, batch: batch, shapes: shapes, bucket: make([][]int, len(shapes))}
	for i, p := range ps {
		k := b.bucketOf(p)
		if k < 0 {
			panic(fmt.Sprintf("pairs: pair of line %d (%d, %d words) fits no shape of %v", p.Line, len(p.Src), len(p.Tgt), shapes))
		}
		b.bucket[k] = append(b.bucket[k], i)
	}
	return b
}

// BucketShapes returns buckets shapes, smallest first, the last one
// (maxSource+1, maxTarget+1). A pair's size is the larger of its source's
// and target's share of their maxima; the cut points are quantiles of that
// size over ps, and a shape scales both maxima by its cut point, so a
// bucket holds pairs whose two sides are both short.
func BucketShapes(ps []Pair, maxSource, maxTarget, buckets int) []Shape {
	full := Shape{maxSource + 1, maxTarget + 1}
	if buckets <= 1 || len(ps) == 0 {
		return []Shape{full}
	}
	sizes := make([]float64, len(ps))
	for i, p := range ps {
		sizes[i] = max(float64(len(p.Src))/float64(maxSource), float64(len(p.Tgt))/float64(maxTarget))
	}
	sort.Float64s(sizes)
	var shapes []Shape
	for k := 1; k < buckets; k++ {
		q := sizes[k*len(sizes)/buckets]
		s := Shape{int(q*float64(maxSource)) + 1, int(q*float64(maxTarget)) + 1}
		if len(shapes) > 0 && shapes[len(shapes)-1] == s || s == full {
			continue
		}
		shapes = append(shapes, s)
	}
	return append(shapes, full)
}

func (b *Batcher) bucketOf(p Pair) int {
	for k, s := range b.shapes {
		if len(p.Src)+1 <= s.S && len(p.Tgt)+1 <= s.T {
			return k
		}
	}
	return -1
}

// Shapes returns the batcher's shapes, smallest first: one graph each.
func (b *Batcher) Shapes() []Shape { return slices.Clone(b.shapes) }

// Batch is the batch size.
func (b *Batcher) Batch() int { return b.batch }

// Epoch returns every pair once, in batches, in an order drawn from (seed,
// epoch): the pairs of each bucket are shuffled and cut into batches, and
// the batches of all buckets shuffled together. The same seed and epoch
// give the same plan.
func (b *Batcher) Epoch(seed uint64, epoch int) []Plan {
	rng := rand.New(rand.NewPCG(seed, uint64(epoch)))
	var plans []Plan
	for k, idx := range b.bucket {
		idx = slices.Clone(idx)
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		plans = append(plans, b.cut(k, idx)...)
	}
	rng.Shuffle(len(plans), func(i, j int) { plans[i], plans[j] = plans[j], plans[i] })
	return plans
}

// InOrder returns every pair once, in batches, bucket by bucket in the
// slice's order: for evaluation, where the order must not vary.
func (b *Batcher) InOrder() []Plan {
	var plans []Plan
	for k, idx := range b.bucket {
		plans = append(plans, b.cut(k, idx)...)
	}
	return plans
}

func (b *Batcher) cut(k int, idx []int) []Plan {
	var plans []Plan
	for start := 0; start < len(idx); start += b.batch {
		plans = append(plans, Plan{Bucket: k, Pairs: idx[start:min(start+b.batch, len(idx))]})
	}
	return plans
}

// NewBatch allocates a batch of the given bucket's shape, for Fill.
func (b *Batcher) NewBatch(bucket int) *Batch {
	s := b.shapes[bucket]
	n, m := b.batch*s.S, b.batch*s.T
	return &Batch{Shape: s, B: b.batch,
		Src: make([]int, n), DecIn: make([]int, m), DecTgt: make([]int, m),
		SrcPad: make([]bool, n), TgtPad: make([]bool, m),
	}
}

// Fill writes the plan's pairs into dst, which NewBatch made for the
// plan's bucket; rows past the plan's pairs become filler rows.
func (b *Batcher) Fill(p Plan, dst *Batch) {
	if dst.Shape != b.shapes[p.Bucket] || dst.B != b.batch || len(p.Pairs) > b.batch {
		panic(fmt.Sprintf("pairs: Fill of a %d-pair plan of bucket %d %v into a batch of %d × %v", len(p.Pairs), p.Bucket, b.shapes[p.Bucket], dst.B, dst.Shape))
	}
	clear(dst.Src)
	clear(dst.DecIn)
	clear(dst.DecTgt)
	dst.Rows, dst.Pairs, dst.Tokens = len(p.Pairs), append(dst.Pairs[:0], p.Pairs...), 0
	S, T := dst.S, dst.T
	for r := range dst.B {
		src, dec, tgt := dst.Src[r*S:(r+1)*S], dst.DecIn[r*T:(r+1)*T], dst.DecTgt[r*T:(r+1)*T]
		dec[0] = SOS
		if r >= len(p.Pairs) {
			src[0] = EOS // a filler row
		} else {
			pr := b.pairs[p.Pairs[r]]
			copy(src, pr.Src)
			src[len(pr.Src)] = EOS
			copy(dec[1:], pr.Tgt)
			copy(tgt, pr.Tgt)
			tgt[len(pr.Tgt)] = EOS
			dst.Tokens += len(pr.Tgt) + 1
		}
	}
	for i, id := range dst.Src {
		dst.SrcPad[i] = id == PAD
	}
	for i, id := range dst.DecIn {
		dst.TgtPad[i] = id == PAD
	}
}
