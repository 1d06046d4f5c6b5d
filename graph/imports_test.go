package graph_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsRunOneWay holds the packages of the graph to the direction
// their package comments promise: graph (the specification) → graph/fused
// (the kernels); graph/tape (the runtime) → both; none of them reaches the
// corpus or the model file, which sit above them. "corpus/..." forbids
// corpus and every package below it, as in the go command: corpus/builtin's
// embedded text once reached the graph through a config check.
func TestImportsRunOneWay(t *testing.T) {
	const mod = "github.com/gptg/gptg/"
	forbidden := map[string][]string{
		"graph":       {"graph/tape", "corpus/...", "savedmodel", "modelfile"},
		"graph/fused": {"graph", "graph/tape", "config", "corpus/...", "savedmodel", "modelfile"},
		"graph/tape":  {"corpus/...", "savedmodel", "modelfile"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", mod+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, mod+pkg) {
			t.Fatalf("go list -deps %s does not list the package itself: %q", pkg, deps)
		}
		for _, d := range deps {
			for _, b := range bad {
				if matches(mod+b, d) {
					t.Errorf("%s depends on %s", pkg, strings.TrimPrefix(d, mod))
				}
			}
		}
	}
}

// matches reports whether the import path matches the pattern: equal, or
// for "p/..." p itself or a package below it.
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}
