package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
)

// TestNanoGPTFlagsPoint: each of nanoGPT's flags is refused with gptg's
// name for it (exit 2), and every --set key it names is one gptg has.
func TestNanoGPTFlagsPoint(t *testing.T) {
	dir := t.TempDir()
	for name, ours := range nanoGPTNames {
		cmd := "train"
		if strings.HasPrefix(ours, "gptg sample") {
			cmd = "sample"
		}
		r := gptg(t, dir, cmd, "x", "--"+name+"=7")
		if r.code != 2 || !strings.Contains(r.stderr, "--"+name+" is nanoGPT's name: write ") {
			t.Errorf("gptg %s x --%s=7: exit %d, %q", cmd, name, r.code, r.stderr)
		}
		for _, m := range regexp.MustCompile(`--set (\w+\.\w+)=`).FindAllStringSubmatch(ours, -1) {
			_, err := config.Load("../../configs/shakespeare.toml", []string{m[1] + "=1"})
			if err != nil && strings.Contains(err.Error(), "unknown key") {
				t.Errorf("--%s points to %s, which gptg does not have: %v", name, m[1], err)
			}
		}
	}
	// gptg's own flags of the same name stay gptg's.
	if r := gptg(t, dir, "sample", "x", "--temperature=0.5"); strings.Contains(r.stderr, "nanoGPT") {
		t.Errorf("--temperature is sample's own flag: %q", r.stderr)
	}
}
