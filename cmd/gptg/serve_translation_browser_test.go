package main

// The browser test of a translation run: gptg serve's pages of a tiny
// encoder–decoder trained by the test, in headless Chromium, checked
// against what gptg translate and gptg attention print.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/train"
)

// translationTables reads gptg attention --format text on a translation
// run: each table's title ("encoder block 0, head 1", "decoder block 0,
// head 1: self", "… : cross") and its rows of weights.
func translationTables(t *testing.T, out string) map[string][][]float64 {
	t.Helper()
	tables := map[string][][]float64{}
	for _, tab := range strings.Split(out, "\n\n") {
		lines := strings.Split(strings.TrimSpace(tab), "\n")
		if len(lines) < 3 || !strings.Contains(lines[0], "block ") {
			continue
		}
		title, _, _ := strings.Cut(lines[0], " (rows:")
		var rows [][]float64
		for _, line := range lines[2:] {
			f := strings.Fields(line)
			k := len(f)
			for k > 0 {
				if _, err := strconv.ParseFloat(f[k-1], 64); err != nil {
					break
				}
				k--
			}
			var row []float64
			for _, x := range f[k:] {
				v, _ := strconv.ParseFloat(x, 64)
				row = append(row, v)
			}
			rows = append(rows, row)
		}
		tables[title] = rows
	}
	if len(tables) == 0 {
		t.Fatalf("no table in gptg attention's output:\n%s", out)
	}
	return tables
}

