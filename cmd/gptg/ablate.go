package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gptg/gptg/ablate"
	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/train"
)

var ablateCommand = command{
	summary: "train several configs side by side, over seeds; one comparison table and plot",
	usage: `Usage: gptg ablate CONFIG... [--seeds N|LIST] [--baseline NAME] [--jobs N] [--out DIR] [--force] [--set section.key=value]...

Trains every CONFIG (each in DIR/<config name>, or DIR/<config name>/seed-<S>
with --seeds; up to N at once, each its own gptg process), then writes into DIR:
  summary.md, summary.csv  one row per config: what differs from --base,
                           parameters, steps, tokens/s, train loss, and over
                           the seeds the mean ± sd of the test loss and of
                           the prefix-only test loss, the paired difference
                           to the baseline with its 95 % interval (Student t
                           over seed pairs; "includes 0" when the seeds cannot
                           tell them apart), and 80 tokens sampled from
                           the config's [sample] prompt with seed 42 (the
                           first seed's model); for an encoder–decoder, the
                           greedy translation of a fixed verse instead, and
                           its test loss in the prefix-only column
  runs.csv                 every run's own figures
  loss.png                 each config's mean training loss with a ±1 sd
                           band, mean test losses as points
A run that fails is listed with its error; the others still finish. A run
folder that already holds the finished run of the same config is reused
(an interrupted one is resumed) unless --force, so running the same
command on a finished folder only rebuilds the table and the plot.

Flags:
  --seeds N|LIST           train each config with seeds 1..N, or the listed
                           seeds (--seeds 1,2,42); default: the config's own
  --baseline NAME          the config (file name without .toml) the others
                           are compared with (default: the first)
  --jobs N                 runs at once (default 1; each uses about one core)
  --out DIR                output folder (default runs/ablate-<date-time>)
  --force                  retrain runs that are already finished
  --set section.key=value  override applied to every config (repeatable),
                           e.g. --set train.epochs=0.05 for a quick look
  --base CONFIG            config the "differs" column compares against
                           (default the baseline's, so that "differs" names
                           what Δ measures)
`,
	run: runAblate,
}

func runAblate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ablate", flag.ContinueOnError)
	var sets setFlags
	fs.Var(&sets, "set", "")
	jobs := fs.Int("jobs", 1, "")
	out := fs.String("out", "", "")
	force := fs.Bool("force", false, "")
	base := fs.String("base", "", "")
	seedsFlag := fs.String("seeds", "", "")
	baseline := fs.String("baseline", "", "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usagef("ablate needs at least one CONFIG file")
	case *jobs < 1 || *jobs > 64:
		return usagef("--jobs %d must be between 1 and 64", *jobs)
	}
	for _, s := range sets {
		if key, _, _ := strings.Cut(s, "="); strings.TrimSpace(key) == "train.out" {
			return usagef("--set %s: ablate gives every run its own folder under --out; train.out cannot be set", quote.Value(s))
		}
	}
	seeds, err := ablate.ParseSeeds(*seedsFlag)
	if err != nil {
		return usagef("--seeds: %v", err)
	}
	for _, p := range pos {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return usagef("config %s: no such file", p)
		}
		if err := checkRereadable(p); err != nil {
			return err
		}
	}
	if *out == "" {
		*out = filepath.Join("runs", "ablate-"+time.Now().Format("20060102-150405"))
	}
	if err := checkOutputFolder("--out", *out, "ablate writes a folder of run folders and summaries", false); err != nil {
		return err
	}
	specs, err := ablate.Plan(pos, seeds, *out)
	if err != nil {
		return usagef("%v", err)
	}
	if *base, err = checkAblation(pos, sets, specs, *force, *base, *baseline); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the gptg binary: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	fmt.Fprintf(stdout, "ablation of %d configs (%d runs) into %s, %d at a time\n", len(pos), len(specs), *out, *jobs)
	results, err := ablate.Run(ctx, specs, ablate.Options{
		Out: *out, Jobs: *jobs, Force: *force, Sets: sets, Base: *base, Baseline: *baseline, Exe: exe,
		Log: stdout, ProgressEvery: 30 * time.Second, Backend: backend(0),
	})
	if err != nil && results == nil {
		return err
	}
	return reportTable(stdout, *out, results, *baseline, err)
}

