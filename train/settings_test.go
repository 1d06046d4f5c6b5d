package train_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
)

// A setting is used or refused, never accepted and ignored. This file
// proves it for every key config.Keys() lists, on both architectures: a
// tiny decoder-only model on a text corpus and a tiny encoder–decoder on
// sentence pairs. Each key has, per architecture, one or more changes
// from that architecture's baseline config (alternatives, below); each
// change is either
//
//   - refused: config.Load fails with one line that names the key, or
//   - used: the run with the change differs from the run without it in
//     something the run does (observed): the weights it writes (bit for
//     bit), metrics.jsonl's steps and losses, the number of steps, the
//     run folder and its files, the text `gptg sample` draws with the
//     run's [sample] table, the thread count the trainer ran on, the
//     steps after which a checkpoint was written, or a refusal by the run
//     that names the key (a corpus that does not match data.sha256).
//
// A change may need companions (train.epochs counts only without
// train.max_steps): they are set in both runs, so the change is the only
// difference.

// change is one alternative value of a key for one architecture.
type change struct {
	value  string   // as --set takes it; see expand for {dir}, {run}, {url}
	with   []string // companion settings, "key=value", in both runs
	refuse bool     // config.Load must refuse it, else the run must use it
}

// use and refuse make the changes of the table.
func use(value string, with ...string) []change { return []change{{value: value, with: with}} }
func refuse(value string, with ...string) []change {
	return []change{{value: value, with: with, refuse: true}}
}

// alternatives are the changes of each key: for the decoder-only model
// (gpt) and for the encoder–decoder (translation). A key config gains is
// missing here until someone says what it does on each architecture.
var alternatives = map[string]struct{ gpt, translation []change }{
	"data.path":       {use("{dir}/other.txt"), use("{dir}/other.tsv")},
	"data.url":        {use("{url}/tiny.txt", "data.path={run}/downloaded.txt"), use("{url}/toy.tsv", "data.path={run}/downloaded.tsv")},
	"data.sha256":     {use(zeros64), use(zeros64)},
	"data.tokenizer":  {use("word"), refuse("char")},
	"data.split":      {use("0.8"), use("0.7")},
	"data.vocab_size": {use("300", "data.tokenizer=bpe", "data.vocab_size=280"), refuse("300")},
	"data.val_path":   {refuse("val.bin"), refuse("val.bin")},
	"data.val_sha256": {refuse("0000000000000000000000000000000000000000000000000000000000000000"), refuse("0000000000000000000000000000000000000000000000000000000000000000")},
	"data.val_size":   {refuse("10"), refuse("10")},
	"data.prepare":    {refuse("shakespeare"), refuse("shakespeare")},
	"data.stride":     {use("2"), refuse("3")},
	"data.sampling":   {use("random"), refuse("random")},
	"data.size":       {use("1"), use("1")},
	"data.format":     {refuse("pairs"), refuse("text")},
	"data.min_count":  {refuse("2"), use("30")},
	"data.min_source": {refuse("2"), use("2")},
	"data.max_source": {refuse("3"), use("3")},
	"data.max_target": {refuse("3"), use("3")},
	"data.buckets":    {refuse("2"), use("2")},

	"model.vocab":     {use("1000"), refuse("100")},
	"model.context":   {use("6"), append(use("8"), refuse("8", "model.positions=sinusoidal")...)},
	"model.embedding": {use("12"), use("16")},
	// The encoder–decoder's blocks size the stacks encoder_blocks and
	// decoder_blocks leave out (0).
	"model.blocks":     {use("2"), append(use("1", "model.encoder_blocks=0", "model.decoder_blocks=0"), refuse("3")...)},
	"model.heads":      {use("4"), use("4")},
	"model.qkv":        {use("false"), refuse("false")},
	"model.mask":       {use("false"), refuse("false")},
	"model.out_proj":   {use("false"), refuse("false")},
	"model.residual":   {use("false"), refuse("false")},
	"model.norm":       {use("post"), append(use("pre"), refuse("none")...)},
	"model.activation": {use("relu"), use("relu")},
	// The encoder–decoder's ff_mult sizes the feed-forward layer when
	// ff_hidden is left out (0).
	"model.ff_mult":         {use("3"), append(use("2", "model.ff_hidden=0"), refuse("3")...)},
	"model.dtype":           {append(use("float32"), use("bfloat16")...), append(use("float64"), refuse("bfloat16")...)},
	"model.tie_embeddings":  {use("true"), use("true")},
	"model.bias":            {use("false"), refuse("false")},
	"model.final_norm":      {use("true"), refuse("true")},
	"model.init":            {use("gpt2"), refuse("gpt2")},
	"model.dropout":         {use("0.1"), use("0.1")},
	"model.arch":            {refuse("encoder-decoder"), refuse("decoder-only")},
	"model.encoder_blocks":  {refuse("2"), use("2")},
	"model.decoder_blocks":  {refuse("2"), use("2")},
	"model.ff_hidden":       {refuse("16"), use("8")},
	"model.positions":       {refuse("sinusoidal"), use("sinusoidal")},
	"model.label_smoothing": {refuse("0.1"), use("0.1")},

	"train.batch": {use("3"), use("4")},
	// train.max_steps decides the length when it is set (the baselines
	// set both); epochs decide without it.
	"train.epochs":    {use("0.005", "train.max_steps=0"), use("0.1", "train.max_steps=0")},
	"train.max_steps": {use("4"), use("4")},
	// The noam schedule has no lr: d^-0.5 · min(step^-0.5, step · warmup^-1.5).
	"train.lr":               {append(use("0.003"), refuse("0.003", "train.schedule=noam")...), append(use("0.003"), refuse("0.003", "train.schedule=noam")...)},
	"train.min_lr":           {append(use("0"), refuse("0", "train.schedule=noam")...), append(use("0"), refuse("0", "train.schedule=noam")...)},
	"train.warmup":           {use("4"), use("4")},
	"train.weight_decay":     {use("0.5"), use("0.5")},
	"train.beta1":            {use("0.5"), use("0.5")},
	"train.beta2":            {use("0.9"), use("0.9")},
	"train.eps":              {use("0.001"), use("0.001")},
	"train.clip":             {use("0.01"), use("0.01")},
	"train.seed":             {use("7"), use("7")},
	"train.eval_every":       {use("2"), use("2")},
	"train.out":              {use("{run}/elsewhere"), use("{run}/elsewhere")},
	"train.log_every":        {use("2"), use("2")},
	"train.checkpoint_every": {use("2"), use("2")},
	"train.eval_batches":     {use("2"), use("2")},
	"train.grad_accum":       {use("2"), use("2")},
	"train.decay":            {use("matrices"), use("matrices")},
	"train.threads":          {use("2"), use("2")},
	"train.max_memory":       {use("0.000001"), use("0.000001")},
	"train.schedule":         {use("noam"), use("noam")},

	// A translation model translates (gptg translate --beam --alpha);
	// it does not sample.
	"sample.prompt":      {use("ROMEO:"), refuse("hello")},
	"sample.tokens":      {use("8"), refuse("8")},
	"sample.temperature": {use("0.5"), refuse("0.5")},
	"sample.top_k":       {use("2"), refuse("2")},
	"sample.top_p":       {use("0.5"), refuse("0.5")},
}

