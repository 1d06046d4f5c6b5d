package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/gptg/gptg/internal/inputfile"
)

// setSource is the Error.File of problems found in a --set override.
const setSource = "--set"

// maxExtends bounds an extends chain. Real chains are two or three files
// deep; the bound only stops symlink tricks that a cycle check cannot see.
const maxExtends = 32

// Error is a problem with a config file or a --set override. Its message is
// always a single line so the CLI can print it as is.
type Error struct {
	File string // config file, or "--set" for a command-line override
	Key  string // "model.heads"; empty when the whole file is at fault
	Msg  string // what is wrong and what is allowed
	Err  error  // underlying cause, if any (for errors.Is)
}

func (e *Error) Error() string {
	var s string
	switch {
	case e.Key == "" && e.File == "":
		s = "config: " + e.Msg
	case e.Key == "":
		s = fmt.Sprintf("config %s: %s", e.File, e.Msg)
	case e.File == "":
		s = fmt.Sprintf("config: %s: %s", e.Key, e.Msg) // a Config built in code
	case e.File == setSource:
		s = fmt.Sprintf("%s %s: %s", setSource, e.Key, e.Msg)
	default:
		s = fmt.Sprintf("%s: %s: %s", e.File, e.Key, e.Msg)
	}
	// Parser messages and file names may carry newlines; keep one line.
	return oneLine.Replace(s)
}

var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

func (e *Error) Unwrap() error { return e.Err }

// Default returns the seed chapter's settings. Stride and Out are left 0
// and "" (meaning context/2 and runs/<Name>); Load fills them in.
func Default() *Config {
	return &Config{
		Data: Data{
			Path: "builtin:tinyshakespeare", // corpus/builtin

			Tokenizer: "char",
			Split:     0.9,
			Sampling:  "windows",
			Format:    "text",
			MinCount:  1,
			MinSource: 1,
			MaxSource: 16,
			MaxTarget: 24,
			Buckets:   1,
		},
		Model: DefaultModel(),
		Train: Train{
			Batch:           4,
			Epochs:          2,
			LR:              1e-3,
			MinLR:           1e-3 / 10,
			Warmup:          100,
			WeightDecay:     0.01,
			Beta1:           0.9,
			Beta2:           0.999,
			Eps:             1e-8,
			Clip:            1.0,
			Seed:            42,
			LogEvery:        100,
			CheckpointEvery: 1000,
			GradAccum:       1,
			Decay:           "all",
			MaxMemory:       DefaultMaxMemory,
			Schedule:        "cosine",
		},
		Sample: Sample{
			Prompt:      "\n",
			Tokens:      256,
			Temperature: 1.0,
		},
	}
}

// setting is one key's value after merging, with where it came from so that
// a range error points at the file (or --set) that has to change.
type setting struct {
	value any    // already converted by field.convert
	from  string // file path or "--set"
}

// Load reads the experiment file at path, follows its extends chain, applies
// the --set overrides in sets ("section.key=value"), fills in derived
// defaults and validates the result. Every error is an *Error.
//
// Relative data.path and train.out are kept as written and so are relative to
// the current working directory (the repository root in practice), not to the
// config file: configs are meant to be run from the root, and this way a path
// means the same thing in a file, in --set and in the stored config.toml.
func Load(path string, sets []string) (*Config, error) {
	values := map[string]setting{}
	parent, err := loadChain(path, nil, values)
	if err != nil {
		return nil, err
	}
	for _, s := range sets {
		name, v, err := parseSet(s)
		if err != nil {
			return nil, err
		}
		values[name] = setting{value: v, from: setSource}
	}

	c, err := build(path, values)
	if err != nil {
		return nil, err
	}
	c.Extends = parent
	return c, nil
}

// Parse reads a self-contained config (no extends) from text, as Load
// reads a file: a run's checkpoint keeps the config it was trained with
// this way. name stands for the file in errors and gives the run name.
func Parse(name string, text []byte) (*Config, error) {
	if err := checkBounds(name, text); err != nil {
		return nil, err
	}
	own, base, err := parseFile(name, string(text))
	if err != nil {
		return nil, err
	}
	if base != "" {
		return nil, &Error{File: name, Key: "extends", Msg: "not allowed here (the config must be self-contained)"}
	}
	values := map[string]setting{}
	for key, v := range own {
		values[key] = setting{value: v, from: name}
	}
	return build(name, values)
}

