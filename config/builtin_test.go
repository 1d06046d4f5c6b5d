package config

import (
	"slices"
	"testing"

	"github.com/gptg/gptg/corpus/builtin"
)

// TestBuiltinCorporaMatchEmbedded holds config's written-out list of
// built-in corpora to the files corpus/builtin embeds: a corpus added
// there and not here would be refused by every config naming it.
func TestBuiltinCorporaMatchEmbedded(t *testing.T) {
	if !slices.Equal(BuiltinCorpora, builtin.Names()) {
		t.Errorf("config.BuiltinCorpora = %q, corpus/builtin embeds %q", BuiltinCorpora, builtin.Names())
	}
	if BuiltinPrefix != builtin.Prefix {
		t.Errorf("config.BuiltinPrefix = %q, builtin.Prefix = %q", BuiltinPrefix, builtin.Prefix)
	}
	for _, p := range []string{"builtin:toy", "builtin:", "data/x.txt", "builtinx"} {
		n1, ok1 := parseBuiltin(p)
		n2, ok2 := builtin.Parse(p)
		if n1 != n2 || ok1 != ok2 {
			t.Errorf("parseBuiltin(%q) = %q, %v; builtin.Parse = %q, %v", p, n1, ok1, n2, ok2)
		}
	}
}
