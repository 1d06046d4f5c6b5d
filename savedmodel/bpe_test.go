package savedmodel

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/modelfile"
)

// TestBPEMerges saves a learned BPE's model and reads its merges back, and
// refuses metadata that does not make a learned BPE.
func TestBPEMerges(t *testing.T) {
	merges := [][2]int{{32, 116}, {104, 101}, {256, 257}}
	vocab, err := corpus.NewLearnedVocab(merges)
	if err != nil {
		t.Fatal(err)
	}
	spec := config.DefaultModel()
	spec.Vocab = vocab.Size()
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Save(path, spec, vocab, nil); err != nil {
		t.Fatal(err)
	}
	m, err := LoadMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Meta["merges"] != "[[32,116],[104,101],[256,257]]" || m.Meta["vocab"] != "" {
		t.Errorf("metadata merges %q, vocab %q", m.Meta["merges"], m.Meta["vocab"])
	}
	if m.Vocab.Kind() != corpus.BPE || !slices.Equal(m.Vocab.Merges(), merges) {
		t.Fatalf("read back %s %v", m.Vocab.Kind(), m.Vocab.Merges())
	}
	if ids, _ := m.Vocab.Encode(" the"); !slices.Equal(ids, []int{258}) {
		t.Errorf(`" the" encodes to %v, want [258]`, ids)
	}

	model := `{"vocab":259,"context":32,"embedding":64,"blocks":2,"heads":1}`
	for _, tc := range []struct {
		meta map[string]string
		want string
	}{
		{map[string]string{"tokenizer": "bpe", "merges": "[[32,116,1]]"}, `metadata "merges": merge 0 has 3 ids, not 2`},
		{map[string]string{"tokenizer": "bpe", "merges": "[[32]]"}, `metadata "merges": merge 0 has 1 ids, not 2`},
		{map[string]string{"tokenizer": "bpe", "merges": "[[32,1.5]]"}, `metadata "merges" is not a JSON array of [left, right] id pairs`},
		{map[string]string{"tokenizer": "bpe"}, `metadata "merges" is not a JSON array of [left, right] id pairs: missing`},
		{map[string]string{"tokenizer": "bpe", "merges": "[[32,300]]"}, `metadata "merges": merge 0 (32, 300) names an id not made before it`},
		{map[string]string{"tokenizer": "bpe", "merges": "[[32,116]]", "vocab": "[]"}, `metadata "vocab" is given for tokenizer "bpe"`},
		{map[string]string{"tokenizer": "char", "merges": "[[32,116]]", "vocab": `["a"]`}, `metadata "merges" is given for tokenizer "char"`},
		{map[string]string{"tokenizer": "bpe", "merges": "[[32,116],[104,101],[256,257],[97,98]]"}, "metadata model.vocab is 259 but the vocabulary has 260 tokens"},
	} {
		tc.meta["format"], tc.meta["model"] = Format, model
		p := filepath.Join(t.TempDir(), "bad.safetensors")
		if err := modelfile.Write(p, nil, tc.meta); err != nil {
			t.Fatal(err)
		}
		_, err := LoadMeta(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.meta, err, tc.want)
		}
	}
}
