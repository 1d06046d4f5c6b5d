package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/runlock"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
)

// States of a run, as the runs table shows them.
const (
	stateTraining    = "training"    // a gptg process holds the run folder's lock
	stateFinished    = "finished"    // the checkpoint holds the last step
	stateInterrupted = "interrupted" // stopped with a checkpoint at its last step: gptg train --resume continues it
	stateFailed      = "failed"      // stopped without saving its last steps (a crash, an error)
	stateModel       = "model"       // a model file alone (gptg import, a copy)
	stateDamaged     = "damaged"     // a file of the run cannot be read: Problem says which
)

// runInfo is one row of the runs table.
type runInfo struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	State      string   `json:"state"`
	Problem    string   `json:"problem,omitempty"`
	PID        int      `json:"pid,omitempty"` // the training process
	Differs    []string `json:"differs"`
	Params     int64    `json:"params,omitempty"`
	Step       int      `json:"step"`
	Total      int      `json:"total,omitempty"`
	TrainLoss  *float64 `json:"train_loss"`
	TestLoss   *float64 `json:"test_loss"`
	TokensPerS float64  `json:"tokens_per_s,omitempty"`
	HasModel   bool     `json:"has_model"`
	Updated    int64    `json:"updated_ms"` // last change of its metrics or checkpoint, Unix ms
	Rows       int      `json:"rows"`
	BadRows    int      `json:"bad_rows,omitempty"`
	Mask       bool     `json:"mask"`
	Arch       string   `json:"arch"` // model.arch: "decoder-only", or "encoder-decoder" (a translation run)
	// Extends is the config file the run's config extended, as recorded
	// by train ("" if none); ParentChanges what the run changed from it.
	// Such a run's Differs is ParentChanges.
	Extends       string   `json:"extends,omitempty"`
	ParentChanges []string `json:"parent_changes,omitempty"`

	settings []string // config.Diff against the defaults, for Differs
}

// fileKey tells whether a file changed since it was read.
type fileKey struct {
	size, mtime int64
	ino         uint64
}

func keyOf(info os.FileInfo) fileKey {
	k := fileKey{size: info.Size(), mtime: info.ModTime().UnixNano()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		k.ino = st.Ino
	}
	return k
}

// runCache keeps what was read of one run folder, read again only when a
// file changed: a checkpoint is a large file, and a runs page polled by
// fifty clients must not read it fifty times.
type runCache struct {
	mu      sync.Mutex
	waiting atomic.Int32 // requests waiting for mu: the tests wait on it, not on a sleep
	cfgKey  fileKey
	cfg     *config.Config
	cfgErr  error
	cfgText string
	ckKey   fileKey
	step    int
	total   int
	ckErr   error
	metrics metricsTail
	// modelKey and modelParams: the parameters model.safetensors's header
	// counts, read again when the file changes.
	modelKey    fileKey
	modelParams int64
}

// headerParams counts the values of a model file's tensors from its header
// alone (0 if it cannot be read: the run's state says why elsewhere).
func headerParams(r *root, rel string) int64 {
	real, err := r.realPath(rel)
	if err != nil {
		return 0
	}
	var n int64
	err = modelfile.Stream(real, modelfile.Limits{MaxFileSize: savedmodel.MaxFileSize}, func(_ map[string]string, tensors []modelfile.Tensor) error {
		for _, t := range tensors {
			size := int64(1)
			for _, d := range t.Shape {
				size *= int64(d)
			}
			n += size
		}
		return errHeaderRead // the shapes are all it needs: no tensor is read
	}, func(modelfile.Tensor) error { return nil })
	if !errors.Is(err, errHeaderRead) {
		return 0
	}
	return n
}

var errHeaderRead = errors.New("the header is read")

// info reads the run folder f (through the cache c) into a runInfo.
func (c *runCache) info(f *folder) runInfo {
	c.waiting.Add(1)
	c.mu.Lock()
	c.waiting.Add(-1)
	defer c.mu.Unlock()
	r := f.root
	ri := runInfo{ID: f.id, Name: path.Base(f.id), Differs: []string{}}
	join := func(name string) string { return path.Join(f.rel, name) }

	// config.toml: the run's settings, self-contained (Parse refuses an
	// extends, so a hostile config cannot make the server read elsewhere).
	cfgState := c.readConfig(r, join(train.ConfigFile))
	if c.cfg != nil {
		ri.Params = c.cfg.Model.ParamCount()
		if c.cfg.Model.Vocab == 0 {
			ri.Params = 0
		}
		ri.settings = settingsOf(c.cfg)
		ri.Mask = c.cfg.Model.Mask
		ri.Arch = c.cfg.Model.Arch
		if c.cfg.Train.MaxSteps > 0 {
			ri.Total = c.cfg.Train.MaxSteps
		}
		if parent, changes, ok := train.Parent([]byte(c.cfgText)); ok {
			ri.Extends, ri.ParentChanges = parent, shownSettings(changes)
		}
	}

	haveCk := c.checkpointInfo(r, join(train.CheckpointFile), &ri)
	metricsErr := c.metricsInfo(r, join(train.MetricsFile), &ri)
	if info, err := r.fs.Stat(join(train.ModelFile)); err == nil && info.Mode().IsRegular() {
		ri.HasModel = true
		// A translation config leaves its vocabularies to the data
		// (vocab = 0), and a model alone has no config: the model file's
		// header counts them.
		if ri.Params == 0 {
			if k := keyOf(info); k != c.modelKey {
				c.modelKey, c.modelParams = k, headerParams(r, join(train.ModelFile))
			}
			ri.Params = c.modelParams
		}
	}

	real, err := r.realPath(f.rel)
	if err != nil {
		ri.State, ri.Problem = stateDamaged, err.Error()
		return ri
	}
	pid, held, _ := runlock.Held(real)
	c.setState(&ri, held, pid, cfgState, haveCk, metricsErr)
	return ri
}