// lastLine is a command's output's last line.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// TestServeTranslationInBrowser: gptg serve on two translation runs, a
// trained toy one and a slow one that extends its config, driven in
// Chromium: the runs table shows what the slow run's config changes from
// the config it extends; the playground translates greedily and by beam
// search (the words gptg translate prints), streams a greedy
// translation word by word and stops it; the attention explorer shows
// the encoder's and the decoder's self-attention and the cross-attention
// alignment, whose numbers (read from the page, as a person hovering the
// map reads them) are the ones gptg attention prints.
func TestServeTranslationInBrowser(t *testing.T) {
	b := newBrowser(t, needChromium(t))
	dir := t.TempDir()
	// Three-word sentences, each translated to its words reversed in
	// another language: a model of a few hundred steps learns it.
	files := map[string]string{
		"toy.tsv": toypairs.Counted(200),
		"toy.toml": `[data]
format = "pairs"
path = "toy.tsv"
max_source = 4
max_target = 4

[model]
arch = "encoder-decoder"
embedding = 16
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 32
dropout = 0

[train]
batch = 16
max_steps = 300
eval_every = 100
log_every = 10
out = "runs/toy"
`,
		// Wide and untrained: it writes words slowly enough to be seen
		// streaming, and to be stopped (its model file is then made to
		// write long translations, below).
		"slow.toml": `extends = "toy.toml"

[model]
embedding = 512
ff_hidden = 2048
decoder_blocks = 4
positions = "sinusoidal"

[train]
batch = 2
max_steps = 1
eval_batches = 1
out = "runs/slow"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ok(t, dir, "train", "toy.toml", "--quiet")
	ok(t, dir, "train", "slow.toml", "--quiet")
	neverEnding(t, filepath.Join(dir, "runs", "slow", "model.safetensors"), 300, 40)
	const text = "a1 a2 a0"
	greedy := lastLine(ok(t, dir, "translate", "runs/toy", "--text", text))
	beam := lastLine(ok(t, dir, "translate", "runs/toy", "--text", text, "--beam", "3"))
	slowWords := strings.Fields(lastLine(ok(t, dir, "translate", "runs/slow", "--text", text)))
	if len(slowWords) < 100 {
		t.Fatalf("the slow model translates %q in %d words; the test needs a long translation to stop", text, len(slowWords))
	}
	tables := translationTables(t, ok(t, dir, "attention", "runs/toy", "--text", text, "--format", "text"))
	// Three model runs at once: the slow run's page runs its explorer (a
	// 300-word translation) and its summary as the playground translates.
	// The slow model's translators, estimated at a copy of its weights per
	// compiled graph over 300 target positions, fill the default 2 GiB of
	// model memory when three run at once: the test is about streaming
	// and stopping, not that bound (serve's own tests check it).
	_, base, _ := startServe(t, dir, "--addr", "127.0.0.1:0", "--generations", "3", "--model-memory", "6")

	// The runs table: the slow run's differences from the config it extends.
	b.step("the runs page", chromedp.Navigate(base+"/"))
	b.wait("the runs table", `document.querySelectorAll("#runs-table tbody tr[data-id]").length === 2`)
	if got := b.eval(`document.querySelector('tr[data-id="runs/slow"] .differs .parent').textContent`); got != "from toy.toml: " {
		t.Errorf("the slow run's differs column names %q, want its parent toy.toml", got)
	}
	want := "model.embedding=512 model.decoder_blocks=4 model.ff_hidden=2048 model.positions=sinusoidal train.batch=2 train.max_steps=1 train.eval_batches=1"
	if got := b.eval(`[...document.querySelectorAll('tr[data-id="runs/slow"] .differs code')].map((c) => c.textContent).join(" ")`); !sameWords(got, want) {
		t.Errorf("the slow run's changes from toy.toml: %q, want %q", got, want)
	}
	if got := b.eval(`document.querySelector('tr[data-id="runs/toy"] .differs .parent') === null ? "none" : "a parent"`); got != "none" {
		t.Errorf("the toy run (no extends) shows %s", got)
	}

	// The toy run: its curve, the playground greedy and beam.
	b.step("the toy run's page", chromedp.Navigate(base+"/run?id=runs/toy"))
	b.wait("its curve", `+(document.querySelector("#loss-chart")?.dataset.points || 0) === 30`)
	// The playground and the explorer start from the sentence the run
	// recorded from its training pairs.
	cfgText, err := os.ReadFile(filepath.Join(dir, "runs", "toy", train.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	example := train.Example(cfgText)
	if got := b.eval(`document.querySelector("#gen-prompt").value + "|" + document.querySelector("#att-text").value`); example == "" || got != example+"|"+example {
		t.Errorf("the playground's and the explorer's first sentences: %q, want the run's example %q twice", got, example)
	}
	translate := func(beamWidth int) string {
		t.Helper()
		b.eval(fmt.Sprintf(`document.querySelector("#gen-prompt").value = %q; document.querySelector("#gen-beam").value = "%d"; ""`, text, beamWidth))
		b.step("translating", chromedp.Click(chromedp.CSS("#gen-go")))
		b.wait("the translation", `document.querySelector("#gen-stats")?.textContent.includes(" words in ") && !document.querySelector("#gen-go").disabled`)
		return b.eval(`document.querySelector("#gen-output .gen").textContent`)
	}
	if got := translate(1); got != greedy {
		t.Errorf("greedy: the page shows %q, gptg translate prints %q", got, greedy)
	}
	if got := translate(3); got != beam {
		t.Errorf("beam 3: the page shows %q, gptg translate --beam 3 prints %q", got, beam)
	}

	// The explorer's three views: every weight of one head's map, read
	// from the big map's hover text, against gptg attention's tables.
	// The explorer first runs on the run's example, which the model reads
	// (its cross-attention rows: the words it writes and <eos>); then on ours.
	b.wait("the explorer on the run's example", `document.querySelectorAll("#att-grid .att-cell").length === 2 && document.querySelectorAll("#att-tokens .tok").length > 0`)
	if got := b.eval(`String(document.querySelector("#att-tokens")?.parentElement.querySelector(".error")?.textContent || "")`); got != "" {
		t.Errorf("the explorer on the run's example: %s", got)
	}
	b.eval(fmt.Sprintf(`document.querySelector("#att-text").value = %q; ""`, text))
	b.step("showing attention", chromedp.Click(chromedp.CSS("#att-go")))
	// Each view's rows: the source words, <sos> and the translation, the
	// translation's words and <eos> (the position writing each).
	for _, v := range []struct{ view, title, rows, cols string }{
		{"encoder", "encoder block 0, head 1", text + " <eos>", text + " <eos>"},
		{"decoder", "decoder block 0, head 1: self", "<sos> " + greedy, "<sos> " + greedy},
		{"cross", "decoder block 0, head 1: cross", greedy + " <eos>", text + " <eos>"},
	} {
		printed := tables[v.title]
		if len(printed) == 0 {
			t.Fatalf("gptg attention printed no table %q (it printed %d)", v.title, len(tables))
		}
		b.eval(fmt.Sprintf(`(() => { const s = document.querySelector("#att-view"); s.value = %q; s.dispatchEvent(new Event("change")); return ""; })()`, v.view))
		b.wait(v.view+": the grid", fmt.Sprintf(`[...document.querySelectorAll("#att-tokens .tok")].map((t) => t.textContent).join(" ") === %q && document.querySelectorAll("#att-grid .att-cell").length === 2`, v.rows))
		if n := len(strings.Fields(v.rows)); n != len(printed) {
			t.Fatalf("%s: gptg attention printed %d rows, the page shows %d", v.title, len(printed), n)
		}
		b.step(v.view+": clicking head 1", chromedp.Click(chromedp.CSS(`#att-grid .att-cell[data-block="0"][data-head="1"]`)))
		b.wait(v.view+": the big map", `document.querySelector("#att-big-map") !== null`)
		if bad := b.eval(mapLabelsJS(strings.Fields(v.rows), strings.Fields(v.cols))); bad != "" {
			t.Errorf("%s: the big map's labels: %s", v.view, bad)
		}
		// The map's geometry: label margins as wide as the page says
		// (their labels checked above), then square cells of the size
		// the map's tokens give.
		geo := `(() => { const c = document.querySelector("#att-big-map"); c.scrollIntoView({ block: "center" });
			const r = c.getBoundingClientRect(), s = r.width / c.width, x0 = +c.dataset.x0, y0 = +c.dataset.y0,
			n = %d, k = %d, cell = Math.max(8, Math.min(24, Math.floor(560 / Math.max(n, k))));
			if (+c.dataset.cell !== cell) return "cells of " + c.dataset.cell + " pixels, want " + cell;
			return (r.left + (x0 + %d * cell + cell / 2) * s) + "," + (r.top + (y0 + %d * cell + cell / 2) * s); })()`
		for i, row := range printed {
			for j, want := range row {
				b.hover(fmt.Sprintf("%s (%d, %d)", v.view, i, j), fmt.Sprintf(geo, len(printed), len(row), j, i))
				title := b.eval(`document.querySelector("#att-big-map").title`)
				k := strings.LastIndex(title, ": ")
				got, err := strconv.ParseFloat(title[k+2:], 64)
				if k < 0 || err != nil || math.Abs(got-want) > 0.0005+0.00005 { // printed with 3 and 4 decimals
					t.Fatalf("%s (%d, %d): the page shows %q, gptg attention prints %.3f", v.title, i, j, title, want)
				}
			}
		}
		if v.view == "cross" {
			// Hovering a target word moves every head's framed row to it.
			b.hover("hovering the first target word", `(() => { const e = document.querySelector('#att-tokens .tok[data-i="0"]'); e.scrollIntoView({ block: "center" }); const r = e.getBoundingClientRect(); return (r.left + r.width / 2) + "," + (r.top + r.height / 2); })()`)
			b.wait("the grid follows the hovered word", `document.querySelector("#att-grid").dataset.focus === "0"`)
		}
	}
	b.shot("serve-translation.png")

	// The slow run: a greedy translation streams word by word; Stop ends it.
	b.step("the slow run's page", chromedp.Navigate(base+"/run?id=runs/slow"))
	b.wait("its playground", `document.querySelector("#gen-go")?.textContent === "Translate"`)
	b.eval(fmt.Sprintf(`document.querySelector("#gen-prompt").value = %q; document.querySelector("#gen-beam").value = "1"; ""`, text))
	b.step("translating", chromedp.Click(chromedp.CSS("#gen-go")))
	b.wait("its first words", `(document.querySelector("#gen-output .gen")?.textContent.split(" ").length || 0) >= 5 ||
		document.querySelector("#gen-output .error") !== null || !document.querySelector("#gen-stats").textContent.startsWith("generating")`)
	if done := b.eval(`document.querySelector("#gen-stats").textContent + (document.querySelector("#gen-output .error")?.textContent || "")`); strings.Contains(done, " words in ") || !strings.HasSuffix(done, " tokens") {
		t.Fatalf("the slow translation was not streaming when it was to be stopped: %q", done)
	}
	b.step("stop", chromedp.Click(chromedp.CSS("#gen-stop")))
	b.wait("stopped", `document.querySelector("#gen-stats")?.textContent.startsWith("stopped after")`)
	shown := b.eval(`document.querySelector("#gen-output .gen").textContent`)
	time.Sleep(300 * time.Millisecond)
	if again := b.eval(`document.querySelector("#gen-output .gen").textContent`); again != shown {
		t.Errorf("words kept coming after stop: %q then %q", shown, again)
	}
	words := strings.Fields(shown)
	if len(words) >= len(slowWords) || strings.Join(words, " ") != strings.Join(slowWords[:len(words)], " ") {
		t.Errorf("stopped after %d of %d words: the page shows %q, gptg translate's first words are %q", len(words), len(slowWords), shown, strings.Join(slowWords[:min(len(words), len(slowWords))], " "))
	}

	// A long sentence (the slow run's positions are sinusoidal: it reads
	// any length), once its explorer has shown the run's example: its 41
	// columns (40 words and <eos>) are 13 pixels apart, narrower than a
	// word; the words are written upward, none over another, and
	// hovering one names it.
	var long []string
	for i := range 40 {
		long = append(long, fmt.Sprintf("a%d", i%7))
	}
	b.wait("the slow run's explorer on its example", `document.querySelectorAll("#att-tokens .tok").length > 3`)
	b.eval(fmt.Sprintf(`document.querySelector("#att-text").value = %q; document.querySelector("#att-target").value = "b1 b2";
		(() => { const s = document.querySelector("#att-view"); s.value = "cross"; s.dispatchEvent(new Event("change")); return ""; })()`, strings.Join(long, " ")))
	b.step("attention of a long sentence", chromedp.Click(chromedp.CSS("#att-go")))
	b.wait("its grid", `document.querySelectorAll("#att-tokens .tok").length === 3 && document.querySelectorAll("#att-grid .att-cell").length === 8`)
	b.step("clicking head 0", chromedp.Click(chromedp.CSS(`#att-grid .att-cell[data-block="0"][data-head="0"]`)))
	b.wait("its big map", `document.querySelector("#att-big-map")?.dataset.cell === "13"`)
	if bad := b.eval(mapLabelsJS([]string{"b1", "b2", "<eos>"}, append(long, "<eos>"))); bad != "" {
		t.Errorf("a long sentence: the big map's labels: %s", bad)
	}
	if got := b.eval(`String(document.querySelector("#att-big-map").labels.upright)`); got != "false" {
		t.Errorf("a long sentence: the columns' words are upright (%s), and 13 pixels cannot hold them", got)
	}
	b.shot("serve-translation-long.png")
	b.hover("hovering column 39's word", `(() => { const c = document.querySelector("#att-big-map"); c.scrollIntoView({ block: "center" });
		const r = c.getBoundingClientRect(), s = r.width / c.width, l = c.labels.cols[39];
		return (r.left + (l.x + l.w / 2) * s) + "," + (r.top + (l.y + l.h / 2) * s); })()`)
	if got, want := b.eval(`document.querySelector("#att-big-map").title`), fmt.Sprintf(`column 39: %q`, long[39]); got != want {
		t.Errorf("hovering the long sentence's column 39's word: the title says %q, want %q", got, want)
	}
	// Words longer than a label may be (16 characters) are cut, with "…",
	// and the labels of 60 columns of 9 pixels stay apart (the page's own
	// layout function, given the words).
	labelWords := []string{"a", "incomprehensibilities", "of", "Constantinopolitan", "hello world"}
	var wide []string
	for i := range 60 {
		wide = append(wide, labelWords[i%len(labelWords)])
	}
	if bad := b.eval(mapLabelsLayoutJS(labelWords, wide, 9)); bad != "" {
		t.Errorf("labels of long words: %s", bad)
	}
	t.Logf("screenshots in %s", b.shots)
}

