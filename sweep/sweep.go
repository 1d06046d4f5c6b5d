// Package sweep expands a grid of experiments (configs × override values
// × seeds) into a manifest of runs in a sweep folder, runs its entries one
// at a time or all of them, and collects the comparison table.
//
// The sweep folder holds the manifest and the run folders; the configs it
// names (by paths relative to the folder) and their corpora stay where they
// are, so a task needs the project's folder shared (Slurm) or on its
// volume (Kubernetes):
//
//	sweep.toml        the sweep file it was made from
//	manifest.jsonl    one line per run: index, variant, config, overrides, seed, run folder
//	runs/…            the run folders
//	failed/I.txt      the error of entry I's last failed attempt
//	events.log        one line per start, resume and end of a run, with host and pid
//
// Running an entry is idempotent: a finished run is skipped, an
// interrupted one resumed, a failed one skipped until asked to retry. So a
// Slurm array task or an Indexed Job pod that is preempted and requeued
// loses nothing; `gptg train`'s lock on the run folder keeps two of them
// from training into one folder at once.
package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/gptg/gptg/ablate"
	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
)

// File names inside a sweep folder.
const (
	ManifestFile = "manifest.jsonl"
	SweepFile    = "sweep.toml"
	RunsDir      = "runs"
	FailedDir    = "failed"
	EventsFile   = "events.log"
)

// maxEntries bounds a grid: past it a typo (a long list pasted twice) is
// more likely than a real study.
const maxEntries = 100000

// Entry is one run of the sweep. Paths are relative to the sweep folder,
// so the project folder holding it can be mounted anywhere (a Kubernetes
// volume); Dir always lies inside the sweep folder.
type Entry struct {
	Index   int      `json:"index"`
	Variant string   `json:"variant"`
	Config  string   `json:"config"`
	Sets    []string `json:"sets"`
	Seed    int64    `json:"seed,omitempty"`
	Dir     string   `json:"dir"`
}

// Spec is the entry as an ablate run, its paths joined to the sweep folder.
func (e Entry) Spec(dir string) ablate.Spec {
	cfg := e.Config
	if !filepath.IsAbs(cfg) {
		cfg = filepath.Join(dir, cfg)
	}
	return ablate.Spec{Variant: e.Variant, Config: cfg, Sets: e.Sets, Seed: e.Seed, Dir: filepath.Join(dir, e.Dir)}
}

// Plan is a parsed sweep file.
type Plan struct {
	Path     string
	Out      string   // the sweep folder
	Baseline string   // variant the others are compared with ("" = the first)
	Configs  []string // as given, relative to the sweep file's folder
	Seeds    []int64
	Keys     []string   // the [set] keys, in file order
	Values   [][]string // each key's values, as --set would take them
}

// Error is a problem with the sweep file or folder (exit code 2).
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

