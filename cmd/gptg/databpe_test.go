package main

import (
	"strings"
	"testing"
)

// TestDataBPE learns the Bible corpus's merges as tokenizer = "bpe" would
// and compares the first ones with those of bpe/testdata/learnref.py (the
// independent reference) on the same training split: its first 2,078,547
// bytes, int(2,309,492 × 0.9) moved to the next tab after "God.".
func TestDataBPE(t *testing.T) {
	r := gptg(t, t.TempDir(), "data", "bpe", "builtin:bible-en-es", "--vocab-size", "300", "--show", "6")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("want a summary, a header and 6 merges, got:\n%s", r.stdout)
	}
	if want := "44 merges learned in "; !strings.HasPrefix(lines[0], want) ||
		!strings.Contains(lines[0], "on the training split of builtin:bible-en-es: 2078547 of its 2309492 bytes (split 0.9), 25736 distinct pieces") {
		t.Errorf("summary %q", lines[0])
	}
	want := [][]string{
		{"id", "left", "right", "token", "count"},
		{"256", "32", "116", `" t"`, "33626"},
		{"257", "104", "101", `"he"`, "26826"},
		{"258", "32", "97", `" a"`, "22383"},
		{"259", "32", "115", `" s"`, "21677"},
		{"260", "32", "100", `" d"`, "21316"},
		{"261", "101", "115", `"es"`, "20596"},
	}
	for i, w := range want {
		got := strings.Fields(lines[i+1])
		if len(got) == 6 && got[3] == `"` { // a token with a space: Fields cut it
			got = append(got[:3], append([]string{got[3] + " " + got[4]}, got[5:]...)...)
		}
		if strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("line %d: %q, want the fields %q", i+2, lines[i+1], w)
		}
	}
}
