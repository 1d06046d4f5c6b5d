package config

import "strings"

// BuiltinPrefix marks a corpus built into gptg in data.path:
// "builtin:tinyshakespeare".
const BuiltinPrefix = "builtin:"

// BuiltinCorpora names the corpora built into gptg (package corpus/builtin),
// sorted. The list is written out rather than asked of corpus/builtin so
// that config, and the graph packages that read a config, do not link the
// corpora's megabytes of embedded text; a test holds it equal to
// builtin.Names().
var BuiltinCorpora = []string{"bible-en-es", "tinyshakespeare", "toy"}

// parseBuiltin says whether a data.path names a built-in corpus, and which
// (the same rule as builtin.Parse).
func parseBuiltin(dataPath string) (name string, ok bool) {
	return strings.CutPrefix(dataPath, BuiltinPrefix)
}
