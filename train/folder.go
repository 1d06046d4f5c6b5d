// The run folder: what makes a folder a run's, the refusal of one that
// holds another run or is no run folder, starting over, and the run id
// that config.toml records.

package train

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/internal/runlock"
)

// runFiles are the files that make a folder a gptg run folder: any one of
// them means a run is there.
var runFiles = []string{ConfigFile, ModelFile, MetricsFile, CheckpointFile}

// startOver removes the files of the run in dir (its lock held): the old
// run's files must not survive beside the new run's, where a resume would
// mix them. A link among them goes, not the file it names.
func startOver(dir string) error {
	for _, name := range runFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("starting over in %s: %w", dir, err)
		}
	}
	removeStaleTemps(dir)
	return nil
}

// ownFiles refuses a run whose files are symbolic links: a resume reads
// the run from where they lead, then rewrites every one of them in its
// folder (never through a link: atomicfile.WriteOwn), which would replace
// the link and leave the file it named behind, no longer the run's.
func ownFiles(dir string) error {
	for _, name := range runFiles {
		p := filepath.Join(dir, name)
		info, err := os.Lstat(p)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		to, _ := os.Readlink(p)
		return fmt.Errorf("%s is a symbolic link (to %s): a resume rewrites the run's files in its folder, which would replace the link and leave %s behind; put the file itself in the run folder (cp --remove-destination %s %s)",
			quote.Name(p), quote.Name(to), quote.Name(to), quote.Name(to), quote.Name(p))
	}
	return nil
}

// removeStaleTemps deletes the temporary files that atomicfile leaves
// beside a run's files when a process is killed mid-write (SIGKILL, power
// loss): with the run's lock held none is being written, and a checkpoint's
// can be as large as the model's state, once per kill.
func removeStaleTemps(dir string) {
	for _, name := range runFiles {
		stale, _ := filepath.Glob(filepath.Join(dir, "."+name+".tmp*"))
		for _, p := range stale {
			if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() {
				os.Remove(p)
			}
		}
	}
}

// ErrReplaced is wrapped by a start over refused because the run folder's
// run is no longer the one Options.Replacing names.
var ErrReplaced = errors.New("another process has trained in the run folder since")

// Mark says which run dir holds and how far it has come: its run id
// ("-" for none) and its checkpoint's step, as "ID@STEP".
func Mark(dir string) string {
	text, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	id := readRunID(text)
	if id == "" {
		id = "-"
	}
	step, _, _ := Progress(dir)
	return fmt.Sprintf("%s@%d", id, step)
}

// ExistingRunError is a train.out that already holds a run, refused
// unless --force: the command line's mistake, not a failure (exit 2).
type ExistingRunError struct{ msg string }

func (e *ExistingRunError) Error() string { return e.msg }

// starting calls Options.Starting, if set.
func (o Options) starting() {
	if o.Starting != nil {
		o.Starting()
	}
}

// refuseExistingRun says how to go on when dir already holds a run,
// naming a command that works for the state the run is in.
func refuseExistingRun(dir string, opts Options) error {
	if opts.Force {
		if now := Mark(dir); opts.Replacing != "" && now != opts.Replacing {
			return fmt.Errorf("run folder %s: %w (it holds %s, --replacing names %s): left as it is", dir, ErrReplaced, now, opts.Replacing)
		}
		return nil
	}
	var found []string
	for _, name := range runFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return nil
	}
	step, total, err := Progress(dir)
	switch {
	case err != nil: // no usable checkpoint: nothing to resume
		return &ExistingRunError{fmt.Sprintf("run folder %s already holds a run (%s) without a checkpoint to resume: start over with --force, or choose another train.out",
			dir, strings.Join(found, ", "))}
	case step >= total:
		return &ExistingRunError{fmt.Sprintf("run folder %s already holds a finished run (%d steps): train it longer with `gptg train --resume %s --set train.max_steps=%d`, or start over with --force",
			dir, total, dir, 2*total)}
	}
	return &ExistingRunError{fmt.Sprintf("run folder %s already holds a run (at step %d of %d): continue it with `gptg train --resume %s`, or start over with --force",
		dir, step, total, dir)}
}

