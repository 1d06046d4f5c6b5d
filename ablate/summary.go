package ablate

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gptg/gptg/internal/atomicfile"
)

// Row is one variant of the comparison: its runs over the seeds, summarised.
type Row struct {
	Name     string
	Differs  []string
	Runs     []*Result // every run of the variant, in plan order
	Finished []*Result // the ones with measurements
	Baseline bool      // the row the differences are taken against

	Params, Steps    int
	TokensPerS       Stat
	TrainLoss        Stat
	Test, Prefix     Stat
	TestDiff         Diff // paired over seeds, against the baseline row
	PrefixDiff       Diff
	PrefixIsPlain    bool   // causal: the prefix-only loss is the test loss
	Sample           string // the first finished seed's
	NotFinished      []*Result
	FailedRuns       []*Result
	bySeedTest       map[int64]float64
	bySeedPrefixOnly map[int64]float64
}

// Rows groups results by variant (in order of first appearance) and
// compares each with the baseline variant ("" = the first).
func Rows(results []*Result, baseline string) []*Row {
	var rows []*Row
	byName := map[string]*Row{}
	for _, r := range results {
		row := byName[r.Variant]
		if row == nil {
			row = &Row{Name: r.Variant, Differs: r.Differs, bySeedTest: map[int64]float64{}, bySeedPrefixOnly: map[int64]float64{}}
			byName[r.Variant] = row
			rows = append(rows, row)
		}
		row.Runs = append(row.Runs, r)
		switch r.Status {
		case Finished:
			row.Finished = append(row.Finished, r)
		case Failed:
			row.FailedRuns = append(row.FailedRuns, r)
		default:
			row.NotFinished = append(row.NotFinished, r)
		}
	}
	for _, row := range rows {
		var tok, trainLoss, test, prefix []float64
		for _, r := range row.Finished {
			tok, trainLoss = append(tok, r.TokensPerS), append(trainLoss, r.TrainLoss)
			test, prefix = append(test, r.TestLoss), append(prefix, r.PrefixLoss)
			row.bySeedTest[r.Seed], row.bySeedPrefixOnly[r.Seed] = r.TestLoss, r.PrefixLoss
			row.Params, row.Steps, row.PrefixIsPlain = r.Params, r.Steps, r.PrefixIsPlain
			if row.Sample == "" {
				row.Sample = r.Sample
			}
			if row.Differs == nil {
				row.Differs = r.Differs
			}
		}
		row.TokensPerS, row.TrainLoss = Summarize(tok), Summarize(trainLoss)
		row.Test, row.Prefix = Summarize(test), Summarize(prefix)
	}
	if len(rows) == 0 {
		return rows
	}
	base := rows[0]
	if baseline != "" && byName[baseline] != nil {
		base = byName[baseline]
	}
	base.Baseline = true
	for _, row := range rows {
		row.TestDiff = PairedDiff(row.bySeedTest, base.bySeedTest)
		row.PrefixDiff = PairedDiff(row.bySeedPrefixOnly, base.bySeedPrefixOnly)
	}
	return rows
}

// WriteSummary writes summary.md, summary.csv, runs.csv and loss.png into dir.
func WriteSummary(dir string, results []*Result, baseline string) error {
	rows := Rows(results, baseline)
	if err := atomicfile.WriteOwnFile(filepath.Join(dir, "summary.md"), []byte(Markdown(rows))); err != nil {
		return err
	}
	c, err := CSV(rows)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteOwnFile(filepath.Join(dir, "summary.csv"), c); err != nil {
		return err
	}
	if c, err = RunsCSV(results); err != nil {
		return err
	}
	if err := atomicfile.WriteOwnFile(filepath.Join(dir, "runs.csv"), c); err != nil {
		return err
	}
	png, err := LossPlot(rows)
	if err != nil {
		return fmt.Errorf("loss plot: %w", err)
	}
	return atomicfile.WriteOwnFile(filepath.Join(dir, "loss.png"), png)
}