// sameOutputs are the keys that by design leave the weights, the metrics
// and the samples as they are: each is seen used in one observation
// alone, named here, and the test checks that nothing else differs.
var sameOutputs = map[string]string{
	"train.threads":          "threads",     // the same bits for every thread count
	"train.checkpoint_every": "checkpoints", // the last checkpoint is the same
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"

// arch is an architecture's baseline: a config file's text.
type arch struct {
	name   string
	config func(e *settingsEnv, run string) string
}

var architectures = []arch{
	{"decoder-only", func(e *settingsEnv, run string) string {
		// Every key the changes above move is written out, so that
		// the baseline does not depend on config's defaults.
		return fmt.Sprintf(`[data]
path = %q
stride = 4

[model]
context = 8
embedding = 8
blocks = 1
heads = 2
residual = true
norm = "pre"
ff_mult = 2
dtype = "float64"

[train]
batch = 2
max_steps = 6
epochs = 0.01
warmup = 2
log_every = 1
threads = 1
out = %q

[sample]
tokens = 24
`, e.tiny, filepath.Join(run, "run"))
	}},
	{"encoder-decoder", func(e *settingsEnv, run string) string {
		return toypairs.Config(e.pairs, filepath.Join(run, "run"), 6, "", "epochs = 0.2\nwarmup = 2\nlog_every = 1\nthreads = 1\n")
	}},
}

// TestEverySettingIsUsedOrRefused walks config.Keys() × the two
// architectures through the changes of alternatives.
func TestEverySettingIsUsedOrRefused(t *testing.T) {
	e := newSettingsEnv(t)
	for _, a := range architectures {
		for _, key := range config.Keys() {
			alt, ok := alternatives[key]
			changes := alt.gpt
			if a.name == "encoder-decoder" {
				changes = alt.translation
			}
			if !ok || len(changes) == 0 {
				t.Errorf("%s: %s has no change in alternatives (train/settings_test.go): add %q with a value for each architecture, use(VALUE) if the run must use it, refuse(VALUE) if config.Load must refuse it",
					a.name, key, key)
				continue
			}
			for _, c := range changes {
				e.check(t, a, key, c)
			}
		}
	}
}

// settingsEnv holds what the runs share: the corpora, a server that
// hands them out for data.url, and the observations made so far (each
// baseline is observed once).
type settingsEnv struct {
	dir, tiny, pairs, url string
	seen                  map[string]*observed
	runs                  int
}

func newSettingsEnv(t *testing.T) *settingsEnv {
	dir := t.TempDir()
	text, err := os.ReadFile(testmodel.TinyText())
	if err != nil {
		t.Fatal(err)
	}
	toy := toypairs.Random(rand.New(rand.NewPCG(5, 6)), 300, 30, 1, 4)
	other := toypairs.Random(rand.New(rand.NewPCG(7, 8)), 300, 30, 1, 4)
	files := map[string]string{"tiny.txt": string(text), "other.txt": string(text[:len(text)*2/3]), "toy.tsv": toy, "other.tsv": other}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return &settingsEnv{dir: dir, tiny: filepath.Join(dir, "tiny.txt"), pairs: filepath.Join(dir, "toy.tsv"), url: srv.URL, seen: map[string]*observed{}}
}

// expand fills in a value's placeholders: {dir}, the folder of the
// shared corpora; {run}, the folder of this one run; {url}, the server
// of the shared corpora.
func (e *settingsEnv) expand(s, run string) string {
	return strings.NewReplacer("{dir}", e.dir, "{run}", run, "{url}", e.url).Replace(s)
}

// check runs one change of key on architecture a.
func (e *settingsEnv) check(t *testing.T, a arch, key string, c change) {
	t.Helper()
	set := key + "=" + c.value
	what := fmt.Sprintf("%s: --set %s", a.name, set)
	if len(c.with) > 0 {
		what += " (with " + strings.Join(c.with, ", ") + ")"
	}
	changed := e.observe(t, a, append(slices.Clone(c.with), set))
	if c.refuse {
		switch {
		case changed.loadErr == "":
			t.Errorf("%s: accepted, and alternatives says config.Load refuses it: refuse it in config's validation (one line naming %s and the architecture), or make the run use it and write use(%q) in alternatives", what, key, c.value)
		case strings.Contains(changed.loadErr, "\n") || !namesKey(changed.loadErr, key):
			t.Errorf("%s: refused with %q: want one line that names %s", what, changed.loadErr, key)
		default:
			t.Logf("%s: refused: %s", what, changed.loadErr[strings.Index(changed.loadErr, key):])
		}
		return
	}
	if changed.loadErr != "" {
		t.Errorf("%s: config.Load refused it (%s), and alternatives says the run uses it", what, changed.loadErr)
		return
	}
	base := e.observe(t, a, c.with)
	if base.loadErr != "" {
		t.Fatalf("%s: the baseline does not load: %s", what, base.loadErr)
	}
	if changed.runErr != "" && changed.runErr != base.runErr && !namesKey(changed.runErr, key) {
		t.Errorf("%s: the run failed with %q, which does not name %s: choose another value in alternatives, or make the error name the key", what, changed.runErr, key)
		return
	}
	diffs := base.differences(changed)
	if len(diffs) == 0 {
		t.Errorf("%s: accepted and ignored: the run is the same as without it (weights, metrics, steps, files, samples, threads, checkpoints); make the run use it, or refuse it in config's validation with one line naming %s", what, key)
		return
	}
	if only, ok := sameOutputs[key]; ok && (len(diffs) != 1 || diffs[0] != only) {
		t.Errorf("%s: changed %v, and it should change only %s (sameOutputs)", what, diffs, only)
	}
	if changed.runErr != "" {
		t.Logf("%s: refused by the run: %s", what, changed.runErr)
		return
	}
	t.Logf("%s: changes %s", what, strings.Join(diffs, ", "))
}

// namesKey reports whether msg names key, as "data.sha256" or as "[data] sha256".
func namesKey(msg, key string) bool {
	section, name, _ := strings.Cut(key, ".")
	return strings.Contains(msg, key) || strings.Contains(msg, "["+section+"] "+name)
}

// observed is what a run did, in the terms that say whether a setting
// was used.
type observed struct {
	loadErr     string // config.Load's error; nothing else is set then
	runErr      string // train.Run's error; the outputs below are then empty
	weights     [sha256.Size]byte
	metrics     string // step, loss and test loss of each row of metrics.jsonl
	steps       int
	folder      string // the run folder, relative to the run's own folder
	files       string // the names of the files in it
	sample      string // what sampling with the run's [sample] table draws (a decoder-only model)
	threads     int
	checkpoints string // the steps after which checkpoint.safetensors was written
}

// differences names the observations in which o and p differ.
func (o *observed) differences(p *observed) []string {
	if o.runErr != p.runErr && (o.runErr == "" || p.runErr == "") {
		return []string{"run error"} // and so everything else
	}
	var d []string
	add := func(name string, differ bool) {
		if differ {
			d = append(d, name)
		}
	}
	add("run error", o.runErr != p.runErr)
	add("weights", o.weights != p.weights)
	add("metrics", o.metrics != p.metrics)
	add("steps", o.steps != p.steps)
	add("run folder", o.folder != p.folder)
	add("files", o.files != p.files)
	add("samples", o.sample != p.sample)
	add("threads", o.threads != p.threads)
	add("checkpoints", o.checkpoints != p.checkpoints)
	return d
}

// observe loads a's baseline with sets applied and trains it on one
// core (train.threads = 1 in the baselines), in a folder of its own.
func (e *settingsEnv) observe(t *testing.T, a arch, sets []string) *observed {
	t.Helper()
	id := a.name + " " + strings.Join(sets, " ")
	if o, ok := e.seen[id]; ok {
		return o
	}
	e.runs++
	run := filepath.Join(e.dir, fmt.Sprintf("run%d", e.runs))
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(run, "c.toml")
	if err := os.WriteFile(path, []byte(a.config(e, run)), 0o644); err != nil {
		t.Fatal(err)
	}
	expanded := make([]string, len(sets))
	for i, s := range sets {
		expanded[i] = e.expand(s, run)
	}
	o := &observed{}
	e.seen[id] = o
	cfg, err := config.Load(path, expanded)
	if err != nil {
		o.loadErr = err.Error()
		return o
	}
	var checkpoints []string
	var last os.FileInfo
	res, err := train.Run(context.Background(), cfg, train.Options{Log: io.Discard, AfterStep: func(step int) {
		fi, err := os.Stat(filepath.Join(cfg.Train.Out, train.CheckpointFile))
		if err == nil && (last == nil || !os.SameFile(fi, last)) {
			checkpoints = append(checkpoints, fmt.Sprint(step))
			last = fi
		}
	}})
	if err != nil {
		o.runErr = err.Error()
		return o
	}
	o.steps, o.threads, o.checkpoints = res.Steps, res.Threads, strings.Join(checkpoints, " ")
	if o.folder, err = filepath.Rel(run, res.Dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range entries {
		if f.Name() != ".gptg.lock" {
			names = append(names, f.Name())
		}
	}
	o.files = strings.Join(names, " ")
	o.weights = weightsDigest(t, filepath.Join(res.Dir, train.ModelFile))
	o.metrics = metricsColumns(t, filepath.Join(res.Dir, train.MetricsFile))
	if !cfg.Model.EncoderDecoder() {
		o.sample = sampleRun(t, res.Dir)
	}
	return o
}

// weightsDigest hashes a model file's tensors (names, shapes, values),
// not its metadata, which records the config.
func weightsDigest(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	f, err := modelfile.Read(path, modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range f.Tensors {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		x := f.Tensors[name]
		fmt.Fprintf(h, "%s %v %s\n", name, x.Shape, x.DType())
		for _, v := range x.F32 {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
		for _, v := range x.F64 {
			binary.Write(h, binary.LittleEndian, math.Float64bits(v))
		}
	}
	var d [sha256.Size]byte
	copy(d[:], h.Sum(nil))
	return d
}

// metricsColumns is the step, training loss and test loss of each row of
// metrics.jsonl: not its timings, which differ between any two runs.
func metricsColumns(t *testing.T, path string) string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for line := range strings.Lines(string(text)) {
		var row struct {
			Step     int      `json:"step"`
			Loss     float64  `json:"loss"`
			TestLoss *float64 `json:"test_loss"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		fmt.Fprintf(&b, "%d %x", row.Step, math.Float64bits(row.Loss))
		if row.TestLoss != nil {
			fmt.Fprintf(&b, " %x", math.Float64bits(*row.TestLoss))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sampleRun draws from a run's model with the [sample] table of its
// config.toml, as `gptg sample RUN` does with no flags: the prompt, then
// the tokens drawn (or the error that stopped them).
func sampleRun(t *testing.T, dir string) string {
	t.Helper()
	cfg, err := config.Load(filepath.Join(dir, train.ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := savedmodel.Load(filepath.Join(dir, train.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sample.New(m, graph.Backend{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sm := cfg.Sample
	var b strings.Builder
	b.WriteString(sm.Prompt)
	err = s.Generate(sm.Prompt, sample.Options{Tokens: sm.Tokens, Temperature: sm.Temperature, TopK: sm.TopK, TopP: sm.TopP, Seed: 42}, func(tok string) error {
		b.WriteString(tok)
		return nil
	})
	if err != nil {
		fmt.Fprintf(&b, "\nerror: %v", err)
	}
	return b.String()
}
