// Package ablate trains several configs side by side and compares them:
// one row per config (what differs, size, speed, losses, a sample), one
// plot of the loss curves.
//
// Each training runs as its own gptg process (`gptg train`), so a run that
// fails or crashes is one row with its error while the others finish, and
// up to Jobs of them use the cores at once.
package ablate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/train"
)

// Options configure an ablation.
type Options struct {
	Out   string   // folder for the run folders and the summary
	Jobs  int      // runs at once
	Force bool     // retrain runs that are already finished
	Sets  []string // --set overrides applied to every config
	Base  string   // config the "differs" column compares against ("" = defaults)
	Exe   string   // the gptg binary that trains and evaluates
	Log   io.Writer
	// SamplePrompt starts each run's sample (the config's own prompt is used
	// when this one has tokens outside the run's vocabulary).
	SamplePrompt string
	// ProgressEvery is the time between progress lines.
	ProgressEvery time.Duration
	// Backend is how the sampling graph computes (the training runs are
	// processes of Exe and read the environment themselves).
	Backend graph.Backend
}

// Row is one config's result. Err is set when the run failed; the fields
// measured before the failure stay filled.
type Row struct {
	Name       string
	Config     string
	Dir        string
	Differs    []string
	Params     int
	Steps      int
	WallSecs   float64 // training time of the run (evaluation excluded)
	TokensPerS float64
	TrainLoss  float64
	TestLoss   float64
	PrefixLoss float64
	// PrefixIsPlain says the prefix-only loss was not measured separately:
	// with the causal mask it equals the plain test loss by construction.
	PrefixIsPlain bool
	Sample        string
	Reused        bool // the run folder already held the finished run
	Err           error

	cfg   *config.Config
	curve []point // train loss per logged step
	tests []point // test loss per evaluation
}

type point struct{ step, loss float64 }

// Run trains every config (skipping finished ones unless Force), evaluates
// them and writes summary.md, summary.csv and loss.png into opts.Out.
func Run(ctx context.Context, configs []string, opts Options) ([]*Row, error) {
	if opts.Jobs < 1 {
		opts.Jobs = 1
	}
	if opts.ProgressEvery == 0 {
		opts.ProgressEvery = 30 * time.Second
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("ablation folder: %w", err)
	}
	var base *config.Config
	if opts.Base != "" {
		b, err := config.Load(opts.Base, opts.Sets)
		if err != nil {
			return nil, err
		}
		base = b
	}
	rows := make([]*Row, len(configs))
	seen := map[string]string{}
	for i, path := range configs {
		r := &Row{Config: path, Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
		rows[i] = r
		r.Dir = filepath.Join(opts.Out, r.Name)
		if other, dup := seen[r.Name]; dup {
			r.Err = fmt.Errorf("same name as %s: each config needs its own file name", other)
			continue
		}
		seen[r.Name] = path
		cfg, err := config.Load(path, opts.Sets)
		if err != nil {
			r.Err = err
			continue
		}
		r.Differs = differs(cfg, base)
		r.cfg = cfg
	}

	p := &progressLog{w: opts.Log, rows: rows, start: time.Now(), ended: map[*Row]bool{}}
	stop := p.every(opts.ProgressEvery)
	sem := make(chan struct{}, opts.Jobs)
	var wg sync.WaitGroup
	for _, r := range rows {
		if r.Err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r.Err = trainOne(ctx, r, opts)
			if r.Err == nil {
				r.Err = measure(ctx, r, opts)
			}
			p.finished(r)
		}()
	}
	wg.Wait()
	stop()
	if err := writeSummary(opts.Out, rows); err != nil {
		return rows, err
	}
	return rows, ctx.Err()
}

// differs lists the model and training settings where cfg departs from base.
func differs(cfg, base *config.Config) []string {
	var out []string
	for _, d := range cfg.Diff(base) {
		if strings.HasPrefix(d, "model.") || (strings.HasPrefix(d, "train.") && !strings.HasPrefix(d, "train.out=")) {
			out = append(out, strings.TrimPrefix(d, "model."))
		}
	}
	return out
}

// trainOne brings r's run folder to a finished run: nothing to do when it
// already holds one (unless Force), a resume when it holds an interrupted
// one, else a fresh training.
func trainOne(ctx context.Context, r *Row, opts Options) error {
	args := []string{"train", r.Config, "--quiet", "--set", "train.out=" + r.Dir}
	for _, s := range opts.Sets {
		args = append(args, "--set", s)
	}
	step, total, err := train.Progress(r.Dir)
	if err == nil && !opts.Force {
		if d := changed(r.Dir, r.cfg); len(d) > 0 {
			return fmt.Errorf("run folder %s holds a run of another config (%s): use --force to retrain it, or another --out", r.Dir, strings.Join(d, " "))
		}
	}
	switch {
	case opts.Force:
		args = append(args, "--force")
	case err == nil && step == total:
		r.Reused = true
		return nil
	case err == nil:
		args = []string{"train", "--resume", r.Dir, "--quiet"}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("run folder %s: %v (use --force to start it over)", r.Dir, err)
	}
	return gptg(ctx, opts.Exe, nil, args...)
}

// changed lists the settings where the run stored in dir differs from cfg
// (the run folder and, when cfg takes it from the data, the vocabulary size
// aside): a finished run of another config must not pass for this one.
func changed(dir string, cfg *config.Config) []string {
	stored, err := config.Load(filepath.Join(dir, train.ConfigFile), nil)
	if err != nil {
		return []string{"unreadable " + train.ConfigFile}
	}
	want := *cfg
	want.Train.Out = stored.Train.Out
	if want.Model.Vocab == 0 {
		want.Model.Vocab = stored.Model.Vocab
	}
	var out []string
	for _, d := range stored.Diff(&want) {
		if !strings.HasPrefix(d, "sample.") {
			out = append(out, d)
		}
	}
	return out
}