// num formats a number, blank when there is none.
func num(v float64, prec int, have bool) string {
	if !have {
		return ""
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

var csvHeader = []string{"name", "differs", "n", "runs", "params", "steps", "tokens_per_s",
	"train_loss_mean", "test_loss_mean", "test_loss_sd",
	"test_diff", "test_diff_lo", "test_diff_hi", "test_diff_pairs",
	"prefix_only_test_loss_mean", "prefix_only_test_loss_sd",
	"prefix_only_diff", "prefix_only_diff_lo", "prefix_only_diff_hi", "prefix_only_diff_pairs",
	"baseline", "sample", "failed", "not_finished"}

// CSV is the comparison as comma-separated values, one row per variant;
// empty cells where there is nothing to report.
func CSV(rows []*Row) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(csvHeader)
	for _, r := range rows {
		n := r.Test.N > 0
		intervals := func(d Diff) []string {
			return []string{num(d.Mean, 4, d.N > 0), num(d.Lo, 4, d.HasInterval()), num(d.Hi, 4, d.HasInterval()), strconv.Itoa(d.N)}
		}
		cells := []string{r.Name, strings.Join(r.Differs, " "), strconv.Itoa(r.Test.N), strconv.Itoa(len(r.Runs)),
			num(float64(r.Params), 0, n), num(float64(r.Steps), 0, n), num(r.TokensPerS.Mean, 0, n),
			num(r.TrainLoss.Mean, 4, n), num(r.Test.Mean, 4, n), num(r.Test.SD, 4, r.Test.N > 1)}
		cells = append(cells, intervals(r.TestDiff)...)
		cells = append(cells, num(r.Prefix.Mean, 4, n), num(r.Prefix.SD, 4, r.Prefix.N > 1))
		cells = append(cells, intervals(r.PrefixDiff)...)
		cells = append(cells, strconv.FormatBool(r.Baseline), r.Sample, runList(r.FailedRuns), runList(r.NotFinished))
		w.Write(cells)
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

func runList(rs []*Result) string {
	var out []string
	for _, r := range rs {
		out = append(out, runLabel(r.Spec))
	}
	return strings.Join(out, "; ")
}

// RunsCSV lists every run with its own figures: the table's raw material.
func RunsCSV(results []*Result) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"name", "seed", "dir", "status", "params", "steps", "wall_s", "tokens_per_s",
		"train_loss", "test_loss", "prefix_only_test_loss", "error"})
	for _, r := range results {
		done := r.Status == Finished
		errText := ""
		if r.Err != nil {
			errText = r.Err.Error()
		}
		w.Write([]string{r.Variant, strconv.FormatInt(r.Seed, 10), r.Dir, r.Status.String(),
			num(float64(r.Params), 0, done), num(float64(r.Steps), 0, done), num(r.WallSecs, 1, done),
			num(r.TokensPerS, 0, done), num(r.TrainLoss, 4, done), num(r.TestLoss, 4, done),
			num(r.PrefixLoss, 4, done), errText})
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// meanSD formats "1.9727 ± 0.0389" (just the mean for one run).
func meanSD(s Stat) string {
	switch {
	case s.N == 0:
		return ""
	case s.N == 1:
		return strconv.FormatFloat(s.Mean, 'f', 4, 64)
	}
	return fmt.Sprintf("%.4f ± %.4f", s.Mean, s.SD)
}

// diffText formats a paired difference: "−0.3210 [−0.35, −0.29]", and says
// when its interval includes zero or there is none.
func diffText(d Diff, baseline bool) string {
	switch {
	case baseline:
		return "baseline"
	case d.N == 0:
		return ""
	case !d.HasInterval():
		return fmt.Sprintf("%s (1 pair, no interval)", signed(d.Mean, 4))
	}
	s := fmt.Sprintf("%s [%s, %s]", signed(d.Mean, 4), signed(d.Lo, 3), signed(d.Hi, 3))
	if d.IncludesZero() {
		s += " includes 0"
	}
	return s
}

// signed writes a number with its sign, a true minus sign for negatives.
func signed(x float64, prec int) string {
	s := strconv.FormatFloat(math.Abs(x), 'f', prec, 64)
	if x < 0 && strings.Trim(s, "0.") != "" {
		return "−" + s
	}
	return "+" + s
}

// Markdown is the table for people: one row per variant, samples on one
// line with newlines shown as ⏎, then the runs that are missing or failed.
func Markdown(rows []*Row) string {
	var b strings.Builder
	baseName := ""
	for _, r := range rows {
		if r.Baseline {
			baseName = r.Name
		}
	}
	b.WriteString("| name | differs | n | params | steps | tokens/s | train loss | test loss (mean ± sd) | Δ test vs " + baseName +
		" (95 % CI) | prefix-only loss | Δ prefix-only (95 % CI) | sample |\n")
	b.WriteString(strings.Repeat("|---", 12) + "|\n")
	esc := strings.NewReplacer("|", `\|`, "\n", "⏎", "\r", "", "`", "'")
	plain, anyInterval := false, false
	var failed, missing []string
	for _, r := range rows {
		n := r.Test.N > 0
		prefix, prefixDiff := meanSD(r.Prefix), diffText(r.PrefixDiff, r.Baseline)
		if r.PrefixIsPlain && n {
			prefix += "¹"
			plain = true
		}
		if r.TestDiff.HasInterval() {
			anyInterval = true
		}
		sample := ""
		if r.Sample != "" {
			sample = "`" + esc.Replace(r.Sample) + "`"
		}
		cells := []string{esc.Replace(r.Name), esc.Replace(strings.Join(r.Differs, " ")), fmt.Sprintf("%d/%d", r.Test.N, len(r.Runs)),
			num(float64(r.Params), 0, n), num(float64(r.Steps), 0, n), num(r.TokensPerS.Mean, 0, n), num(r.TrainLoss.Mean, 4, n),
			meanSD(r.Test), diffText(r.TestDiff, r.Baseline), prefix, prefixDiff, sample}
		if !n {
			cells[len(cells)-1] = "**no finished run**"
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		for _, f := range r.FailedRuns {
			msg := "failed"
			if f.Err != nil {
				msg = f.Err.Error()
			}
			failed = append(failed, fmt.Sprintf("- %s: %s", runLabel(f.Spec), esc.Replace(msg)))
		}
		for _, m := range r.NotFinished {
			missing = append(missing, fmt.Sprintf("- %s: %s (%s)", runLabel(m.Spec), m.Status, m.Dir))
		}
	}
	b.WriteString("\nn: finished runs (seeds) of those planned; losses are the mean ± sample standard deviation over them.")
	if anyInterval {
		b.WriteString(" Δ: mean difference to " + baseName + " over seed pairs (same seed, same data order), with its 95 % Student t interval; \"includes 0\": the seeds cannot tell the two apart.")
	}
	b.WriteString("\n")
	if plain {
		b.WriteString("\n¹ causal model: every position already sees only its prefix, so the prefix-only loss is the test loss.\n")
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed runs:\n" + strings.Join(failed, "\n") + "\n")
	}
	if len(missing) > 0 {
		b.WriteString("\nRuns not finished:\n" + strings.Join(missing, "\n") + "\n")
	}
	return b.String()
}
