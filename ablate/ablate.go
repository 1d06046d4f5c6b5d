// Package ablate trains several configs side by side, each at one or more
// seeds, and compares them: one row per config (what differs, size, speed,
// mean ± sd of the losses over the seeds, the paired difference to a
// baseline with its 95 % interval, a sample), one plot of the mean loss
// curves with bands.
//
// Each training runs as its own gptg process (`gptg train`), so a run that
// fails or crashes is reported while the others finish, and up to Jobs of
// them use the cores at once. ablate never locks a run folder itself: the
// `gptg train` it starts does, so two ablations (or two Slurm tasks) can
// never train into one folder at once.
package ablate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/runlock"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

// Spec is one training: a config, its overrides and seed, and its folder.
type Spec struct {
	Variant string   // the table row it belongs to
	Config  string   // the config file
	Sets    []string // overrides of this run, applied after Options.Sets
	Seed    int64    // train.seed; 0 keeps the config's own
	Dir     string   // its run folder
}

// sets is every override of the run, in the order they apply.
func (s Spec) sets(global []string) []string {
	out := append(append([]string(nil), global...), s.Sets...)
	if s.Seed != 0 {
		out = append(out, "train.seed="+strconv.FormatInt(s.Seed, 10))
	}
	return out
}

// Options configure an ablation.
type Options struct {
	Out   string   // folder for the summary (the run folders are in the Specs)
	Jobs  int      // runs at once
	Force bool     // retrain runs that are already finished
	Sets  []string // --set overrides applied to every config
	Base  string   // config the "differs" column compares against ("" = defaults)
	// BaseSets are overrides of Base beyond Sets (a sweep compares with
	// its first run, overrides included).
	BaseSets []string
	// Baseline names the variant the others are compared with ("" = the first).
	Baseline string
	Exe      string // the gptg binary that trains and evaluates
	// Launch, when set, starts each training over MPI: the command and its
	// arguments before Exe (mpirun -np N), the training given --distributed.
	// Evaluations run as plain processes.
	Launch []string
	Log    io.Writer
	// SamplePrompt starts each run's sample; "" (or a prompt with tokens
	// outside the run's vocabulary) takes the config's [sample] prompt.
	SamplePrompt string
	// ProgressEvery is the time between progress lines.
	ProgressEvery time.Duration
	// Event, when set, hears each training start and end ("fresh",
	// "resume", "finished", "reused", "failed: …", "interrupted"); sweeps
	// keep them as a log.
	Event func(s Spec, event string)
	// Backend is how the sampling graph computes (the training runs are
	// processes of Exe and read the environment themselves).
	Backend graph.Backend

	budget *memoryBudget // set by run: the trainings at once share the process's memory
}

// Status is how far a run has come.
type Status int

const (
	NotStarted Status = iota // no checkpoint in its folder
	Unfinished               // started, stopped before its last step (a resume continues it)
	Finished                 // trained to its last step and measured
	Failed                   // training or measuring failed: Err says why
)

func (s Status) String() string {
	return [...]string{"not started", "unfinished", "finished", "failed"}[s]
}

// Result is one run's outcome. The fields measured before a failure stay
// filled.
type Result struct {
	Spec
	Status     Status
	Err        error // set when Status is Failed
	Reused     bool  // the run folder already held the finished run
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

	cfg   *config.Config
	mark  string  // the run folder's train.Mark when the ablation started
	curve []point // train loss per logged step
	tests []point // test loss per evaluation
}

type point struct{ step, loss float64 }

// thinned keeps a curve's points at the steps that are multiples of a
// stride, doubled whenever more than 2·maxCurveSteps are kept, and its
// last point: the plot draws at most maxCurveSteps steps, and every point
// of three 1.65M-row runs took the whole of a 250 MiB cgroup. Strides
// are steps, not rows, so the seeds of a variant keep
// the same steps.
type thinned struct {
	kept   []point
	stride int
	last   point
	any    bool
}

func (t *thinned) add(step int, loss float64) {
	if t.stride == 0 {
		t.stride = 1
	}
	t.last, t.any = point{float64(step), loss}, true
	if step%t.stride != 0 {
		return
	}
	t.kept = append(t.kept, t.last)
	if len(t.kept) > 2*maxCurveSteps {
		t.stride *= 2
		t.kept = slices.DeleteFunc(t.kept, func(p point) bool { return int(p.step)%t.stride != 0 })
	}
}