// gptg runs the gptg binary; its last stderr line becomes the error.
func gptg(ctx context.Context, exe string, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, exe, args...)
	// On Ctrl-C a training must save its checkpoint, not die mid-step:
	// pass the interrupt on (the terminal may have sent it already) and
	// give it time to finish writing.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if msg := strings.TrimSpace(lines[len(lines)-1]); msg != "" {
			return errors.New(msg)
		}
		return fmt.Errorf("gptg %s: %v", args[0], err)
	}
	return nil
}

// measure fills r from its finished run folder: metrics, parameter count,
// prefix-only loss and a sample.
func measure(ctx context.Context, r *Row, opts Options) error {
	if err := readMetrics(r); err != nil {
		return err
	}
	modelPath := filepath.Join(r.Dir, train.ModelFile)
	m, err := graph.LoadModel(modelPath)
	if err != nil {
		return err
	}
	for _, t := range m.Tensors {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		r.Params += n
	}
	if m.Spec.Mask {
		r.PrefixLoss, r.PrefixIsPlain = r.TestLoss, true
	} else {
		cfg, err := config.Load(filepath.Join(r.Dir, train.ConfigFile), nil)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		err = gptg(ctx, opts.Exe, &out, "eval", modelPath, "--data", cfg.Data.Path,
			"--split", strconv.FormatFloat(cfg.Data.Split, 'g', -1, 64),
			"--batch", strconv.Itoa(cfg.Train.Batch), "--prefix-only")
		if err != nil {
			return fmt.Errorf("prefix-only evaluation: %v", err)
		}
		if r.PrefixLoss, err = parsePrefixLoss(out.String()); err != nil {
			return err
		}
	}
	r.Sample, err = sampleText(m, opts.SamplePrompt, r.Dir, opts.Backend)
	return err
}

func parsePrefixLoss(out string) (float64, error) {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "prefix-only test loss "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("gptg eval printed no prefix-only loss")
}

// readMetrics takes the curves and the final figures from metrics.jsonl.
func readMetrics(r *Row) error {
	f, err := os.Open(filepath.Join(r.Dir, train.MetricsFile))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var row struct {
			Step         int      `json:"step"`
			Loss         float64  `json:"loss"`
			TokensPerSec float64  `json:"tokens_per_s"`
			ElapsedSecs  float64  `json:"elapsed_s"`
			TestLoss     *float64 `json:"test_loss"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return fmt.Errorf("%s: %v", train.MetricsFile, err)
		}
		r.Steps, r.TrainLoss, r.TokensPerS, r.WallSecs = row.Step, row.Loss, row.TokensPerSec, row.ElapsedSecs
		r.curve = append(r.curve, point{float64(row.Step), row.Loss})
		if row.TestLoss != nil {
			r.TestLoss = *row.TestLoss
			r.tests = append(r.tests, point{float64(row.Step), *row.TestLoss})
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(r.tests) == 0 {
		return fmt.Errorf("%s has no test loss", filepath.Join(r.Dir, train.MetricsFile))
	}
	return nil
}

// sampleText draws 80 tokens from the prompt with a fixed seed, so every
// row's sample is comparable and the table is reproducible.
func sampleText(m *graph.SavedModel, prompt, dir string, be graph.Backend) (string, error) {
	if _, err := m.Vocab.Encode(prompt); err != nil {
		cfg, cerr := config.Load(filepath.Join(dir, train.ConfigFile), nil)
		if cerr != nil {
			return "", err
		}
		prompt = cfg.Sample.Prompt
	}
	s, err := sample.New(m, be)
	if err != nil {
		return "", err
	}
	defer s.Close()
	var b strings.Builder
	b.WriteString(prompt)
	err = s.Generate(prompt, sample.Options{Tokens: 80, Temperature: 1, Seed: 42}, func(t string) error {
		b.WriteString(t)
		return nil
	})
	return b.String(), err
}

// progressLog prints which runs are done and how far the others are.
type progressLog struct {
	mu    sync.Mutex
	w     io.Writer
	rows  []*Row
	done  int
	start time.Time
	ended map[*Row]bool
}

func (p *progressLog) finished(r *Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.ended[r] = true
	status := "done"
	switch {
	case r.Err != nil:
		status = "FAILED: " + r.Err.Error()
	case r.Reused:
		status = "already finished, reused"
	}
	fmt.Fprintf(p.w, "[%d/%d] %s: %s\n", p.done, len(p.rows), r.Name, status)
}

// every prints a status line of the unfinished runs periodically; the
// returned function stops it.
func (p *progressLog) every(d time.Duration) func() {
	t := time.NewTicker(d)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				p.status()
			}
		}
	}()
	return func() { t.Stop(); close(quit) }
}

func (p *progressLog) status() {
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	for _, r := range p.rows {
		if r.Err != nil || r.Reused || p.ended[r] {
			continue
		}
		if step, ok := lastStep(r.Dir); ok {
			parts = append(parts, fmt.Sprintf("%s at step %d", r.Name, step))
		}
	}
	fmt.Fprintf(p.w, "%s: %d/%d finished; %s\n", time.Since(p.start).Round(time.Second), p.done, len(p.rows), strings.Join(parts, ", "))
}

// lastStep reads the newest metrics row of a run in progress.
func lastStep(dir string) (step int, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, train.MetricsFile))
	if err != nil || len(b) == 0 {
		return 0, false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var row struct {
		Step int `json:"step"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &row) != nil {
		return 0, false
	}
	return row.Step, true
}