// checkAblation reads every config before anything is made, and --base
// and --baseline, and returns the base config of the paired differences
// (--base, or the baseline's).
func checkAblation(pos, sets []string, specs []ablate.Spec, force bool, base, baseline string) (string, error) {
	// Every config is read before anything is made: a broken one among
	// many stops the ablation here, not after an empty folder exists. So
	// does one whose training would not fit (train.max_memory, or what
	// this process may take), unless its runs are all finished in --out:
	// those are only measured again.
	for _, p := range pos {
		c, err := config.Load(p, sets)
		if err != nil {
			return "", err
		}
		if force || !allFinished(specs, p) {
			if err := c.CheckTrainMemory(); err != nil {
				return "", err
			}
		}
	}
	if base != "" {
		if _, err := config.Load(base, sets); err != nil {
			return "", fmt.Errorf("--base: %w", err)
		}
	}
	if baseline != "" {
		if _, err := ablate.RunName(baseline + ".toml"); err != nil || !slices.ContainsFunc(specs, func(s ablate.Spec) bool { return s.Variant == baseline }) {
			return "", usagef("--baseline %s: not one of the configs' names (file names without .toml)", baseline)
		}
	}
	if base == "" {
		base = baselineConfig(specs, baseline)
	}
	return base, nil
}

// checkRereadable refuses a config that the runs could not read again:
// each run is a gptg process of its own that opens its config by path,
// and a path into /dev or /proc (/dev/stdin, /proc/self/fd/0), or a link
// to one, names another file there — `ablate /dev/stdin < c.toml` reads
// c.toml here, while every run read its own standard input and failed.
// Links are followed one at a time, so that the last hop (/proc/self/fd/0
// resolves to the redirected file itself) cannot hide the first.
func checkRereadable(path string) error {
	p := path
	for range 40 { // the kernel's limit of links in a path
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil // the config's own reading names the problem
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
		if err != nil {
			return nil
		}
		full := filepath.Join(dir, filepath.Base(abs))
		for _, special := range []string{"/dev", "/proc"} {
			if full == special || strings.HasPrefix(full, special+"/") {
				what := "is in " + special
				if given, _ := filepath.Abs(path); !strings.HasPrefix(given, special+"/") {
					what = "leads to " + quote.Name(full)
				}
				return usagef("config %s: %s; each run reads its config again in a process of its own, "+
					"where that is not this file: copy the config into a regular file", quote.Name(path), what)
			}
		}
		st, err := os.Lstat(full)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			return nil
		}
		target, err := os.Readlink(full)
		if err != nil {
			return nil
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		p = target
	}
	return nil
}

// allFinished says every run of the config file cfg already finished in its
// folder (an ablation run again on the same --out only measures it).
func allFinished(specs []ablate.Spec, cfg string) bool {
	for _, s := range specs {
		if s.Config != cfg {
			continue
		}
		if step, total, err := train.Progress(s.Dir); err != nil || step != total {
			return false
		}
	}
	return true
}

// baselineConfig is the config file of the baseline (the named variant,
// else the first config): "differs" then names what Δ measures.
func baselineConfig(specs []ablate.Spec, baseline string) string {
	for _, s := range specs {
		if baseline == "" || s.Variant == baseline {
			return s.Config
		}
	}
	return ""
}

// reportTable prints the table ablate and sweep collect wrote, and turns
// interrupted or failed runs into the exit code.
func reportTable(stdout io.Writer, out string, results []*ablate.Result, baseline string, err error) error {
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, ablate.Markdown(ablate.Rows(results, baseline)))
	fmt.Fprintf(stdout, "\nwrote %s, %s, %s and %s\n", filepath.Join(out, "summary.md"), filepath.Join(out, "summary.csv"),
		filepath.Join(out, "runs.csv"), filepath.Join(out, "loss.png"))
	if errors.Is(err, context.Canceled) {
		// Each training saved its checkpoint on the same signal; the same
		// command resumes them.
		return interruptedError{fmt.Errorf("interrupted: run the same command again to continue the unfinished runs")}
	}
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		if r.Status == ablate.Failed {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed (see the table)", failed, len(results))
	}
	return nil
}