// labelChecksJS is a JavaScript function checking an attention map's
// labels L (the page's mapLabels answer: margins x0, y0 and each label's
// text and box) drawn in a canvas of width × height in a font of size
// pixels, for the words rows and cols: each label is its word as the
// page shows a token (· for a space), or its start cut with "…" when the
// word is wider than 116 pixels (a cut label no wider than that, and
// never cut short of it by more than a character); its box is as wide as
// its text (measured again here) and lies in its margin inside the
// canvas; no two boxes overlap. It returns the problems, "" if none.
const labelChecksJS = `(L, rows, cols, width, height, size) => {
	const bad = [], g = document.createElement("canvas").getContext("2d");
	g.font = size + "px monospace";
	const w = (s) => Math.ceil(g.measureText(s).width);
	const check = (boxes, words, what, upright) => {
		if (boxes.length !== words.length) { bad.push(boxes.length + " " + what + " labels for " + words.length + " words"); return; }
		boxes.forEach((b, i) => {
			const full = words[i].replace(/ /g, "·"), name = what + " " + i + " (" + JSON.stringify(b.text) + ")";
			if (w(full) <= 116 ? b.text !== full :
				!(b.text.endsWith("…") && full.startsWith(b.text.slice(0, -1)) && w(b.text) <= 116 && w(full.slice(0, b.text.length) + "…") > 116))
				bad.push(name + " for the word " + JSON.stringify(full));
			if ((upright ? b.w : b.h) !== w(b.text) || (upright ? b.h : b.w) !== size) bad.push(name + ": a box of " + b.w + " × " + b.h + " for text " + w(b.text) + " wide");
			if (b.x < 0 || b.y < 0 || b.x + b.w > width || b.y + b.h > height) bad.push(name + " outside the canvas");
			if (what === "row" ? b.x + b.w > L.x0 : b.y + b.h > L.y0) bad.push(name + " over the cells");
		});
	};
	check(L.rows, rows, "row", true);
	check(L.cols, cols, "column", L.upright);
	const all = [...L.rows, ...L.cols];
	for (let i = 0; i < all.length && bad.length < 10; i++) for (let j = i + 1; j < all.length; j++) {
		const a = all[i], b = all[j];
		if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) bad.push(JSON.stringify(a) + " overlaps " + JSON.stringify(b));
	}
	return bad.join("; ");
}`