// checkpointInfo reads where the run's saved state is from its checkpoint
// at rel (re-read only when the file changed) into ri, and says whether
// the run has one, readable or not.
func (c *runCache) checkpointInfo(r *root, rel string, ri *runInfo) bool {
	haveCk := false
	if info, err := r.fs.Stat(rel); err == nil {
		ri.Updated = info.ModTime().UnixMilli()
		if k := keyOf(info); k != c.ckKey {
			c.ckKey = k
			real, err := r.realPath(rel)
			if err == nil {
				c.step, c.total, err = train.Progress(filepath.Dir(real))
			}
			c.ckErr = err
		}
		haveCk = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.ckErr, haveCk = err, true
	}
	if haveCk && c.ckErr == nil {
		ri.Step, ri.Total = c.step, c.total
	}
	return haveCk
}

// metricsInfo reads the last losses and speed from the run's metrics at
// rel into ri; the error is the metrics' being unreadable.
func (c *runCache) metricsInfo(r *root, rel string, ri *runInfo) error {
	var metricsErr error
	if mf, info, err := r.open(rel); err == nil {
		for more := true; more && err == nil; {
			_, _, more, err = c.metrics.read(mf, info)
		}
		mf.Close()
		metricsErr = err
		ri.Updated = max(ri.Updated, info.ModTime().UnixMilli())
		if m := c.metrics; m.last != nil {
			loss := m.last.Loss
			ri.TrainLoss, ri.TokensPerS = &loss, m.last.TokensPerSec
			ri.Step = max(ri.Step, m.last.Step)
		}
		if m := c.metrics; m.test != nil {
			ri.TestLoss = m.test.TestLoss
		}
		ri.Rows, ri.BadRows = c.metrics.rows, c.metrics.bad
	} else if !errors.Is(err, fs.ErrNotExist) {
		metricsErr = unservable(train.MetricsFile, err)
	}
	return metricsErr
}

// setState decides the run's state from what info read: the cases are in
// order of precedence, a training process first, then damage, then how
// far the run got.
func (c *runCache) setState(ri *runInfo, held bool, pid int, cfgState int, haveCk bool, metricsErr error) {
	lastRow := 0
	if c.metrics.last != nil {
		lastRow = c.metrics.last.Step
	}
	switch {
	case held:
		ri.State, ri.PID = stateTraining, pid
	case cfgState == fileMissing && ri.HasModel && !haveCk:
		ri.State = stateModel
	case cfgState == fileBad:
		ri.State, ri.Problem = stateDamaged, c.cfgErr.Error()
	case haveCk && c.ckErr != nil:
		ri.State, ri.Problem = stateDamaged, oneLine(c.ckErr.Error())
	case metricsErr != nil:
		ri.State, ri.Problem = stateDamaged, oneLine(metricsErr.Error())
	case cfgState == fileMissing:
		ri.State, ri.Problem = stateDamaged, "no config.toml (a run folder train did not finish making, or a copy without it)"
	case haveCk && c.total > 0 && c.step >= c.total:
		ri.State = stateFinished
	case haveCk && lastRow <= c.step:
		ri.State = stateInterrupted
	case haveCk:
		ri.State, ri.Problem = stateFailed, fmt.Sprintf("stopped at step %d without saving it; the last checkpoint is at step %d (gptg train --resume goes on from there)", lastRow, c.step)
	case ri.Arch == config.ArchEncoderDecoder && ri.HasModel && (ri.Total == 0 || lastRow >= ri.Total):
		// A translation run of a gptg from before translation
		// checkpoints: its model file is saved at every evaluation and at the end.
		ri.State = stateFinished
	case ri.Arch == config.ArchEncoderDecoder && ri.HasModel:
		ri.State, ri.Problem = stateFailed, fmt.Sprintf("stopped at step %d of %d; its model file is from its last evaluation or the stop (a run from before translation runs kept checkpoints: it cannot be resumed)", lastRow, ri.Total)
	default:
		ri.State, ri.Problem = stateFailed, "stopped before its first checkpoint"
	}
}

