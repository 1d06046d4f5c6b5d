package config

import (
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/memlimit"
)

// TestChunkTailsCountUnderAddressSpace: under ulimit -v (an address-space
// limit) a training or forward-only estimate's untouched chunk tails (a GPT's or a
// translation's) count beside the
// estimate and the runtime's 64 MiB: a headroom with half the tails is
// refused, naming them, and one with room for all of them is accepted;
// under a cgroup (memory in use) the tails do not count.
func TestChunkTailsCountUnderAddressSpace(t *testing.T) {
	c := Default()
	c.Model.Vocab, c.Model.Context, c.Model.Embedding, c.Model.Blocks, c.Model.Heads, c.Train.Batch = 65, 128, 256, 4, 4, 16
	tr, err := Load("../configs/translate/en-es.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func() (memlimit.Headroom, bool)) { findHeadroom = f }(findHeadroom)
	for _, tc := range []struct {
		what string
		e    MemoryEstimate
	}{
		{"training", c.TrainMemoryOn(Corpus{Tokens: 1115394, IDBytes: 2})},
		{"sampling", c.Model.ForwardMemory(1, c.Model.Context, 1)},
		{"evaluating", c.Model.ForwardGraphs(64, c.Model.Context, 2, 1)},
		{"translation training", tr.TranslationTrainMemory(5193, 6912, []TranslationShape{{S: 25, T: 33}}, TranslationPairs{Pairs: 13064, IDs: 457100, TextBytes: 2097463})},
		{"translating (beam 4)", tr.Model.TranslationMemory(5193, 6912, 0, TranslationGraphs{SrcLen: 25, TgtLen: 33, Decoders: 1, DecodeRows: 4, EncodeRows: 1})},
		{"evaluating a translation", tr.Model.TranslationMemory(5193, 6912, 0, TranslationGraphs{SrcLen: 25, TgtLen: 33, Wholes: 2, WholeBatch: 32, Loss: true})},
	} {
		e := tc.e
		if e.Untouched <= 0 {
			t.Fatalf("%s: untouched %v: want the chunks' tails", tc.what, e.Untouched)
		}
		check := func(h memlimit.Headroom) error {
			findHeadroom = func() (memlimit.Headroom, bool) { return h, true }
			return CheckMemory(e, 1000, tc.what, "--set train.max_memory=")
		}
		need := e.Total() + 64<<20 + e.Untouched
		half := memlimit.Headroom{Bytes: need - e.Untouched/2, Limit: "ulimit -v 1 KiB", AddressSpace: true}
		if err := check(half); err == nil || !strings.Contains(err.Error(), FormatBytes(e.Untouched)+" of address space its graphs reserve unwritten") {
			t.Errorf("%s: headroom for the estimate and the runtime but half the tails: %v; want the refusal naming the tails", tc.what, err)
		}
		if err := check(memlimit.Headroom{Bytes: need, Limit: "ulimit -v 1 KiB", AddressSpace: true}); err != nil {
			t.Errorf("%s: headroom for the estimate, the runtime and the tails: %v", tc.what, err)
		}
		if err := check(memlimit.Headroom{Bytes: e.Total() + 16<<20, Limit: "the memory limit of cgroup /test"}); err != nil {
			t.Errorf("%s: a cgroup with room for the estimate and 16 MiB: %v (the tails take no memory)", tc.what, err)
		}
	}
}
