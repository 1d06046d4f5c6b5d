package tape

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
)

// TranslationProgram is a built encoder–decoder graph compiled for a
// TapeMachine, as Program is for the GPT: one run computes the forward
// pass and, with the loss, every parameter's gradient.
type TranslationProgram struct {
	*graph.Translation
	Grads []*G.Node // Grads[i] is ∂loss/∂Params[i]; empty without a loss

	vm                  G.VM
	inPlace             func() error
	src, decIn, targets *tensor.Dense
	srcMask             *tensor.Dense
	srcMask64           []float64     // filled per run, then copied into the graph's dtype
	memory              *tensor.Dense // a decoder graph's memory input
}

// CompileTranslation compiles m once; withGrads adds the symbolic
// gradients of the loss.
func CompileTranslation(m *graph.Translation, withGrads bool) (*TranslationProgram, error) {
	if withGrads && m.Loss == nil {
		return nil, fmt.Errorf("compile: gradients need a graph built with the loss")
	}
	p := &TranslationProgram{Translation: m}
	if withGrads {
		var err error
		if p.Grads, err = gradients(m.Loss, m.Params); err != nil {
			return nil, err
		}
	}
	B, S, T := m.Batch, m.SrcLen, m.TgtLen
	p.src = tensor.New(tensor.Of(tensor.Int), tensor.WithShape(B*S))
	p.decIn = tensor.New(tensor.Of(tensor.Int), tensor.WithShape(B*T))
	p.memory = tensor.New(tensor.Of(m.Memory.Dtype()), tensor.WithShape(m.Memory.Shape()...))
	p.srcMask = tensor.New(tensor.Of(m.Memory.Dtype()), tensor.WithShape(B, S))
	p.srcMask64 = make([]float64, B*S)
	if m.Loss != nil {
		p.targets = tensor.New(tensor.Of(tensor.Int), tensor.WithShape(B*T))
	}
	// What is read after a run keeps its buffer; the rest is lent.
	keep := append([]*G.Node{m.Memory}, p.Grads...)
	if m.Logits != nil {
		keep = append(keep, m.Logits)
	}
	if m.Loss != nil {
		keep = append(keep, m.Loss)
	}
	keep = append(append(append(keep, m.CrossAttention...), m.EncoderAttention...), m.DecoderAttention...)
	keep = append(append(keep, m.CrossKeys...), m.CrossValues...)
	fused.PlanMemory(m.G, keep)
	p.vm, p.inPlace = newMachine(m.G, m.Fused)
	return p, nil
}

// SetMemory gives a decoder graph (Part "decoder") the encoder's output
// for its B rows, rows (B·S, C) row-major, as float64s.
func (p *TranslationProgram) SetMemory(memory []float64) error {
	if p.Translation.Src != nil {
		return fmt.Errorf("run: the graph has an encoder of its own")
	}
	if len(memory) != p.memory.Shape().TotalSize() {
		return fmt.Errorf("run: memory of %d values for a graph of %d", len(memory), p.memory.Shape().TotalSize())
	}
	return feedFloats(p.memory, p.Translation.Memory, memory)
}

// Run feeds one batch — B·S source ids, B·T decoder inputs and, with a
// loss, B·T targets (PAD where a sentence has ended) — and runs the graph.
// A batch with no non-PAD target is refused: its mean would be 0/0. An
// encoder graph takes no decIn; a decoder graph reads src only for its
// padding mask (SetMemory gives it the encoder's output).
func (p *TranslationProgram) Run(src, decIn, decTgt []int) error {
	m := p.Translation
	if m.Src != nil {
		if err := feedIDs(p.src, m.Src, src, m.Spec.SrcVocab, "source"); err != nil {
			return err
		}
	} else if len(src) != len(p.srcMask64) {
		return fmt.Errorf("run: %d source ids for a graph of %d", len(src), len(p.srcMask64))
	}
	if m.DecIn != nil {
		if err := feedIDs(p.decIn, m.DecIn, decIn, m.Spec.TgtVocab, "decoder input"); err != nil {
			return err
		}
	}
	for i, id := range src {
		p.srcMask64[i] = 0
		if id == graph.PAD {
			p.srcMask64[i] = graph.MaskValue
		}
	}
	if err := feedFloats(p.srcMask, m.SrcMask, p.srcMask64); err != nil {
		return err
	}
	if m.Loss != nil {
		V, B, T := m.Spec.TgtVocab, m.Batch, m.TgtLen
		if len(decTgt) != B*T {
			return fmt.Errorf("run: %d targets for a graph of %d", len(decTgt), B*T)
		}
		n := 0
		for _, id := range decTgt {
			if id < 0 || id >= V {
				return fmt.Errorf("run: target id %d outside the vocabulary of %d", id, V)
			}
			if id != graph.PAD {
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("run: every target of the batch is PAD")
		}
		copy(p.targets.Data().([]int), decTgt)
		if err := G.Let(m.Targets, p.targets); err != nil {
			return fmt.Errorf("run: feeding targets: %w", err)
		}
	}
	p.vm.Reset() // without it RunAll silently runs nothing the second time
	run := p.vm.RunAll
	if p.inPlace != nil {
		run = p.inPlace
	}
	if err := run(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// Loss is the last run's loss.
func (p *TranslationProgram) Loss() float64 { return scalarOf(p.Translation.Loss.Value()) }

// Close releases the machine.
func (p *TranslationProgram) Close() error { return p.vm.Close() }

// feedIDs checks ids against the vocabulary and lets node read them.
func feedIDs(dst *tensor.Dense, node *G.Node, ids []int, vocab int, what string) error {
	d := dst.Data().([]int)
	if len(ids) != len(d) {
		return fmt.Errorf("run: %d %s ids for a graph of %d", len(ids), what, len(d))
	}
	for _, id := range ids {
		if id < 0 || id >= vocab {
			return fmt.Errorf("run: %s id %d outside the vocabulary of %d", what, id, vocab)
		}
	}
	copy(d, ids)
	if err := G.Let(node, dst); err != nil {
		return fmt.Errorf("run: feeding %s: %w", what, err)
	}
	return nil
}

// feedFloats copies values into dst (float32 or float64) and lets node read it.
func feedFloats(dst *tensor.Dense, node *G.Node, values []float64) error {
	switch d := dst.Data().(type) {
	case []float64:
		copy(d, values)
	case []float32:
		for i, v := range values {
			d[i] = float32(v)
		}
	}
	if err := G.Let(node, dst); err != nil {
		return fmt.Errorf("run: feeding %s: %w", node.Name(), err)
	}
	return nil
}
