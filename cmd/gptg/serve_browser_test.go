package main

// The browser test: gptg serve beside a gptg train, in a real headless
// Chromium driven by chromedp, doing what a person does on each page.
// What the browser saw goes to $GPTG_SCREENSHOTS (a temporary folder by
// default); the docs' pictures are docs/serve-shot.sh's, of the docs' runs.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/testwait"
)

// envChromium names the browser binary when it is not chromium on PATH.
const envChromium = "GPTG_CHROMIUM"

// chromium finds the browser: $GPTG_CHROMIUM, else Debian's chromium.
func chromium() (string, bool) {
	if p := os.Getenv(envChromium); p != "" {
		return p, true
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// browserPage drives one Chromium tab; every step is bounded, and a
// failing one reports what the page showed (and leaves failed.png).
type browserPage struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// needChromium finds the browser, or skips the test saying how to get it.
func needChromium(t *testing.T) string {
	t.Helper()
	browser, found := chromium()
	if !found {
		t.Skip("the browser test needs Chromium: no chromium on PATH and no " + envChromium + " (Debian: apt-get install chromium; .ci/run installs it)")
	}
	return browser
}

// newBrowser starts browser (needChromium's) for the test; screenshots go
// to $GPTG_SCREENSHOTS or a temporary folder. Each step, evaluation and
// wait is bounded by testwait.Hang, not the whole test: a busy machine
// stretches every step, and only one that never ends is a failure.
func newBrowser(t *testing.T, browser string) *browserPage {
	t.Helper()
	shots := os.Getenv("GPTG_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("no-sandbox", true), // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", browser, err)
	}
	return &browserPage{t: t, ctx: bctx, shots: shots}
}

// run runs actions on the page, for up to testwait.Hang.
func (b *browserPage) run(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, testwait.Hang)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// value runs an action that gives a value, for up to testwait.Hang.
func value[T any](b *browserPage, action chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, testwait.Hang)
	defer cancel()
	return chromedp.Run(ctx, action)
}

func (b *browserPage) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := b.run(actions...); err != nil {
		text, _ := value(b, chromedp.Evaluate[string](`document.body.innerText`))
		if png, err := value(b, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(filepath.Join(b.shots, "failed.png"), png, 0o644)
		}
		b.t.Fatalf("%s: %v; the page shows:\n%.3000s", what, err, text)
	}
}

// wait polls js until it is true (testwait.Hang at most).
func (b *browserPage) wait(what, js string) {
	b.t.Helper()
	b.step(what, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(testwait.Hang), chromedp.WithPollingInterval(100*time.Millisecond)))
}