// Parse reads a sweep file:
//
//	configs = ["configs/ablation/2-causal.toml", "configs/ablation/3-qkv.toml"]
//	seeds = 2                 # or a list: [1, 2, 42]; absent: each config's own seed
//	out = "runs/sweep-lr"     # default runs/<sweep file name>
//	baseline = "3-qkv"        # optional
//	[set]
//	"train.lr" = [3e-4, 1e-3] # a list: one run per value
//	"train.epochs" = 0.05     # one value: applied to every run
//
// Config paths are relative to the sweep file, as extends paths are.
func Parse(path string) (*Plan, error) {
	var raw struct {
		Configs  []string       `toml:"configs"`
		Seeds    any            `toml:"seeds"`
		Out      string         `toml:"out"`
		Baseline string         `toml:"baseline"`
		Set      map[string]any `toml:"set"`
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, errorf("sweep file %s: %v", path, errors.Unwrap(err))
	}
	if !st.Mode().IsRegular() || st.Size() > 1<<20 {
		return nil, errorf("sweep file %s: not a regular file of at most 1 MB", path)
	}
	md, err := toml.DecodeFile(path, &raw)
	if err != nil {
		return nil, errorf("sweep file %s: %s", path, strings.Join(strings.Fields(err.Error()), " "))
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, errorf("sweep file %s: unknown key %s (allowed: configs, seeds, out, baseline, [set])", path, und[0])
	}
	if len(raw.Configs) == 0 {
		return nil, errorf("sweep file %s: configs: name at least one config file", path)
	}
	p := &Plan{Path: path, Out: raw.Out, Baseline: raw.Baseline}
	for _, c := range raw.Configs {
		if c == "" {
			return nil, errorf("sweep file %s: configs: an empty file name", path)
		}
		if !filepath.IsAbs(c) {
			c = filepath.Join(filepath.Dir(path), c)
		}
		p.Configs = append(p.Configs, c)
	}
	if p.Out == "" {
		name, err := ablate.RunName(path)
		if err != nil {
			return nil, errorf("%v", err)
		}
		p.Out = filepath.Join("runs", name)
	}
	if p.Seeds, err = seeds(raw.Seeds); err != nil {
		return nil, errorf("sweep file %s: seeds: %v", path, err)
	}
	// The [set] keys in the order the file gives them, so that the
	// expansion is the one the reader expects.
	for _, k := range md.Keys() {
		if len(k) == 2 && k[0] == "set" {
			p.Keys = append(p.Keys, k[1])
		}
	}
	for _, key := range p.Keys {
		if key == "train.out" {
			return nil, errorf("sweep file %s: set.%q: the sweep gives every run its own folder under out; train.out cannot be set", path, key)
		}
		vals, err := setValues(raw.Set[key])
		if err != nil {
			return nil, errorf("sweep file %s: set.%q: %v", path, key, err)
		}
		p.Values = append(p.Values, vals)
	}
	return p, nil
}

