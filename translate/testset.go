package translate

import (
	"fmt"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/pairs"
)

// The test split of a translation run: its loss per target word (for the
// training loop and gptg eval) and its greedy translations (gptg eval).

// LossGraphs compiles, for each batch shape, a graph of batch rows that
// computes m's loss (without gradients) on m's own weights.
func LossGraphs(m *Model, batch int, shapes []pairs.Shape, be graph.Backend) ([]*tape.TranslationProgram, error) {
	var evals []*tape.TranslationProgram
	for _, s := range shapes {
		g, err := graph.BuildTranslation(m.Spec, graph.TranslationOptions{Batch: batch, SrcLen: s.S, TgtLen: s.T, Loss: true, Backend: be, Weights: m.Weights})
		if err != nil {
			return nil, err
		}
		p, err := tape.CompileTranslation(g, false)
		if err != nil {
			return nil, err
		}
		evals = append(evals, p)
	}
	return evals, nil
}

// Loss is the mean loss per non-PAD target over every batch of b, run on
// evals (one evaluation graph per shape of b).
func Loss(b *pairs.Batcher, evals []*tape.TranslationProgram) (float64, error) {
	return PlanLoss(b, evals, b.InOrder())
}

// PlanLoss is the mean loss per non-PAD target over the batches plans
// of b.
func PlanLoss(b *pairs.Batcher, evals []*tape.TranslationProgram, plans []pairs.Plan) (float64, error) {
	batches := make([]*pairs.Batch, len(evals))
	for k := range batches {
		batches[k] = b.NewBatch(k)
	}
	sum, n := 0.0, 0
	for _, plan := range plans {
		batch := batches[plan.Bucket]
		b.Fill(plan, batch)
		if err := evals[plan.Bucket].Run(batch.Src, batch.DecIn, batch.DecTgt); err != nil {
			return 0, err
		}
		sum += evals[plan.Bucket].Loss() * float64(batch.Tokens)
		n += batch.Tokens
	}
	if n == 0 {
		return 0, fmt.Errorf("the test split has no target words")
	}
	return sum / float64(n), nil
}

// GreedyTestSet translates every pair of test greedily, batch rows at a
// time in test's order, and gives each pair's index in test's pairs and
// its translation (the target words joined back, pairs.Detokenize) to
// each; progress, when set, is told before each batch how far it is.
func (tr *Translator) GreedyTestSet(test *pairs.Batcher, batch int, progress func(done, total int), each func(k int, hyp string)) error {
	plans := test.InOrder()
	batches := make(map[int]*pairs.Batch)
	for i, plan := range plans {
		if progress != nil {
			progress(i, len(plans))
		}
		if batches[plan.Bucket] == nil {
			batches[plan.Bucket] = test.NewBatch(plan.Bucket)
		}
		b := batches[plan.Bucket]
		test.Fill(plan, b)
		out, err := tr.GreedyBatch(batch, b.Src)
		if err != nil {
			return err
		}
		for r, k := range b.Pairs {
			each(k, pairs.Detokenize(tr.Tgt.Decode(out[r])))
		}
	}
	return nil
}
