package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/losscurve"
	"github.com/gptg/gptg/train"
)

var plotCommand = command{
	summary: "draw a run's training and test loss curve",
	usage: `Usage: gptg plot RUN_DIR [--out FILE.png|FILE.svg]

Draws the run's metrics.jsonl: the training loss of every row (the mean
over the steps since the row before) as a line, the test losses as points,
against the step. Works on a run that is still training or was stopped.
gptg ablate draws several configs over seeds (its loss.png).

Flags:
  --out FILE   the picture to write, .png or .svg (default RUN_DIR/loss.png)
` + forceUsage,
	run: runPlot,
}

func runPlot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	out := fs.String("out", "", "")
	force := fs.Bool("force", false, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("plot needs exactly one RUN_DIR, got %d arguments", len(pos))
	}
	dir := pos[0]
	if err := checkRunDir(dir); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(dir, "loss.png")
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if ext != ".png" && ext != ".svg" {
		return usagef("--out %s: the picture is .png or .svg", *out)
	}
	// The rule of every output flag (checkOutput): an existing picture
	// (PNG, SVG) may be replaced; anything else needs --force.
	if err := checkOutput("--out", *out, atomicfile.Rules{Force: *force,
		Own: atomicfile.HasPrefix("\x89PNG", "<?xml", "<svg")}); err != nil {
		return err
	}
	rows, err := train.ReadMetrics(dir)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("%s has no metrics rows yet: the first is written after train.log_every steps", filepath.Join(dir, train.MetricsFile))
	}
	pic, err := losscurve.Draw(filepath.Base(filepath.Clean(dir)), rows, ext)
	if err != nil {
		return err
	}
	if err := writeOutput(*out, stdout, func(w io.Writer) error { _, err := w.Write(pic); return err }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d rows, up to step %d)\n", *out, len(rows), rows[len(rows)-1].Step)
	return nil
}

// checkRunDir refuses, as a usage error, a RUN_DIR argument that is not a
// run folder: missing, a file (a model, a corpus) or a folder without
// metrics.jsonl.
func checkRunDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return usagef("%s: no such run folder", quote.Name(dir))
	case !info.IsDir():
		hint := ""
		if d := filepath.Dir(dir); isRunDir(d) {
			hint = fmt.Sprintf(": give its folder, %s", quote.Name(d))
		}
		return usagef("%s is a file, not a run folder%s", quote.Name(dir), hint)
	case !isRunDir(dir):
		return usagef("%s is not a run folder: it has no %s or %s", quote.Name(dir), train.MetricsFile, train.ConfigFile)
	}
	return nil
}

// isRunDir reports whether dir holds a run's metrics.jsonl or config.toml
// (a run that has just started).
func isRunDir(dir string) bool {
	for _, name := range []string{train.MetricsFile, train.ConfigFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}