// mapLabelsJS checks the labels of the big map on the page, for the
// words rows and cols (labelChecksJS), and that they were drawn where the
// page says: every pixel of the margins that is not white lies in a
// label's box (2 pixels around it allowed for the glyphs' edges), and
// every box has some.
func mapLabelsJS(rows, cols []string) string {
	r, _ := json.Marshal(rows)
	c, _ := json.Marshal(cols)
	return fmt.Sprintf(`(() => { const c = document.querySelector("#att-big-map"), L = c.labels;
		const bad = (%s)(L, %s, %s, c.width, c.height, Math.min(12, +c.dataset.cell));
		if (bad) return bad;
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data, boxes = [...L.rows, ...L.cols], inked = new Set();
		for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) {
			if ((x >= L.x0 && y >= L.y0) || d[4 * (y * c.width + x)] + d[4 * (y * c.width + x) + 1] + d[4 * (y * c.width + x) + 2] === 765) continue;
			const i = boxes.findIndex((b) => x >= b.x - 2 && x < b.x + b.w + 2 && y >= b.y - 2 && y < b.y + b.h + 2);
			if (i < 0) return "ink at (" + x + ", " + y + ") outside every label's box";
			inked.add(i);
		}
		const blank = boxes.filter((b, i) => !inked.has(i)).map((b) => JSON.stringify(b.text));
		return blank.length ? "labels with nothing drawn: " + blank.join(" ") : ""; })()`, labelChecksJS, r, c)
}