func (b *browserPage) eval(js string) string {
	b.t.Helper()
	v, err := value(b, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}

func (b *browserPage) shot(name string) {
	b.t.Helper()
	png, err := value(b, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// hover moves the mouse to the point (x, y) that js, an expression,
// gives as "x,y".
func (b *browserPage) hover(what, js string) {
	b.t.Helper()
	var x, y float64
	if _, err := fmt.Sscanf(b.eval(js), "%g,%g", &x, &y); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	b.step(what, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
}

// tinyConfig writes a config training on testdata/tiny.txt.
func tinyConfig(t *testing.T, path, extra string) {
	t.Helper()
	text := fmt.Sprintf(`[data]
path = %q
url = ""
sha256 = ""
[sample]
prompt = "ROMEO:"
%s`, testmodel.TinyText(), extra)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestServeInBrowser(t *testing.T) {
	browser := needChromium(t)
	dir := t.TempDir()
	// An ablation of two configs over two seeds: the compare page.
	tinyConfig(t, filepath.Join(dir, "small.toml"), `[model]
context = 16
embedding = 16
blocks = 1
heads = 1
[train]
batch = 4
max_steps = 60
log_every = 5
eval_every = 20
eval_batches = 2
`)
	tinyConfig(t, filepath.Join(dir, "fast.toml"), `[model]
context = 16
embedding = 16
blocks = 1
heads = 1
[train]
batch = 4
lr = 0.01
max_steps = 60
log_every = 5
eval_every = 20
eval_batches = 2
`)
	ablation := exec.Command(gptgBin, "ablate", "small.toml", "fast.toml", "--seeds", "2", "--jobs", "2", "--out", "runs/ablation", "--base", "small.toml")
	ablation.Dir = dir
	ablateDone := make(chan error, 1)
	go func() {
		out, err := ablation.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		ablateDone <- err
	}()
	// A finished run to explore, and one that trains while the browser
	// watches it: the same model.
	const model = `[model]
context = 32
embedding = 32
blocks = 2
heads = 4
residual = true
norm = "pre"
`
	tinyConfig(t, filepath.Join(dir, "explore.toml"), model+`[train]
batch = 8
lr = 0.003
epochs = 100
max_steps = 200
log_every = 10
eval_every = 100
eval_batches = 4
out = "runs/explore"
`)
	ok(t, dir, "train", "explore.toml")
	tinyConfig(t, filepath.Join(dir, "live.toml"), model+`[train]
batch = 8
lr = 0.003
epochs = 10000
max_steps = 100000
log_every = 5
eval_every = 50
eval_batches = 2
checkpoint_every = 25
out = "runs/live"
`)
	training := exec.Command(gptgBin, "train", "live.toml")
	training.Dir = dir
	if err := training.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		training.Process.Signal(syscall.SIGINT)
		training.Wait()
	}()
	_, base, _ := startServe(t, dir, "--addr", "127.0.0.1:0", "--max-tokens", "100000")

	b := newBrowser(t, browser)
	if err := <-ablateDone; err != nil {
		t.Fatalf("gptg ablate: %v", err)
	}

	// The runs page: every run, the live one training; tick two to overlay.
	b.step("the runs page", chromedp.Navigate(base+"/"))
	b.wait("the runs table", `document.querySelectorAll("#runs-table tbody tr[data-id]").length === 6 &&
		document.querySelector('tr[data-id="runs/live"] .state')?.textContent === "training"`)
	// The table is redrawn every 2 s, so its nodes are clicked from the page
	// itself rather than looked up first and clicked after.
	b.eval(`document.querySelector('tr[data-id="runs/live"] input').click(); document.querySelector('tr[data-id="runs/explore"] input').click(); ""`)
	b.wait("the overlay", `+(document.querySelector("#overlay")?.dataset.points || 0) > 20`)
	// Its runs are named by their ids without the folders they share.
	if got := b.eval(`document.querySelector("#overlay .u-legend").textContent`); !strings.Contains(got, "live train") || !strings.Contains(got, "explore train") {
		t.Errorf("the overlay's legend: %q, want live and explore", got)
	}
	if got := b.eval(`JSON.stringify([shortLabels(["runs/tour/3-qkv/seed-1", "runs/tour/6-residual/seed-1"]), shortLabels(["runs/a", "runs/b/c"]), shortLabels(["runs/x"])])`); got != `[["3-qkv/seed-1","6-residual/seed-1"],["a","b/c"],["x"]]` {
		t.Errorf("shortLabels: %s", got)
	}
	if got := b.eval(`document.querySelector('tr[data-id="runs/ablation/fast/seed-1"] .differs').textContent`); got != "train.lr=0.01train.min_lr=0.001train.seed=1" {
		t.Errorf("the differs column of an ablation run: %q, want its lr and seed alone", got)
	}
	b.eval(`document.querySelector('th[data-key="test_loss"]').click(); ""`)
	if got := b.eval(`document.querySelector("th.sorted-asc").dataset.key`); got != "test_loss" {
		t.Errorf("after clicking the test loss header, sorted by %q", got)
	}
	b.shot("serve-runs.png")

	// A run training: its curve gains points as train appends rows.
	b.step("the live run's page", chromedp.Navigate(base+"/run?id=runs/live"))
	b.wait("its first points", `+(document.querySelector("#loss-chart")?.dataset.points || 0) > 0`)
	before := b.eval(`document.querySelector("#loss-chart").dataset.points`)
	b.wait("more points while it trains", `+document.querySelector("#loss-chart").dataset.points > `+before+` + 2`)

	// The finished run: playground and attention explorer.
	b.step("the explored run's page", chromedp.Navigate(base+"/run?id=runs/explore"))
	b.wait("its curve and summary", `+(document.querySelector("#loss-chart")?.dataset.points || 0) === 20 && document.querySelector("#summary")?.textContent.includes("tok.weight")`)
	// The page says when what it waited for is on screen (its stream's
	// first rows, the summary, the explorer's maps).
	b.wait("data-drawn", `document.documentElement.dataset.drawn === "true" && document.querySelectorAll("#att-grid .att-cell").length === 8`)
	b.eval(`document.querySelector("#gen-prompt").value = "ROMEO:"; document.querySelector("#gen-tokens").value = "120"; ""`)
	b.step("generating", chromedp.Click(chromedp.CSS("#gen-go")))
	b.wait("the streamed tokens", `document.querySelector("#gen-stats")?.textContent.includes("120 tokens in")`)
	if got := b.eval(`document.querySelector("#gen-output .gen").textContent`); len([]rune(got)) != 120 {
		t.Errorf("the playground shows %d characters, want the 120 tokens (a char model): %q", len([]rune(got)), got)
	}
	// Stop: a long generation, stopped after its first tokens.
	b.eval(`document.querySelector("#gen-tokens").value = "100000"; ""`)
	b.step("a long generation", chromedp.Click(chromedp.CSS("#gen-go")))
	b.wait("its first tokens", `(document.querySelector("#gen-output .gen")?.textContent.length || 0) > 20`)
	b.step("stop", chromedp.Click(chromedp.CSS("#gen-stop")))
	b.wait("stopped", `document.querySelector("#gen-stats")?.textContent.startsWith("stopped after")`)
	n := b.eval(`String(document.querySelector("#gen-output .gen").textContent.length)`)
	time.Sleep(300 * time.Millisecond)
	if again := b.eval(`String(document.querySelector("#gen-output .gen").textContent.length)`); again != n {
		t.Errorf("tokens kept coming after stop: %s then %s", n, again)
	}
	// Attention: a grid of 2 blocks × 4 heads over the text; hovering a
	// token redraws every head's row; clicking a head draws its map.
	b.eval(`document.querySelector("#att-text").value = "ROMEO: the king"; ""`)
	b.step("showing attention", chromedp.Click(chromedp.CSS("#att-go")))
	b.wait("the grid", `document.querySelectorAll("#att-grid .att-cell").length === 8 && document.querySelectorAll("#att-tokens .tok").length === 15`)
	strip := `document.querySelector('#att-grid .att-cell[data-block="1"][data-head="2"] canvas.strip').toDataURL()`
	before = b.eval(strip)
	b.hover("hovering token 3", `(() => { const r = document.querySelector('#att-tokens .tok[data-i="3"]').getBoundingClientRect(); return (r.left + r.width / 2) + "," + (r.top + r.height / 2); })()`)
	b.wait("the grid follows the hovered token", `document.querySelector("#att-grid").dataset.focus === "3"`)
	if b.eval(strip) == before {
		t.Error("hovering another token left the head's row unchanged")
	}
	b.step("clicking block 1, head 2", chromedp.Click(chromedp.CSS(`#att-grid .att-cell[data-block="1"][data-head="2"]`)))
	b.wait("the full map", `document.querySelector("#att-big-map") !== null`)
	chars := strings.Split("ROMEO: the king", "")
	if bad := b.eval(mapLabelsJS(chars, chars)); bad != "" {
		t.Errorf("the full map's labels: %s", bad)
	}
	b.shot("serve-run.png")
	if bad := b.eval(distinctTicksJS); bad != "" {
		t.Errorf("the learning rate axis's tick labels: %s", bad)
	}
	stillPage(t, b, browser, base, "runs/explore")

	// The comparison: the table of the ablation and its banded curves.
	b.step("the compare page", chromedp.Navigate(base+"/compare?id=runs/ablation"))
	b.wait("the table and the curves", `document.querySelectorAll("#compare-table tbody tr").length === 2 && +(document.querySelector("#compare-chart")?.dataset.points || 0) === 12`)
	if got := b.eval(`document.querySelector("#compare-table tbody").textContent`); !strings.Contains(got, "baseline") || !strings.Contains(got, "±") {
		t.Errorf("the compare table: %q, want a baseline and mean ± sd", got)
	}
	b.shot("serve-compare.png")
	t.Logf("screenshots in %s", b.shots)
}

// distinctTicksJS checks the lr axis's labels (the page's distinctTicks)
// on the ticks uPlot makes: 1, 2 or 5 × 10^k apart, from 10^-8 to 1, at
// several starts, and on ticks seen labelled alike (0.00095 and 0.001 were
// both "0.001"). Each label must differ from the others and read back
// nearer its own tick than any other; it gives "" or what failed.
const distinctTicksJS = `(() => {
  const cases = [[0.0009, 0.00095, 0.001, 0.00105], [0.00099, 0.001, 0.00101], [0, 0.0005, 0.001, 0.0015, 0.002], [0.1, 0.2, 0.30000000000000004], [null, 0.001, 0.002]];
  for (let e = -8; e <= 0; e++) for (const m of [1, 2, 5]) for (const start of [0, 1, 3, 19, 97, 1234]) {
    cases.push([0, 1, 2, 3, 4, 5].map((k) => (start + k) * m * 10 ** e));
  }
  const bad = [];
  for (const splits of cases) {
    const labels = distinctTicks(null, splits);
    const shown = labels.filter((l, i) => splits[i] != null);
    if (labels.length !== splits.length || new Set(shown).size !== shown.length) { bad.push(JSON.stringify(splits) + " → " + JSON.stringify(labels)); continue; }
    splits.forEach((v, i) => {
      if (v == null) return;
      const off = Math.abs(+labels[i] - v);
      if (splits.some((w, j) => j !== i && w != null && Math.abs(+labels[i] - w) <= off)) bad.push(v + " labelled " + labels[i]);
    });
  }
  return bad.slice(0, 5).join("; ");
})()`

// stillPage checks a run's page opened still (the docs' pictures): drawn
// from the rows there are, without a stream or what differs between two
// machines or two runs of the same commands (speeds, times, the run id),
// and saying so with data-drawn; and that Chromium's own
// --virtual-time-budget, which never ends beside a live page's open
// stream, ends on it with the run drawn.
func stillPage(t *testing.T, b *browserPage, browser, base, id string) {
	t.Helper()
	b.step("the still page", chromedp.Navigate(base+"/run?id="+id+"&still"))
	b.wait("the still page drawn", `document.documentElement.dataset.drawn === "true"`)
	for what, js := range map[string]string{
		"its points":                   `String(+(document.querySelector("#loss-chart").dataset.points || 0) > 0)`,
		"a speed in its info line":     `String(document.querySelector("#run-info").textContent.includes("tokens/s"))`,
		"its run id masked":            `String(/^# run id: … \(gptg train/m.test(document.querySelector("#config").textContent))`,
		"the model file from runs/":    `String(document.querySelector("#summary").textContent.startsWith("file: ` + id + `/model.safetensors"))`,
		"its config's path from there": `String(document.querySelector("#config").textContent.includes('# made from config: "` + path.Base(id) + `.toml"'))`,
	} {
		want := "true"
		if strings.HasPrefix(what, "a ") || strings.HasPrefix(what, "an ") {
			want = "false"
		}
		if got := b.eval(js); got != want {
			t.Errorf("the still page, %s: %s, want %s", what, got, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=10000", "--dump-dom", base+"/run?id="+id+"&still")
	dom, err := cmd.Output()
	if err != nil || !strings.Contains(string(dom), `data-drawn="true"`) || !strings.Contains(string(dom), "tok.weight") {
		t.Errorf("chromium --headless --virtual-time-budget --dump-dom on the still page: %v; want it drawn, got:\n%.1000s", err, dom)
	}
}