// checkRunFolder refuses a train.out that is a filesystem root, a file, or
// a non-empty folder that is not a gptg run folder: --force there would
// delete nothing of value, but the run's files would land among someone
// else's.
func checkRunFolder(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real // a link to / is / (and a link to a folder is that folder)
	}
	if filepath.Dir(abs) == abs {
		return dir + " is the filesystem root: choose a folder for the run, such as runs/NAME"
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return fmt.Sprintf("%s: %v", dir, err)
	case !info.IsDir():
		return dir + " is a file, not a folder"
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1000) // enough to tell; a home folder may hold millions
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	for _, n := range names {
		if slices.Contains(runFiles, n) || n == runlock.Name {
			return ""
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		return fmt.Sprintf("%s is a folder that is not a gptg run folder and not empty (it holds %s): choose another train.out",
			dir, listSome(names, 3))
	}
	return ""
}

// listSome lists the first n names and how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// newRunID is a random name for one run, recorded in its config.toml and
// its checkpoints so that a resume notices a checkpoint of another run.
func newRunID() string {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; a clock reading still tells runs apart.
		return fmt.Sprintf("t%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// runIDPrefix starts the comment line of config.toml that holds the run id.
const runIDPrefix = "# run id: "

// exampleLine is config.toml's example line of the run ("" for none).
func (t *trainer) exampleLine() string {
	if t.cfg.Model.EncoderDecoder() {
		return exampleHeader(t.example, "the training pairs")
	}
	return exampleHeader(t.example, "the training text")
}

// writeConfig writes the run's resolved config, with its run id, as
// config.toml.
func (t *trainer) writeConfig() error {
	text, err := t.cfg.TOML()
	if err != nil {
		return err
	}
	if t.cfg.Extends != "" {
		t.parentLine = parentHeader(t.cfg)
	}
	head := runIDPrefix + t.runID + " (gptg train --resume checks that the checkpoint belongs to this run)\n" + t.origin.header() + t.parentLine + t.exampleLine()
	text = append([]byte(head), text...)
	// Named by the run, not the user: a link there is replaced, not
	// written through (atomicfile.WriteOwn).
	return atomicfile.WriteOwnFile(filepath.Join(t.dir, ConfigFile), text)
}

// readRunID finds the run id line in a config.toml's text ("" if none:
// a folder written before run ids, or a hand-made one).
func readRunID(text []byte) string {
	for line := range strings.Lines(string(text)) {
		if id, ok := strings.CutPrefix(line, runIDPrefix); ok {
			id, _, _ = strings.Cut(id, " ")
			return strings.TrimSpace(id)
		}
		if !strings.HasPrefix(line, "#") {
			break
		}
	}
	return ""
}

// ModelBehind says dir's model file is missing or older than its
// checkpoint: saveAll writes the checkpoint first, so a run killed between
// the two (the OOM killer, a power cut) at its last save has a model that
// no later save brings level.
func ModelBehind(dir string) bool {
	m, err := os.Stat(filepath.Join(dir, ModelFile))
	if err != nil {
		return true
	}
	c, err := os.Stat(filepath.Join(dir, CheckpointFile))
	return err == nil && m.ModTime().Before(c.ModTime())
}

// stillLocked refuses to write into dir once its lock file is no longer
// the one this process locked: another gptg may be training there now.
func (o Options) stillLocked(dir string, step int) error {
	if err := o.lock.Intact(); err != nil {
		return fmt.Errorf("%w: another gptg may now be writing into %s, so this run stopped at step %d without writing; when no other gptg uses the folder, go on with gptg train --resume %s",
			err, dir, step, dir)
	}
	return nil
}