// build turns merged values into a validated Config.
func build(path string, values map[string]setting) (*Config, error) {
	c := Default()
	c.Path = path
	c.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	for name, s := range values {
		getSchema().byName[name].set(c, s.value)
	}
	given := func(key string) bool { _, ok := values[key]; return ok }
	if err := c.checkArch(path, values); err != nil {
		return nil, err
	}
	c.resolve(given)

	origin := func(key string) string {
		if s, ok := values[key]; ok {
			return s.from
		}
		return path // a default; blame the file being loaded
	}
	if err := c.validate(origin); err != nil {
		return nil, err
	}
	if err := c.checkPairs(origin); err != nil {
		return nil, err
	}
	if err := c.checkUnread(origin); err != nil {
		return nil, err
	}
	if s, ok := values["train.max_memory"]; ok {
		c.maxMemoryFrom = s.from // CheckTrainMemory blames it
	}
	if _, given := values["train.out"]; !given && !plainName(c.Name) {
		return nil, &Error{File: path, Key: "train.out",
			Msg: fmt.Sprintf("the file name gives the run name %q, which is not a plain folder name: rename the file or set train.out", c.Name)}
	}
	return c, nil
}

// plainName reports whether a run name derived from a file name can be a
// folder under runs/: not empty, not "." or "..", no separator, no
// leading dot (a hidden folder nobody would look for) and no control
// characters. `...toml` would otherwise name the run "..", the working
// directory.
func plainName(name string) bool {
	if name == "" || strings.HasPrefix(name, ".") || strings.ContainsAny(name, `/\`) {
		return false
	}
	for _, r := range name {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// resolve turns "use the default" zeros into concrete values, so code that
// reads a loaded Config never has to know these rules.
func (c *Config) resolve(given func(key string) bool) {
	if !given("train.min_lr") {
		// Follow the final lr, wherever it was changed (base, child, --set).
		c.Train.MinLR = c.Train.LR / 10
	}
	if c.Data.Stride == 0 {
		c.Data.Stride = max(1, c.Model.Context/2)
	}
	if c.Train.Out == "" {
		c.Train.Out = filepath.Join("runs", c.Name)
	}
	c.Data.SHA256 = strings.ToLower(c.Data.SHA256)
	if c.Data.Tokenizer == "bpe" && c.Model.Vocab == 0 {
		c.Model.Vocab = c.Data.VocabSize // known before the data is read
	}
	if c.Data.Format == FormatTokens && !given("data.split") {
		c.Data.Split = 0 // the token files are split already
	}
	c.Data.ValSHA256 = strings.ToLower(c.Data.ValSHA256)
	if c.Data.Format == "pairs" && !given("data.tokenizer") {
		c.Data.Tokenizer = "word" // pairs are read word by word
	}
	if m := &c.Model; m.EncoderDecoder() {
		if !given("model.norm") {
			m.Norm = "post" // the paper's; the decoder-only default "none" has no encoder-decoder
		}
		if m.EncoderBlocks == 0 {
			m.EncoderBlocks = m.Blocks
		}
		if m.DecoderBlocks == 0 {
			m.DecoderBlocks = m.Blocks
		}
		if m.FFHidden == 0 {
			m.FFHidden = m.FFMult * m.Embedding
		}
		// The paper's blocks have all of the decoder-only chapter's
		// switches on; checkArch refused a file that turns one off.
		m.QKV, m.Mask, m.OutProj, m.Residual = true, true, true, true
		if !given("model.context") && c.Data.Format == "pairs" {
			m.Context = max(c.Data.SourceLen(), c.Data.TargetLen())
		}
	}
}

// checkArch refuses, before resolve turns them on, the decoder-only
// chapter's switches turned off in an encoder-decoder config: the paper's
// model always has them, and silently ignoring mask = false would mislead.
func (c *Config) checkArch(path string, values map[string]setting) error {
	if !c.Model.EncoderDecoder() {
		return nil
	}
	for _, key := range []string{"model.qkv", "model.mask", "model.out_proj", "model.residual"} {
		if s, ok := values[key]; ok && s.value == false {
			return &Error{File: s.from, Key: key, Msg: "cannot be false with model.arch = \"encoder-decoder\" (the paper's blocks always have Q/K/V projections, masks, the output projection and residuals): leave it out"}
		}
	}
	return nil
}

// checkPairs checks what ties the [data] and [model] tables together for
// the translation chapter. Validate leaves it out because a model file's
// [model] table is checked on its own.
func (c *Config) checkPairs(origin func(key string) string) error {
	v := &checker{origin: origin}
	pairs := c.Data.Format == "pairs"
	switch {
	case pairs && !c.Model.EncoderDecoder():
		v.fail("model.arch", "%q cannot read a pairs corpus (data.format = \"pairs\"): set arch = \"encoder-decoder\"", c.Model.Arch)
	case !pairs && c.Model.EncoderDecoder():
		v.fail("data.format", "%q is not a translation corpus: model.arch = \"encoder-decoder\" needs format = \"pairs\"", c.Data.Format)
	case pairs && c.Model.Context < max(c.Data.SourceLen(), c.Data.TargetLen()):
		v.fail("model.context", "%d is too short for data.max_source %d and data.max_target %d (needs at least %d: the longest sentence plus EOS; leave context out to get it)",
			c.Model.Context, c.Data.MaxSource, c.Data.MaxTarget, max(c.Data.SourceLen(), c.Data.TargetLen()))
	}
	return v.err
}

// loadChain reads path and, first, the files it extends, so that path's own
// values overwrite its base's in values, and returns the file path extends
// ("" if none). chain holds the files that extend path (outermost first)
// and is used to report cycles.
func loadChain(path string, chain []string, values map[string]setting) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &Error{File: path, Msg: err.Error(), Err: err}
	}
	parent := ""
	if len(chain) > 0 {
		parent = chain[len(chain)-1]
	}
	for i, c := range chain {
		if sameFile(c, abs) {
			cycle := append(append([]string{}, chain[i:]...), path)
			return "", &Error{File: parent, Key: "extends", Msg: "cycle: " + strings.Join(cycle, " -> ")}
		}
	}
	if len(chain) >= maxExtends {
		return "", &Error{File: parent, Key: "extends", Msg: fmt.Sprintf("chain is longer than %d files", maxExtends)}
	}

	raw, err := readConfigFile(path)
	if err != nil {
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error() // the path is already in the message
		}
		if errors.Is(err, fs.ErrNotExist) {
			msg = "no such file"
		}
		if parent != "" {
			return "", &Error{File: parent, Key: "extends", Msg: path + ": " + msg, Err: err}
		}
		return "", &Error{File: path, Msg: msg, Err: err}
	}

	if err := checkBounds(path, raw); err != nil {
		return "", err
	}
	own, base, err := parseFile(path, string(raw))
	if err != nil {
		return "", err
	}
	if base != "" {
		if !filepath.IsAbs(base) {
			base = filepath.Join(filepath.Dir(path), base)
		}
		if _, err := loadChain(base, append(slices.Clip(chain), path), values); err != nil {
			return "", err
		}
	}
	for name, v := range own {
		values[name] = setting{value: v, from: path}
	}
	return base, nil
}

// readConfigFile reads a regular file of at most MaxConfigSize bytes, so
// that a mistaken extends = "/dev/stdin" or a FIFO fails instead of
// blocking or reading forever, and checks the bounds the TOML parser needs.
func readConfigFile(path string) ([]byte, error) {
	raw, err := inputfile.ReadFile(path, MaxConfigSize)
	var ie *inputfile.Error
	if errors.As(err, &ie) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New(ie.Problem)}
	}
	return raw, err
}

// binaryKind names the files a config is most often mistaken for — a
// model file, a nanoGPT checkpoint or pickle — which the TOML parser would
// only call "NULL bytes; probably using UTF-16".
func binaryKind(text string) string {
	switch {
	case len(text) > 9 && text[8] == '{' && strings.IndexByte(text[:8], 0) >= 0:
		return "a safetensors model file (give it to sample, eval or inspect)"
	case strings.HasPrefix(text, "PK\x03\x04"):
		return "a zip archive (a PyTorch checkpoint? gptg import nanogpt reads those)"
	case strings.HasPrefix(text, "\x80") && len(text) > 1 && text[1] <= 5:
		return "a Python pickle"
	}
	return ""
}

// sameFile compares an entry of the chain (as given) with an absolute path.
func sameFile(given, abs string) bool {
	a, err := filepath.Abs(given)
	return err == nil && a == abs
}

// parseFile decodes one TOML file and checks every key and type in it. It
// returns the values keyed by "section.key" and the extends target, if any.
func parseFile(path, text string) (map[string]any, string, error) {
	if kind := binaryKind(text); kind != "" {
		return nil, "", &Error{File: path, Msg: "is " + kind + ", not a TOML config"}
	}
	var doc map[string]any
	md, err := toml.Decode(text, &doc)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, "", &Error{File: path, Msg: fmt.Sprintf("line %d: %s", pe.Position.Line, pe.Message), Err: err}
		}
		return nil, "", &Error{File: path, Msg: err.Error(), Err: err}
	}

	s := getSchema()
	values := map[string]any{}
	extends := ""
	for _, top := range sortedKeys(doc, md) {
		v := doc[top]
		if top == "extends" {
			e, ok := v.(string)
			if !ok {
				return nil, "", &Error{File: path, Key: top, Msg: "expected a string (a file name), got " + describe(v)}
			}
			if e == "" {
				return nil, "", &Error{File: path, Key: top, Msg: "must name a file, e.g. extends = \"shakespeare.toml\""}
			}
			extends = e
			continue
		}
		if !s.isSection(top) {
			return nil, "", unknownTopLevel(path, top, v)
		}
		table, ok := v.(map[string]any)
		if !ok {
			return nil, "", &Error{File: path, Key: top, Msg: fmt.Sprintf("expected a table [%s], got %s", top, describe(v))}
		}
		for _, key := range sortedKeys(table, md, top) {
			name := top + "." + key
			f, ok := s.byName[name]
			if !ok {
				return nil, "", unknownKey(path, top, key)
			}
			cv, err := f.convert(table[key])
			if err != nil {
				return nil, "", &Error{File: path, Key: name, Msg: err.Error()}
			}
			values[name] = cv
		}
	}
	return values, extends, nil
}

// unknownTopLevel explains a top-level key that is neither extends nor one
// of the tables. A plain key that belongs in a table (heads = 4 written
// before any [model] header) gets pointed at its table.
func unknownTopLevel(path, key string, v any) *Error {
	s := getSchema()
	var tables []string
	for _, sec := range s.sections {
		tables = append(tables, "["+sec+"]")
	}
	allowed := "(allowed at top level: extends, " + strings.Join(tables, ", ") + ")"

	if _, isTable := v.(map[string]any); isTable {
		msg := fmt.Sprintf("unknown table [%s]", key)
		if g := Suggest(key, s.sections); g != "" {
			msg += fmt.Sprintf("; did you mean [%s]?", g)
		}
		return &Error{File: path, Key: key, Msg: msg + " " + allowed}
	}
	msg := "unknown top-level key"
	for _, f := range s.fields {
		if f.key == key {
			msg += fmt.Sprintf("; did you mean %s? (put it under [%s])", f.name(), f.section)
			return &Error{File: path, Key: key, Msg: msg + " " + allowed}
		}
	}
	if g := Suggest(key, append([]string{"extends"}, s.sections...)); g != "" {
		msg += fmt.Sprintf("; did you mean %s?", g)
	}
	return &Error{File: path, Key: key, Msg: msg + " " + allowed}
}

// unknownKey explains a key that its table does not have.
func unknownKey(file, section, key string) *Error {
	keys := getSchema().keys[section]
	msg := "unknown key"
	if g := Suggest(key, keys); g != "" {
		msg += fmt.Sprintf("; did you mean %s.%s?", section, g)
	}
	msg += fmt.Sprintf(" (allowed: %s)", strings.Join(keys, ", "))
	return &Error{File: file, Key: section + "." + key, Msg: msg}
}

// parseSet parses one "section.key=value" override. The value is read as a
// TOML value when it is one (0.1, 4, true, "x y") and as a bare string
// otherwise, so --set sample.prompt=ROMEO: needs no shell-quoted quotes.
func parseSet(arg string) (string, any, error) {
	name, raw, ok := strings.Cut(arg, "=")
	name = strings.TrimSpace(name)
	if !ok {
		return "", nil, &Error{File: setSource, Key: arg, Msg: "expected section.key=value, e.g. --set train.epochs=0.1"}
	}
	s := getSchema()
	f, known := s.byName[name]
	if !known {
		section, key, dotted := strings.Cut(name, ".")
		if dotted && s.isSection(section) {
			return "", nil, unknownKey(setSource, section, key)
		}
		// "heads" (table left out) points at model.heads; otherwise the
		// table name itself may be misspelt, as in "modle.heads".
		guess := ""
		for _, f := range s.fields {
			if f.key == name {
				guess = f.name()
				break
			}
		}
		if guess == "" {
			guess = Suggest(name, s.allSettable())
		}
		msg := "unknown key"
		if guess != "" {
			msg += fmt.Sprintf("; did you mean %s?", guess)
		}
		msg += fmt.Sprintf(" (keys look like section.key with section one of %s)", strings.Join(s.sections, ", "))
		return "", nil, &Error{File: setSource, Key: name, Msg: msg}
	}

	v := any(raw)
	var doc map[string]any
	// Only accept the TOML reading if it yields exactly our one value; this
	// keeps "1\n[x]" and similar from smuggling in extra keys.
	if _, err := toml.Decode("v = "+raw, &doc); err == nil && len(doc) == 1 {
		v = doc["v"]
		if _, isString := v.(string); !isString && f.kind == reflect.String {
			v = raw // prompt=42 means the text "42"
		}
	}
	cv, err := f.convert(v)
	if err != nil {
		return "", nil, &Error{File: setSource, Key: name, Msg: err.Error()}
	}
	return name, cv, nil
}
