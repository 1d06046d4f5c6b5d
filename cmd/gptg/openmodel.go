package main

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/savedmodel"
)

// envMaxMemory names the environment variable that raises (or lowers) the
// memory, in GiB, that the graphs of a model file may take in sample,
// eval, attention and inspect; train and graph take train.max_memory from
// the config instead.
const envMaxMemory = "GPTG_MAX_MEMORY"

// graphsOf says which graphs a command builds from a model file: batch ×
// seqLen positions each, count of them (sampling an unmasked model builds
// one per prompt length, the prefix-only loss one per prefix length), of
// which pools hold activations of their own, and what else the command
// holds besides (bytes).
type graphsOf struct {
	batch, seqLen, count, pools int
	extra                       float64
	what                        string // "sampling", "evaluating", ...
	// corpus is the bytes a corpus the command reads after the model
	// will hold (eval's token ids, corpus.HeldBytes), corpusPath its
	// name: counted up front, so that a corpus too large is refused
	// before the model or the corpus is read.
	corpus     float64
	corpusPath string
	// bf16: the graphs compute a bfloat16-trained model's products in
	// bfloat16 as training did (eval, whose losses are then the ones
	// training reported). Without it they compute float32 products on the
	// model's float32 weights: sampling's are one row at a time, reading
	// each weight once, where bfloat16 gains nothing, and float32 is the
	// function of the weights themselves (the one bfloat16 approximates).
	bf16 bool
	// attentionLent: the graphs keep no attention weights (sampling reads
	// the logits alone), one block's at a time is alive.
	attentionLent bool
}

// samplerGraphs are the graphs a sampler builds for m, all of them on the
// file's own weights (savedmodel.SharedWeights): for a causal model the
// cached graph that generates one token at a time (its activations, a
// single position's, are left out; its key/value cache is counted) and
// one window graph of the whole context at most at a time (a prompt's
// prefill, the window past the context, the attention maps), else up to
// one window graph per length.
//
// Sampling alone (what "sampling") reads no attention weights: its window
// graphs lend them. Attention maps and serve read them.
func samplerGraphs(spec config.Model, what string) graphsOf {
	g := graphsOf{batch: 1, seqLen: spec.Context, count: 0, pools: 1, what: what, attentionLent: what == "sampling" && spec.Mask}
	if !spec.Mask {
		g.pools = spec.Context
		return g
	}
	elem := 4.0
	if spec.Dtype == "float64" {
		elem = 8
	}
	g.extra = elem * 2 * float64(spec.Blocks) * float64(spec.Context) * float64(spec.Embedding)
	return g
}

// openModel loads a model file and, before any tensor is read, refuses
// one whose tensors do not add up to the model its metadata describes (a
// 25 KB file must not make gptg build a 6 GB graph), or whose graphs
// would need more memory than the limit or than the process may still
// take. graphs says what the caller will build, from the spec.
func openModel(path string, graphs func(spec config.Model) graphsOf) (*savedmodel.Model, error) {
	if err := refuseTranslation(path, graphs(config.DefaultModel()).what); err != nil {
		return nil, err
	}
	limit := float64(config.DefaultMaxMemory)
	if s := os.Getenv(envMaxMemory); s != "" {
		var err error
		if limit, err = strconv.ParseFloat(s, 64); err != nil || !(limit > 0) {
			return nil, usagef("%s=%q is not a number of GiB", envMaxMemory, s)
		}
	}
	m, err := savedmodel.LoadChecked(path, func(spec config.Model, dataBytes int64) error {
		return checkModelMemory(path, spec, dataBytes, graphs(spec), limit)
	})
	if err == nil && m.Spec.Dtype == config.DtypeBF16 && !graphs(m.Spec).bf16 {
		m.Spec.Dtype = "float32"
	}
	return m, err
}

// checkModelMemory is openModel's check of a model file's header: the
// model its metadata describes against the tensor data the file holds,
// then the memory the command's graphs need against limitGiB and the
// process's headroom.
func checkModelMemory(path string, spec config.Model, dataBytes int64, g graphsOf, limitGiB float64) error {
	elem := int64(4)
	if spec.Dtype == "float64" {
		elem = 8
	}
	// A small mismatch is left to Apply, which names the missing or extra
	// tensor; a model far larger than its file is refused here, unbuilt.
	if want, held := spec.ParamCount(), dataBytes/elem; want > 2*held+1<<16 {
		return fmt.Errorf("%s: the metadata describes a model of %d parameters, but the file's tensors hold %d values", path, want, held)
	}
	e := spec.ForwardGraphs(g.batch, g.seqLen, g.count, g.pools)
	// The file's tensors are counted in the model's dtype; a file may hold
	// them wider (float64 for a float32 model).
	e.Weights += max(0, float64(dataBytes)-float64(spec.ParamCount()*elem))
	e.Activations += g.extra
	if g.attentionLent {
		rows := float64(g.batch) * float64(g.seqLen)
		e.Activations -= float64(g.pools) * spec.KeptAttention(rows, float64(g.seqLen))
	}
	what := fmt.Sprintf("%s: %s this model", path, g.what)
	if g.corpus < 1<<20 { // a corpus this small is not worth naming
		e.Activations += g.corpus
		return config.CheckMemory(e, limitGiB, what, envMaxMemory+"=")
	}
	rest := e.Weights + e.Activations
	e.Activations += g.corpus
	what += fmt.Sprintf(" on %s (its token ids take %s)", quote.Name(g.corpusPath), config.FormatBytes(g.corpus))
	err := config.CheckMemory(e, limitGiB, what, envMaxMemory+"=")
	if err == nil || g.corpus < rest {
		return err
	}
	// The corpus, more than the model, is what does not fit.
	return refusedError{errors.New(strings.Replace(err.Error(), "make the model smaller", "evaluate on a part of the corpus (--data FILE)", 1))}
}

// notFinite is the error for a model whose forward pass gave NaN or an
// infinity (what names the numbers: "test loss", "logits"): it says so,
// and names the largest weight, the usual cause (a corrupt file, or a
// training that diverged), instead of printing NaN with exit 0.
func notFinite(m *savedmodel.Model, what string) error {
	return notFiniteIn(m.Path, m.Tensors, what)
}

// notFiniteIn is notFinite for the tensors of any model file (a
// translation model's too).
func notFiniteIn(path string, tensors map[string]modelfile.Tensor, what string) error {
	name, largest := "", 0.0
	for _, n := range slices.Sorted(maps.Keys(tensors)) {
		t := tensors[n]
		for _, v := range t.F32 {
			if a := math.Abs(float64(v)); a > largest {
				name, largest = n, a
			}
		}
		for _, v := range t.F64 {
			if a := math.Abs(v); a > largest {
				name, largest = n, a
			}
		}
	}
	return fmt.Errorf("%s: the model's %s came out NaN or infinite; its largest weight is %g, in %s: the file is corrupt or its training diverged",
		quote.Name(path), what, largest, name)
}
