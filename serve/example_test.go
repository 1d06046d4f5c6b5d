package serve

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/train"
)

// TestExampleSentence: a translation run's page starts from the sentence
// the run recorded from its own training pairs, which the playground
// translates and the explorer shows at once; a run from before the record
// starts from a verse when it trained on the built-in Bible corpus, and
// from nothing otherwise (not a sentence the model cannot read).
func TestExampleSentence(t *testing.T) {
	dir := t.TempDir()
	runs := trainTranslationRun(t, dir)
	text, err := os.ReadFile(filepath.Join(runs, "tr", train.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	recorded := train.Example(text)
	if recorded == "" {
		t.Fatalf("the run recorded no example sentence; config.toml:\n%s", text)
	}
	// Older runs: config.toml without the line, on the toy corpus and on
	// the built-in Bible.
	line := regexp.MustCompile(`(?m)^# example sentence: .*\n`)
	older := line.ReplaceAllString(string(text), "")
	bible := regexp.MustCompile(`(?m)^path = .*$`).ReplaceAllString(older, `path = "builtin:bible-en-es"`)
	for name, cfg := range map[string]string{"old": older, "bible": bible} {
		if err := os.MkdirAll(filepath.Join(runs, name), 0o755); err != nil {
			t.Fatal(err)
		}
		model, _ := os.ReadFile(filepath.Join(runs, "tr", train.ModelFile))
		for file, data := range map[string]string{train.ConfigFile: cfg, train.ModelFile: string(model)} {
			if err := os.WriteFile(filepath.Join(runs, name, file), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := newServer(t, Options{Dirs: []string{runs}})
	for id, want := range map[string]string{"runs/tr": recorded, "runs/old": "", "runs/bible": bibleVerse} {
		w := get(t, s, "/api/run?id="+url.QueryEscape(id))
		if p := decode[runPage](t, w); w.Code != 200 || p.Example != want {
			t.Errorf("%s: /api/run answers %d with example %q, want %q", id, w.Code, p.Example, want)
		}
	}
	// The recorded sentence translates and shows its attention.
	body, _ := json.Marshal(genRequest{ID: "runs/tr", Prompt: recorded, Tokens: 1})
	if w := post(s, "/api/generate", string(body)); w.Code != 200 || !strings.Contains(w.Body.String(), "event: done") {
		t.Errorf("translating the example %q: %d %.300s", recorded, w.Code, w.Body.String())
	}
	if w := get(t, s, "/api/attention?id=runs/tr&text="+url.QueryEscape(recorded)); w.Code != 200 {
		t.Errorf("the example's attention: %d %.300s", w.Code, w.Body.String())
	}
	if got := exampleSentence(&config.Config{}, older); got != "" {
		t.Errorf("an older language-model run's example: %q, want none (the page's own default)", got)
	}
}

// TestLanguageModelExample: a language model's page explores the start of
// its own training text, which the model can read whatever its alphabet.
func TestLanguageModelExample(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "causal"))
	text, err := os.ReadFile(filepath.Join(runs, "causal", train.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	recorded := train.Example(text)
	if recorded == "" {
		t.Fatalf("the run recorded no example; config.toml:\n%s", text)
	}
	s := newServer(t, Options{Dirs: []string{runs}})
	w := get(t, s, "/api/run?id=runs/causal")
	if p := decode[runPage](t, w); w.Code != 200 || p.Example != recorded {
		t.Errorf("/api/run answers %d with example %q, want %q", w.Code, p.Example, recorded)
	}
	if w := get(t, s, "/api/attention?id=runs/causal&text="+url.QueryEscape(recorded)); w.Code != 200 {
		t.Errorf("the example's attention: %d %.300s", w.Code, w.Body.String())
	}
}