const (
	fileOK = iota
	fileMissing
	fileBad
)

// readConfig (re)reads config.toml when it changed.
func (c *runCache) readConfig(r *root, rel string) int {
	info, err := r.fs.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		c.cfg, c.cfgErr, c.cfgText, c.cfgKey = nil, nil, "", fileKey{}
		return fileMissing
	}
	if err == nil && keyOf(info) == c.cfgKey {
		if c.cfgErr != nil {
			return fileBad
		}
		return fileOK
	}
	c.cfg, c.cfgErr, c.cfgText = nil, nil, ""
	var text []byte
	if err == nil {
		c.cfgKey = keyOf(info)
		text, _, err = r.readFile(rel, config.MaxConfigSize)
	}
	if err == nil {
		c.cfgText = string(text)
		c.cfg, err = config.Parse(train.ConfigFile, text)
	}
	if err != nil {
		c.cfgErr = fmt.Errorf("%s: %s", train.ConfigFile, oneLine(strings.TrimPrefix(err.Error(), train.ConfigFile+": ")))
		return fileBad
	}
	return fileOK
}

// settingsOf lists what a run's config sets differently from the
// defaults, leaving out the keys every run has its own value of.
func settingsOf(cfg *config.Config) []string {
	return shownSettings(cfg.Diff(nil))
}

// shownSettings is settings ("section.key=value") without the keys every
// run has its own value of (where it writes, the machine it ran on, where
// its corpus was), their floats made readable.
func shownSettings(settings []string) []string {
	out := []string{}
	for _, d := range settings {
		key, _, _ := strings.Cut(d, "=")
		if key == "train.out" || key == "train.threads" || key == "train.max_memory" || key == "data.path" || key == "data.url" || key == "data.sha256" || key == "data.size" || key == "model.vocab" {
			continue
		}
		out = append(out, readable(d))
	}
	return out
}

// readable shortens a setting's float: 0.00030000000000000003 (lr/10) is
// 0.0003 to a reader, as in ablate's table.
func readable(setting string) string {
	key, value, _ := strings.Cut(setting, "=")
	if strings.ContainsAny(value, ".eE") {
		if x, err := strconv.ParseFloat(value, 64); err == nil {
			return key + "=" + strconv.FormatFloat(x, 'g', 6, 64)
		}
	}
	return setting
}

// fillDiffers sets each run's Differs: what its config changed from the
// config it extended, where train recorded one; else its settings that
// not all runs of its group share: what tells it from its neighbours. A
// group is the runs of one architecture directly in a served folder, or
// under one of its subfolders (an ablation's or a sweep's): a translation
// run beside GPT runs is not told from them by the thirty settings every
// translation sets. A GPT run alone in its group shows its departures from
// the defaults, which are a GPT's; a translation run alone, its
// architecture alone (its page shows its whole config).
func fillDiffers(runs []runInfo) {
	defer func() {
		for i := range runs {
			if runs[i].Extends != "" {
				runs[i].Differs = append([]string{}, runs[i].ParentChanges...)
			}
		}
	}()
	groups := map[string][]int{}
	for i, r := range runs {
		g := r.ID
		if parts := strings.SplitN(r.ID, "/", 3); len(parts) == 3 {
			g = parts[0] + "/" + parts[1] // root/sub/... : the subfolder's group
		} else {
			g = parts[0] // root/run : the root's
		}
		g += "\x00" + r.Arch
		groups[g] = append(groups[g], i)
	}
	for _, idx := range groups {
		group := make([]runInfo, len(idx))
		for k, i := range idx {
			group[k] = runs[i]
		}
		differsIn(group)
		for k, i := range idx {
			runs[i].Differs = group[k].Differs
		}
	}
}

// differsIn fills Differs within one group of runs.
func differsIn(runs []runInfo) {
	if len(runs) == 1 {
		runs[0].Differs = append([]string{}, runs[0].settings...)
		if runs[0].Arch == config.ArchEncoderDecoder {
			runs[0].Differs = []string{"model.arch=" + config.ArchEncoderDecoder}
		}
		return
	}
	count := map[string]int{}
	withConfig := 0
	for _, r := range runs {
		if r.settings == nil {
			continue
		}
		withConfig++
		for _, s := range r.settings {
			count[s]++
		}
	}
	// A key that only some runs set shows on those alone: the others run
	// at its default.
	for i := range runs {
		runs[i].Differs = []string{}
		for _, s := range runs[i].settings {
			if count[s] < withConfig {
				runs[i].Differs = append(runs[i].Differs, s)
			}
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
