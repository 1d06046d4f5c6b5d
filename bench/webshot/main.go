// Command webshot takes a screenshot of one element of a page in headless
// Chromium once the page says it is ready, for the docs' pictures of gptg
// serve (docs/serve-shot.sh runs it against a server it starts).
//
//	go run ./bench/webshot -url URL [-click CSS]... -element CSS -out FILE.png
//
// It waits for the JavaScript expression -ready to be true (or for an
// element of class "error", which fails it) rather than for a time: a
// page of gptg serve says it is drawn with <html data-drawn="true"> once
// every answer it waited for is on screen (the default -ready), while a
// live metrics stream keeps the network busy, so "the network is idle"
// never comes, and a picture taken at a fixed time would show whatever
// had loaded by then. Each -click then clicks an element, in order, and
// waits for -ready again (a generation, a head's map, a run ticked in the
// table). Chromium is $GPTG_CHROMIUM or chromium on the PATH (Debian's
// package).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// clicks is the repeatable -click flag.
type clicks []string

func (c *clicks) String() string       { return strings.Join(*c, " ") }
func (c *clicks) Set(sel string) error { *c = append(*c, sel); return nil }

func main() {
	url := flag.String("url", "", "the page")
	ready := flag.String("ready", `document.documentElement.dataset.drawn === "true"`, "a JavaScript expression that is true once the page is drawn")
	var click clicks
	flag.Var(&click, "click", "a CSS selector: an element to click once the page is drawn, then wait until it is drawn again (repeatable, in order)")
	element := flag.String("element", "body", "a CSS selector: the element to picture")
	out := flag.String("out", "", "the PNG file to write")
	width := flag.Int("width", 1280, "the window's width in pixels")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long the page may take")
	flag.Parse()
	if *url == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: webshot -url URL -out FILE.png [-ready JS] [-click CSS]... [-element CSS] [-width PX]")
		os.Exit(2)
	}
	if err := shoot(*url, *ready, click, *element, *out, *width, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "webshot:", err)
		os.Exit(1)
	}
}

func shoot(url, ready string, click []string, element, out string, width int, timeout time.Duration) error {
	browser := os.Getenv("GPTG_CHROMIUM")
	if browser == "" {
		var err error
		if browser, err = exec.LookPath("chromium"); err != nil {
			return fmt.Errorf("no chromium on the PATH and no GPTG_CHROMIUM (Debian: apt-get install chromium)")
		}
	}
	profile, err := os.MkdirTemp("", "webshot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.UserDataDir(profile),
		chromedp.Flag("no-sandbox", true), // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(width, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, timeout)
	defer cancel()
	wait := chromedp.Poll[chromedp.Void]("("+ready+") || !!document.querySelector('.error')", chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(100*time.Millisecond))
	if err := chromedp.Do(ctx, chromedp.Navigate(url), wait); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		return fmt.Errorf("%s: waiting for %s: %v; the page shows:\n%.2000s", url, ready, err, text)
	}
	for _, sel := range click {
		// The click's handler takes data-drawn away at once (it starts the
		// work the page then waits for), so the wait after it is for the
		// click's result, not the state before it.
		js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel)
		found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && !found {
			err = fmt.Errorf("no element matches")
		}
		if err == nil {
			err = chromedp.Do(ctx, wait)
		}
		if err != nil {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			return fmt.Errorf("%s: clicking %s: %v; the page shows:\n%.2000s", url, sel, err, text)
		}
	}
	// The pages show a failed request as an element of class "error".
	if msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(".error") || {}).textContent || ""`)); msg != "" {
		return fmt.Errorf("%s: the page shows an error: %s", url, msg)
	}
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(element)))
	if err != nil {
		return fmt.Errorf("%s: the screenshot of %s: %v", url, element, err)
	}
	return os.WriteFile(out, png, 0o644)
}