func (t *thinned) points() []point {
	if t.any && (len(t.kept) == 0 || t.kept[len(t.kept)-1] != t.last) {
		return append(t.kept, t.last)
	}
	return t.kept
}

// RunName turns a config file name into the name of its run folder and
// table row: the base name without its extension, which must be a plain
// folder name, or the runs would be written outside the output folder
// ("...toml" gives "..", ".toml" gives "").
func RunName(path string) (string, error) {
	base := filepath.Base(path)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	if err := plainName(name); err != nil {
		return "", fmt.Errorf("config %s: its file name gives the run name %q, %v; rename the file", path, name, err)
	}
	return name, nil
}

// plainName refuses names that are not one ordinary folder name.
func plainName(name string) error {
	switch {
	case name == "":
		return errors.New("which is empty")
	case name == "." || name == "..":
		return errors.New("which would put its runs outside their own folder")
	case strings.HasPrefix(name, "."):
		return errors.New("which would be a hidden folder")
	case strings.ContainsAny(name, `/\`):
		return errors.New("which contains a path separator")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return errors.New("which contains a control character")
		}
	}
	return nil
}

// Plan gives the runs of an ablation: each config at each seed, in
// out/<config name>/seed-<seed>, or in out/<config name> when seeds is
// empty (the config's own seed). Runs are ordered seed by seed, so an
// ablation stopped early has every config at the first seeds. It refuses
// two configs with one name before anything is trained.
func Plan(configs []string, seeds []int64, out string) ([]Spec, error) {
	seen := map[string]string{}
	names := make([]string, len(configs))
	for i, path := range configs {
		name, err := RunName(path)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[name]; dup {
			return nil, fmt.Errorf("configs %s and %s both give the run name %q: each config needs its own file name", other, path, name)
		}
		seen[name], names[i] = path, name
	}
	var specs []Spec
	if len(seeds) == 0 {
		for i, path := range configs {
			specs = append(specs, Spec{Variant: names[i], Config: path, Dir: filepath.Join(out, names[i])})
		}
	}
	for _, s := range seeds {
		for i, path := range configs {
			specs = append(specs, Spec{Variant: names[i], Config: path, Seed: s,
				Dir: filepath.Join(out, names[i], "seed-"+strconv.FormatInt(s, 10))})
		}
	}
	return specs, nil
}

// Run trains every spec (skipping finished ones unless Force), measures
// them and writes summary.md, summary.csv, runs.csv and loss.png into
// opts.Out. The error is ctx's when interrupted, or one that stopped the
// summary; failed runs are in the results.
func Run(ctx context.Context, specs []Spec, opts Options) ([]*Result, error) {
	results, err := Execute(ctx, specs, opts)
	return thenSummary(results, err, opts)
}

// Collect measures the runs that have finished, without training anything,
// and writes the summary: the others are listed as not started,
// unfinished or failed.
func Collect(ctx context.Context, specs []Spec, opts Options) ([]*Result, error) {
	results, err := Measure(ctx, specs, opts)
	return thenSummary(results, err, opts)
}

// thenSummary writes the summary of whatever results there are; an error
// writing it wins over err.
func thenSummary(results []*Result, err error, opts Options) ([]*Result, error) {
	if results == nil {
		return nil, err
	}
	if serr := WriteSummary(opts.Out, results, opts.Baseline); serr != nil {
		return results, serr
	}
	return results, err
}

// Execute trains and measures every spec, as Run does, without writing a
// summary: a sweep task does this for its one entry.
func Execute(ctx context.Context, specs []Spec, opts Options) ([]*Result, error) {
	return run(ctx, specs, opts, true)
}

// Measure measures the finished specs without training or writing a
// summary.
func Measure(ctx context.Context, specs []Spec, opts Options) ([]*Result, error) {
	return run(ctx, specs, opts, false)
}

func run(ctx context.Context, specs []Spec, opts Options, training bool) ([]*Result, error) {
	if opts.Jobs < 1 {
		opts.Jobs = 1
	}
	if opts.ProgressEvery == 0 {
		opts.ProgressEvery = 30 * time.Second
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Out != "" {
		if err := os.MkdirAll(opts.Out, 0o755); err != nil {
			return nil, fmt.Errorf("ablation folder: %w", err)
		}
	}
	if opts.Baseline != "" && !hasVariant(specs, opts.Baseline) {
		return nil, fmt.Errorf("--baseline %s: no such config among the runs", opts.Baseline)
	}
	var base *config.Config
	if opts.Base != "" {
		b, err := config.Load(opts.Base, append(append([]string(nil), opts.Sets...), opts.BaseSets...))
		if err != nil {
			return nil, err
		}
		base = b
	}
	results := make([]*Result, len(specs))
	for i, s := range specs {
		r := &Result{Spec: s}
		results[i] = r
		cfg, err := config.Load(s.Config, s.sets(opts.Sets))
		if err != nil {
			r.Status, r.Err = Failed, err
			continue
		}
		r.Differs = differs(cfg, base)
		r.cfg = cfg
		if training {
			// What --force may start over: a run another runner trains
			// in the folder from now on is that runner's, measured as it is.
			r.mark = train.Mark(s.Dir)
		}
	}

	opts.budget = newMemoryBudget(opts.Log)
	p := &progressLog{w: opts.Log, results: results, start: time.Now(), ended: map[*Result]bool{}}
	stop := p.every(opts.ProgressEvery)
	sem := make(chan struct{}, opts.Jobs)
	var wg sync.WaitGroup
	for _, r := range results {
		if r.Err != nil {
			p.finished(r, r.Status, r.Err, false)
			continue
		}
		// Taking the slot before starting the goroutine keeps the plan's
		// order (seed by seed) instead of the scheduler's.
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			status, reused, err := bringUp(ctx, r, opts, training)
			if status == Finished {
				if err = measure(ctx, r, opts); err != nil {
					status = Failed
				}
			}
			p.finished(r, status, err, reused)
		}()
	}
	wg.Wait()
	stop()
	return results, ctx.Err()
}

func hasVariant(specs []Spec, name string) bool {
	for _, s := range specs {
		if s.Variant == name {
			return true
		}
	}
	return false
}

// differs lists the model and training settings where cfg departs from
// base; the seed and run folder are left out (every run has its own).
func differs(cfg, base *config.Config) []string {
	var out []string
	for _, d := range cfg.Diff(base) {
		key, value, _ := strings.Cut(d, "=")
		if !strings.HasPrefix(key, "model.") && !strings.HasPrefix(key, "train.") || key == "train.out" || key == "train.seed" {
			continue
		}
		// 0.00030000000000000003 (lr/10) is 3e-4 to a reader.
		if x, err := strconv.ParseFloat(value, 64); err == nil && strings.ContainsAny(value, ".eE") {
			value = strconv.FormatFloat(x, 'g', 6, 64)
		}
		out = append(out, strings.TrimPrefix(key, "model.")+"="+value)
	}
	return out
}

// bringUp brings r's run folder to a finished run: nothing to do when it
// already holds one (unless Force), a resume when it holds an interrupted
// one, else a fresh training. Without training it only reports how far
// the folder is.
func bringUp(ctx context.Context, r *Result, opts Options, training bool) (Status, bool, error) {
	event := func(e string) {
		if opts.Event != nil {
			opts.Event(r.Spec, e)
		}
	}
	started, finished, err := progress(r, opts)
	if err != nil {
		return Failed, false, err
	}
	if !training {
		switch {
		case finished:
			return Finished, true, nil
		case started:
			return Unfinished, false, nil
		}
		return NotStarted, false, nil
	}
	if finished && !opts.Force {
		event("reused")
		return Finished, true, nil
	}
	release := opts.budget.reserve(runLabel(r.Spec), r.cfg.TrainMemory().Total()+childRuntime)
	defer release()
	if ctx.Err() != nil {
		if started {
			return Unfinished, false, nil
		}
		return NotStarted, false, nil
	}
	args, kind, err := trainArgs(r, opts, started)
	if err != nil {
		return Failed, false, err
	}
	// Said here rather than by the training it would start: the same
	// line, without a process that cannot fit.
	if err := r.cfg.CheckTrainMemory(); err != nil {
		event("failed: " + err.Error())
		return Failed, false, err
	}
	event(kind)
	exe := opts.Exe
	if len(opts.Launch) > 0 {
		exe, args = opts.Launch[0], append(append(slices.Clone(opts.Launch[1:]), opts.Exe), append(args, "--distributed")...)
	}
	if err := gptg(ctx, exe, nil, stderrLog(r.Dir, "train"), args...); err != nil {
		if ctx.Err() != nil {
			event("interrupted")
			if kind == "fresh" && startedWithoutCheckpoint(r.Dir) {
				return NotStarted, false, nil
			}
			return Unfinished, false, nil
		}
		if Busy(err) {
			event("busy: " + err.Error())
		} else if finishedMeanwhile(r) {
			// Another runner (a second sweep run, a requeued task) took
			// and finished the run between the look above and this
			// training's start, which then refused the finished folder:
			// the run is done, not failed.
			event("finished by another process")
			return Finished, true, nil
		} else {
			event("failed: " + err.Error())
		}
		return Failed, false, err
	}
	event("finished")
	return Finished, false, nil
}

// progress says how far r's run folder is: started (it holds a run of
// r's config, finished or not) and finished. err is a folder that cannot
// be read, or that holds a run of another config (unless Force).
func progress(r *Result, opts Options) (started, finished bool, err error) {
	step, total, err := train.Progress(r.Dir)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, false, fmt.Errorf("run folder %s: %v (use --force to start it over)", r.Dir, err)
	case err == nil && !opts.Force:
		if d := changed(r.Dir, r.cfg); len(d) > 0 {
			return false, false, fmt.Errorf("run folder %s holds a run of another config (%s): use --force to retrain it, or another --out", r.Dir, strings.Join(d, " "))
		}
	}
	// A model missing or older than the last checkpoint (a kill while it
	// was written) is not finished: a resume writes it.
	finished = err == nil && step == total && !train.ModelBehind(r.Dir)
	if errors.Is(err, fs.ErrNotExist) && !opts.Force && translationFinished(r.Dir, r.cfg) {
		// A translation run of a gptg from before translation
		// checkpoints: its model file and last metrics row say it is done.
		err, finished = nil, true
	}
	return err == nil, finished, nil
}

// trainArgs is the gptg command line that brings r's folder to a finished
// run, and its kind for the events: a fresh start, a resume of the run
// started, or a start over (Force, or a start killed before its first
// checkpoint).
func trainArgs(r *Result, opts Options, started bool) (args []string, kind string, err error) {
	args = []string{"train", r.Config, "--quiet"}
	for _, s := range r.sets(opts.Sets) {
		args = append(args, "--set", s)
	}
	// Last, so that no override can send the run outside its folder.
	args = append(args, "--set", "train.out="+r.Dir)
	kind = "fresh"
	switch {
	case opts.Force:
		args = append(args, "--force", "--replacing", r.mark)
	case started:
		args, kind = []string{"train", "--resume", r.Dir, "--quiet"}, "resume"
	case startedWithoutCheckpoint(r.Dir):
		// A start killed before its first checkpoint left files but no
		// progress to keep; a model without a checkpoint is kept, though.
		if _, merr := os.Stat(filepath.Join(r.Dir, train.ModelFile)); merr == nil {
			return nil, "", fmt.Errorf("run folder %s holds a model but no checkpoint: use --force to retrain it", r.Dir)
		}
		args = append(args, "--force", "--replacing", r.mark)
	}
	return args, kind, nil
}

// finishedMeanwhile says r's folder now holds a finished run of r's config.
func finishedMeanwhile(r *Result) bool {
	step, total, err := train.Progress(r.Dir)
	if err != nil || step != total || len(changed(r.Dir, r.cfg)) > 0 {
		return false
	}
	// A training killed while it wrote its model (the OOM killer) leaves
	// the last checkpoint but no model: not finished.
	_, err = os.Stat(filepath.Join(r.Dir, train.ModelFile))
	return err == nil
}

// Busy says err is `gptg train` refusing a run folder that another
// process is training (its lock, internal/runlock): the run is not failed,
// only taken.
func Busy(err error) bool {
	return err != nil && strings.Contains(err.Error(), runlock.ErrHeld.Error())
}

// startedWithoutCheckpoint says dir holds files of a run but no checkpoint.
func startedWithoutCheckpoint(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, train.CheckpointFile)); err == nil {
		return false
	}
	for _, name := range []string{train.ConfigFile, train.MetricsFile, train.ModelFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// changed lists the settings where the run stored in dir differs from cfg
// (the run folder and, when cfg takes them from the data, the vocabulary
// size and the corpus's digest and size aside): a finished run of another
// config must not pass for this one.
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
	// Likewise the corpus's digest and size, which a run records when its
	// config leaves them out.
	if want.Data.SHA256 == "" {
		want.Data.SHA256 = stored.Data.SHA256
	}
	if want.Data.Size == 0 {
		want.Data.Size = stored.Data.Size
	}
	if want.Data.ValSHA256 == "" {
		want.Data.ValSHA256 = stored.Data.ValSHA256
	}
	if want.Data.ValSize == 0 {
		want.Data.ValSize = stored.Data.ValSize
	}
	var out []string
	for _, d := range stored.Diff(&want) {
		if !strings.HasPrefix(d, "sample.") {
			out = append(out, d)
		}
	}
	return out
}

// gptg runs the gptg binary. When it fails, its last stderr line (gptg's
// one-line error) becomes the error; its whole stderr, which may hold more
// (a panic's trace starts with its cause), is kept in logPath, which the
// error names. A success removes an earlier failure's log.
func gptg(ctx context.Context, exe string, stdout io.Writer, logPath string, args ...string) error {
	cmd := exec.CommandContext(ctx, exe, args...)
	// On Ctrl-C a training must save its checkpoint, not die mid-step:
	// pass the interrupt on (the terminal may have sent it already) and
	// give it time to finish writing.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	err := cmd.Run()
	if err == nil {
		os.Remove(logPath)
		return nil
	}
	text := strings.TrimSpace(stderr.String())
	lines := strings.Split(text, "\n")
	msg := strings.TrimSpace(lines[len(lines)-1])
	if strings.HasPrefix(msg, "---") {
		msg = mpirunError(lines) // a training over MPI (Options.Launch)
	}
	if msg == "" {
		msg = fmt.Sprintf("gptg %s: %v", args[0], err)
	}
	// SIGKILL that we did not send leaves no line of gptg's own: the
	// kernel's OOM killer (a cgroup's limit, the machine's memory) is the
	// usual sender, and "signal: killed" or a progress line said nothing.
	var exit *exec.ExitError
	if errors.As(err, &exit) && ctx.Err() == nil {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			msg = fmt.Sprintf("gptg %s was killed (SIGKILL) before it could say why: most often by the kernel's out-of-memory killer, when the container (cgroup) or the machine gives less memory than the run needs (dmesg tells)", args[0])
		}
	}
	if len(lines) > 1 && ctx.Err() == nil {
		werr := os.MkdirAll(filepath.Dir(logPath), 0o755)
		if werr == nil {
			werr = atomicfile.WriteOwnFile(logPath, []byte(text+"\n"))
		}
		if werr == nil {
			msg += fmt.Sprintf(" (its %d lines of error output: %s)", len(lines), logPath)
		}
	}
	return errors.New(msg)
}

// stderrLog is where a failed command's whole error output is kept: beside
// the run's folder, which the failure may not have made.
func stderrLog(dir, what string) string { return dir + "." + what + ".stderr.log" }

// translationFinished reports whether dir holds a finished encoder–decoder
// run of cfg: its model file, and a last metrics row at the run's length
// (train.max_steps, or train.epochs passes over the data).
func translationFinished(dir string, cfg *config.Config) bool {
	if cfg == nil || cfg.Model.Arch != config.ArchEncoderDecoder {
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, train.ModelFile)); err != nil {
		return false
	}
	if d := changed(dir, cfg); len(d) > 0 {
		return false
	}
	var last *train.MetricsRow
	err := train.EachMetricsRow(dir, func(row train.MetricsRow) { last = &row })
	if err != nil || last == nil {
		return false
	}
	if cfg.Train.MaxSteps > 0 {
		return last.Step >= cfg.Train.MaxSteps
	}
	return last.Epoch >= cfg.Train.Epochs-1e-9
}

// measured is what measure keeps in a run folder, so that collecting a
// table again does not repeat the prefix-only evaluation (half a minute
// for an unmasked model on the whole corpus) or the sample.
type measured struct {
	ModelSize     int64   `json:"model_size"`
	ModelModTime  int64   `json:"model_mod_time_ns"`
	SamplePrompt  string  `json:"sample_prompt"`
	Params        int     `json:"params"`
	PrefixLoss    float64 `json:"prefix_only_test_loss"`
	PrefixIsPlain bool    `json:"prefix_is_plain"`
	Sample        string  `json:"sample"`
}

// MeasuredFile is the file in a run folder that caches its measurements.
const MeasuredFile = "ablate.json"

// measure fills r from its finished run folder: metrics, parameter count,
// prefix-only loss and a sample.
func measure(ctx context.Context, r *Result, opts Options) error {
	if err := readMetrics(r); err != nil {
		return err
	}
	modelPath := filepath.Join(r.Dir, train.ModelFile)
	st, err := os.Stat(modelPath)
	if err != nil {
		return err
	}
	cachePath := filepath.Join(r.Dir, MeasuredFile)
	var m measured
	if b, err := inputfile.ReadFile(cachePath, 1<<20); err == nil && json.Unmarshal(b, &m) == nil &&
		m.ModelSize == st.Size() && m.ModelModTime == st.ModTime().UnixNano() && m.SamplePrompt == opts.SamplePrompt {
		r.Params, r.PrefixLoss, r.PrefixIsPlain, r.Sample = m.Params, m.PrefixLoss, m.PrefixIsPlain, m.Sample
		if r.PrefixIsPlain {
			r.PrefixLoss = r.TestLoss
		}
		return nil
	}
	if translate.IsTranslationFile(modelPath) {
		err = measureTranslation(r, opts, modelPath)
	} else {
		err = measureLanguageModel(ctx, r, opts, modelPath)
	}
	if err != nil {
		return err
	}
	m = measured{ModelSize: st.Size(), ModelModTime: st.ModTime().UnixNano(), SamplePrompt: opts.SamplePrompt,
		Params: r.Params, PrefixLoss: r.PrefixLoss, PrefixIsPlain: r.PrefixIsPlain, Sample: r.Sample}
	if b, err := json.Marshal(m); err == nil {
		// Only a cache: a failure to write it costs time next time, nothing else.
		atomicfile.WriteOwnFile(cachePath, b)
	}
	return nil
}

// measureLanguageModel counts a GPT's parameters, evaluates its
// prefix-only loss when it has no causal mask, and samples from it.
func measureLanguageModel(ctx context.Context, r *Result, opts Options, modelPath string) error {
	model, err := savedmodel.Load(modelPath)
	if err != nil {
		return err
	}
	r.Params = int(model.Spec.ParamCount())
	if model.Spec.Mask {
		r.PrefixLoss, r.PrefixIsPlain = r.TestLoss, true
	} else {
		cfg, err := config.Load(filepath.Join(r.Dir, train.ConfigFile), nil)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		// Without --data, eval cuts the run's own corpus with the run's
		// split and stride: the same test windows as the plain loss beside.
		err = gptg(ctx, opts.Exe, &out, stderrLog(r.Dir, "eval"), "eval", modelPath,
			"--batch", strconv.Itoa(cfg.Train.Batch), "--prefix-only")
		if err != nil {
			return fmt.Errorf("prefix-only evaluation: %v", err)
		}
		if r.PrefixLoss, err = parsePrefixLoss(out.String()); err != nil {
			return err
		}
	}
	r.Sample, err = sampleText(model, opts.SamplePrompt, r.Dir, opts.Backend)
	return err
}

// TranslationPrompt is what an encoder–decoder translates for its row of
// the table when the ablation gives no prompt: a fixed sentence, so the
// rows are comparable.
const TranslationPrompt = "In the beginning, God created the heavens and the earth."

// measureTranslation fills the row of an encoder–decoder run: its
// parameters, its test loss as the plain one (there is no prefix-only
// loss without a causal language model) and, as its sample, the greedy
// translation of the prompt.
func measureTranslation(r *Result, opts Options, modelPath string) error {
	model, err := translate.Load(modelPath)
	if err != nil {
		return err
	}
	r.Params = 0
	for _, t := range model.Tensors {
		r.Params += t.Len()
	}
	r.PrefixLoss, r.PrefixIsPlain = r.TestLoss, true
	prompt := opts.SamplePrompt
	if prompt == "" {
		prompt = TranslationPrompt
	}
	res, err := translate.NewTranslator(model, opts.Backend).Translate(prompt, translate.Options{Beam: 1})
	if errors.Is(err, translate.ErrInput) {
		// A model trained on short sentences cannot read the verse: the run
		// is sound, only its sample is missing.
		r.Sample = fmt.Sprintf("(no sample: %v)", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("translating %q: %w", prompt, err)
	}
	r.Sample = prompt + " → " + res.Text
	return nil
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
func readMetrics(r *Result) error {
	var curve, tests thinned
	err := train.EachMetricsRow(r.Dir, func(row train.MetricsRow) {
		r.Steps, r.TrainLoss, r.TokensPerS, r.WallSecs = row.Step, row.Loss, row.TokensPerSec, row.ElapsedSecs
		curve.add(row.Step, row.Loss)
		if row.TestLoss != nil {
			r.TestLoss = *row.TestLoss
			tests.add(row.Step, *row.TestLoss)
		}
	})
	if err != nil {
		return err
	}
	r.curve, r.tests = curve.points(), tests.points()
	if len(r.tests) == 0 {
		return fmt.Errorf("%s has no test loss", filepath.Join(r.Dir, train.MetricsFile))
	}
	return nil
}

// sampleText draws 80 tokens from the prompt with a fixed seed, so every
// row's sample is comparable and the table is reproducible.
func sampleText(m *savedmodel.Model, prompt, dir string, be graph.Backend) (string, error) {
	if _, err := m.Vocab.Encode(prompt); err != nil || prompt == "" {
		cfg, cerr := config.Load(filepath.Join(dir, train.ConfigFile), nil)
		if cerr != nil {
			return "", fmt.Errorf("no usable prompt (%q) and no run config to take one from: %w", prompt, cerr)
		}
		prompt = cfg.Sample.Prompt
	}
	if _, err := sample.EncodePrompt(m.Vocab, prompt); err != nil {
		// A word-level config that keeps the default prompt "\n" has no
		// word to start from: the run trained, only its sample cannot
		// start, and the table says why instead of calling the run failed.
		return fmt.Sprintf("(no sample: the prompt %q cannot start one: %v; set [sample] prompt)", prompt, err), nil
	}
	// The run trained in its own process; sampling here, in the ablation's,
	// must fit what this one may still take (as gptg sample checks its
	// own): if it does not, the run is still a trained run without a sample.
	graphs := 1
	if !m.Spec.Mask {
		graphs = m.Spec.Context // sample.New builds one per prompt length
	}
	if err := config.CheckMemory(m.Spec.ForwardMemory(1, m.Spec.Context, graphs), math.Inf(1), "sampling this model", ""); err != nil {
		return fmt.Sprintf("(no sample: %v)", err), nil
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

// progressLog prints which runs are done and how far the others are. A
// result's Status, Err and Reused are written only under its lock, by
// finished, because status reads them from the ticker's goroutine.
type progressLog struct {
	mu      sync.Mutex
	w       io.Writer
	results []*Result
	done    int
	start   time.Time
	ended   map[*Result]bool
}

func (p *progressLog) finished(r *Result, status Status, err error, reused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.Status, r.Err, r.Reused = status, err, reused
	p.done++
	p.ended[r] = true
	what := "done"
	switch {
	case err != nil:
		what = "FAILED: " + err.Error()
	case status != Finished:
		what = status.String()
	case reused:
		what = "already finished, reused"
	}
	fmt.Fprintf(p.w, "[%d/%d] %s: %s\n", p.done, len(p.results), runLabel(r.Spec), what)
}

// runLabel names a run in messages: its variant, and its seed when set.
func runLabel(s Spec) string {
	if s.Seed != 0 {
		return fmt.Sprintf("%s seed %d", s.Variant, s.Seed)
	}
	return s.Variant
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
	for _, r := range p.results {
		if p.ended[r] {
			continue
		}
		if step, ok := lastStep(r.Dir); ok {
			parts = append(parts, fmt.Sprintf("%s at step %d", runLabel(r.Spec), step))
		}
	}
	fmt.Fprintf(p.w, "%s: %d/%d finished; %s\n", time.Since(p.start).Round(time.Second), p.done, len(p.results), strings.Join(parts, ", "))
}

// lastStep reads the newest metrics row of a run in progress.
func lastStep(dir string) (step int, ok bool) {
	b, err := inputfile.ReadFile(filepath.Join(dir, train.MetricsFile), 1<<30) // a FIFO must not block
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

// mpirunError is the line that says why a training under mpirun failed,
// whose banners (framed by dashes) follow the ranks' output: rank 0's
// line (the last one of gptg's), else the first line of mpirun's own.
func mpirunError(lines []string) string {
	own, first := "", ""
	for _, l := range lines {
		switch l = strings.TrimSpace(l); {
		case strings.HasPrefix(l, "gptg "):
			own = l
		case first == "" && l != "" && !strings.HasPrefix(l, "---"):
			first = l
		}
	}
	if own != "" {
		return own
	}
	return first
}