func seeds(v any) ([]int64, error) {
	switch s := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return ablate.ParseSeeds(strconv.FormatInt(s, 10))
	case []any:
		var out []int64
		for _, x := range s {
			n, ok := x.(int64)
			if !ok || n < 1 || slices.Contains(out, n) {
				return nil, fmt.Errorf("%v: seeds must be distinct positive integers", x)
			}
			if len(out) == 1000 {
				return nil, errors.New("a list of more than 1000 seeds")
			}
			out = append(out, n)
		}
		if len(out) == 0 {
			return nil, errors.New("an empty list gives no runs")
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected a count or a list of integers, got %v", v)
}

// setValues turns a [set] value (one value or a list) into --set values.
func setValues(v any) ([]string, error) {
	list, isList := v.([]any)
	if !isList {
		list = []any{v}
	}
	if len(list) == 0 {
		return nil, errors.New("an empty list gives no runs")
	}
	var out []string
	seen := map[string]bool{}
	for _, x := range list {
		var s string
		switch y := x.(type) {
		case int64:
			s = strconv.FormatInt(y, 10)
		case float64:
			s = strconv.FormatFloat(y, 'g', -1, 64)
		case bool:
			s = strconv.FormatBool(y)
		case string:
			s = y
			if y == "" || strings.ContainsAny(y, " \t\r\n\"'#=\\,[]{}") {
				b, _ := toml.Marshal(map[string]string{"v": y})
				s = strings.TrimSpace(strings.TrimPrefix(string(b), "v = "))
			}
		default:
			return nil, fmt.Errorf("%v: expected a number, a boolean or a string", x)
		}
		if seen[s] {
			return nil, fmt.Errorf("the value %s appears twice", s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

// Expand gives the plan's runs: for each config (in order), each
// combination of the [set] values (the first key varying slowest), each
// seed. Keys with one value apply to every run and are left out of the
// names; the others name the variant ("3-qkv train.lr=0.001") and its run
// folder (runs/3-qkv/train.lr=0.001/seed-2). Every combination is loaded
// as a config here, so a bad value is refused before anything runs.
func (p *Plan) Expand() ([]Entry, error) {
	seeds := p.Seeds
	if len(seeds) == 0 {
		seeds = []int64{0}
	}
	if err := p.checkSize(len(seeds)); err != nil {
		return nil, err
	}
	names := map[string]string{}
	var entries []Entry
	combos := p.combinations()
	for _, cfgPath := range p.Configs {
		name, err := ablate.RunName(cfgPath)
		if err != nil {
			return nil, errorf("%v", err)
		}
		if other, dup := names[name]; dup {
			return nil, errorf("sweep file %s: configs %s and %s both give the run name %q", p.Path, other, cfgPath, name)
		}
		names[name] = cfgPath
		for _, combo := range combos {
			var sets, varying []string
			for k, i := range combo {
				kv := p.Keys[k] + "=" + p.Values[k][i]
				sets = append(sets, kv)
				if len(p.Values[k]) > 1 {
					varying = append(varying, kv)
				}
			}
			// Against train.max_memory only: the runs may train on a
			// cluster's machines (sweep emit), not this one; each run
			// checks its own process's limits when it starts.
			c, err := config.Load(cfgPath, sets)
			if err == nil {
				err = c.CheckTrainMemoryLimit()
			}
			if err != nil {
				return nil, errorf("sweep file %s: %v", p.Path, err)
			}
			variant, dir := name, filepath.Join(RunsDir, name)
			if len(varying) > 0 {
				variant += " " + strings.Join(varying, " ")
				dir = filepath.Join(dir, folderName(strings.Join(varying, ",")))
			}
			relConfig, err := relativeTo(p.Out, cfgPath)
			if err != nil {
				return nil, err
			}
			for _, seed := range seeds {
				e := Entry{Index: len(entries), Variant: variant, Config: relConfig,
					Sets: sets, Seed: seed, Dir: dir}
				if seed != 0 {
					e.Dir = filepath.Join(dir, "seed-"+strconv.FormatInt(seed, 10))
				}
				if e.Sets == nil {
					e.Sets = []string{}
				}
				entries = append(entries, e)
			}
		}
	}
	if p.Baseline != "" && !slices.ContainsFunc(entries, func(e Entry) bool { return e.Variant == p.Baseline }) {
		return nil, errorf("sweep file %s: baseline %q is not one of the variants (%s)", p.Path, p.Baseline, entries[0].Variant)
	}
	return entries, nil
}

// checkSize refuses a grid of more than maxEntries runs, counted before
// any is built: a grid is a product, and building one of 10^12
// combinations to find it too large would exhaust memory.
func (p *Plan) checkSize(seeds int) error {
	n := len(p.Configs) * seeds
	for _, vals := range p.Values {
		if n > maxEntries {
			break // n cannot shrink; stop before it can overflow
		}
		n *= len(vals)
	}
	if n > maxEntries {
		return errorf("sweep file %s: the grid has more than %d runs (%s); at most %d", p.Path, maxEntries, p.gridSizes(seeds), maxEntries)
	}
	return nil
}

// combinations lists the [set] values' combinations as indexes into
// p.Values, the first key varying slowest.
func (p *Plan) combinations() [][]int {
	combos := [][]int{nil}
	for _, vals := range p.Values {
		var next [][]int
		for _, c := range combos {
			for i := range vals {
				next = append(next, append(slices.Clone(c), i))
			}
		}
		combos = next
	}
	return combos
}

// gridSizes says what multiplies: "2 configs × 40 × 40 values × 1000 seeds".
func (p *Plan) gridSizes(seeds int) string {
	parts := []string{fmt.Sprintf("%d configs", len(p.Configs))}
	var vals []string
	for _, v := range p.Values {
		vals = append(vals, strconv.Itoa(len(v)))
	}
	if len(vals) > 0 {
		parts = append(parts, strings.Join(vals, " × ")+" values")
	}
	parts = append(parts, fmt.Sprintf("%d seeds", seeds))
	return strings.Join(parts, " × ")
}

// relativeTo gives path relative to dir (both taken from the working
// directory), or path made absolute when there is no relative way.
func relativeTo(dir, path string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	absPath, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(absDir, absPath); err == nil {
		return rel, nil
	}
	return absPath, nil
}

// folderName keeps the characters that are safe in a folder name
// everywhere and replaces the others with "_".
func folderName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._=,+-", c) >= 0
		if !ok {
			b[i] = '_'
		}
	}
	out := string(b)
	if strings.HasPrefix(out, ".") {
		out = "_" + out[1:]
	}
	return out
}

// Create expands the plan into its sweep folder: the manifest and a copy
// of the sweep file. A folder that already holds
// another sweep is refused; the same sweep again is a no-op.
func Create(p *Plan) ([]Entry, error) {
	// A control character in the folder's name would reach terminals,
	// logs and the scripts sweep emit writes.
	if !quote.Printable(p.Out) {
		return nil, errorf("sweep file %s: out %s holds a control character: choose a plain folder name", quote.Name(p.Path), quote.Value(p.Out))
	}
	entries, err := p.Expand()
	if err != nil {
		return nil, err
	}
	manifest, err := encodeManifest(entries)
	if err != nil {
		return nil, err
	}
	if old, err := inputfile.ReadFile(filepath.Join(p.Out, ManifestFile), maxManifestBytes); err == nil {
		if !bytes.Equal(old, manifest) {
			return nil, errorf("%s already holds another sweep (its %s differs): choose another out, or remove the folder", p.Out, ManifestFile)
		}
	} else if entries, _ := os.ReadDir(p.Out); len(entries) > 0 {
		return nil, errorf("%s exists and is not a sweep folder: choose another out", p.Out)
	}
	if err := os.MkdirAll(p.Out, 0o755); err != nil {
		return nil, fmt.Errorf("sweep folder: %w", err)
	}
	text, err := os.ReadFile(p.Path)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteOwnFile(filepath.Join(p.Out, SweepFile), text); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteOwnFile(filepath.Join(p.Out, ManifestFile), manifest); err != nil {
		return nil, err
	}
	return entries, nil
}

func encodeManifest(entries []Entry) ([]byte, error) {
	var b bytes.Buffer
	for _, e := range entries {
		line, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// maxManifestBytes and maxManifestLine bound a manifest: 100,000 entries
// (a grid's limit) of a few hundred bytes each, a line of a long variant.
const (
	maxManifestBytes = 256 << 20
	maxManifestLine  = 1 << 20
)

// Load reads a sweep folder's manifest and checks that its entries are
// numbered 0..N-1 and stay inside the folder.
func Load(dir string) ([]Entry, error) {
	// A regular file only, of a bounded size: a FIFO would block the
	// open, a device would be read forever.
	f, _, err := inputfile.Open(filepath.Join(dir, ManifestFile), maxManifestBytes)
	if err != nil {
		var ie *inputfile.Error
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, errorf("%s is not a sweep folder: it has no %s (make one with gptg sweep SWEEP.toml)", dir, ManifestFile)
		case errors.As(err, &ie):
			return nil, errorf("%s", ie.Error())
		}
		return nil, fmt.Errorf("sweep folder %s: %w", dir, err)
	}
	defer f.Close()
	var entries []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxManifestLine)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, errorf("%s line %d: %v", filepath.Join(dir, ManifestFile), len(entries)+1, err)
		}
		if e.Index != len(entries) || !inside(e.Dir) || e.Config == "" || e.Variant == "" {
			return nil, errorf("%s line %d: not an entry gptg sweep wrote", filepath.Join(dir, ManifestFile), len(entries)+1)
		}
		entries = append(entries, e)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return nil, errorf("%s line %d: longer than %d bytes, not an entry gptg sweep wrote", filepath.Join(dir, ManifestFile), len(entries)+1, maxManifestLine)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if len(entries) == 0 {
		return nil, errorf("%s is empty", filepath.Join(dir, ManifestFile))
	}
	return entries, nil
}

// inside says a manifest path stays within the sweep folder.
func inside(rel string) bool {
	return rel != "" && filepath.IsLocal(rel)
}

// Baseline reads the baseline a sweep folder's sweep file names ("" = none).
func Baseline(dir string) string {
	var raw struct {
		Baseline string `toml:"baseline"`
	}
	toml.DecodeFile(filepath.Join(dir, SweepFile), &raw)
	return raw.Baseline
}