// mapLabelsLayoutJS checks the page's mapLabels on rows and cols of its
// own, in cells of cell pixels (labelChecksJS).
func mapLabelsLayoutJS(rows, cols []string, cell int) string {
	r, _ := json.Marshal(rows)
	c, _ := json.Marshal(cols)
	return fmt.Sprintf(`(() => { const rows = %s, cols = %s, cell = %d, size = Math.min(12, cell);
		const g = document.createElement("canvas").getContext("2d"); g.font = size + "px monospace";
		const L = mapLabels(g, rows, cols, cell);
		return (%s)(L, rows, cols, L.x0 + cols.length * cell, L.y0 + rows.length * cell, size); })()`, r, c, cell, labelChecksJS)
}

// sameWords: a and b hold the same space-separated words, in any order.
func sameWords(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x) != len(y) {
		return false
	}
	count := map[string]int{}
	for _, w := range x {
		count[w]++
	}
	for _, w := range y {
		if count[w]--; count[w] < 0 {
			return false
		}
	}
	return true
}

// neverEnding rewrites a translation model file so that its translations
// run to words words: the output layer's bias of EOS made -100 (the
// model never ends a sentence), and its longest translation (the
// max_target metadata; the model's positions are sinusoidal) made words;
// and so that it reads sentences of up to sources words (max_source).
func neverEnding(t *testing.T, path string, words, sources int) {
	t.Helper()
	f, err := modelfile.Read(path, modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f.Meta["max_target"] = strconv.Itoa(words)
	f.Meta["max_source"] = strconv.Itoa(sources)
	var tensors []modelfile.Tensor
	for _, x := range f.Tensors {
		if x.Name == "out.bias" {
			if x.F32 != nil {
				x.F32[pairs.EOS] = -100
			} else {
				x.F64[pairs.EOS] = -100
			}
		}
		tensors = append(tensors, x)
	}
	if err := modelfile.Write(path, tensors, f.Meta); err != nil {
		t.Fatal(err)
	}
}
