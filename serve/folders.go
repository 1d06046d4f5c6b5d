package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gptg/gptg/sweep"
	"github.com/gptg/gptg/train"
)

// root is one folder given on the command line. Every file the server
// reads itself goes through fs, an os.Root, which refuses paths that
// leave the folder, by "..", by an absolute path or by a symlink; the
// loaders of other packages, which take paths, get a path that realPath
// has resolved and checked first.
type root struct {
	label string // the first segment of the ids of what it holds
	dir   string // as given
	abs   string // absolute, as filepath.Abs makes it (train writes such paths)
	real  string // absolute, symlinks resolved
	fs    *os.Root
}

func openRoot(dir string) (*root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, unwrapPath(err))
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, unwrapPath(err))
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a folder: give the folder that holds run folders (such as runs/)", dir)
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, unwrapPath(err))
	}
	label := filepath.Base(filepath.Clean(dir))
	if label == "." || label == string(filepath.Separator) || label == ".." {
		label = filepath.Base(real)
	}
	return &root{label: label, dir: dir, abs: abs, real: real, fs: r}, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// errOutside is a path that leads out of the served folders.
var errOutside = errors.New("outside the served folders")

// realPath resolves rel (slash-separated, inside the root) to an absolute
// path without symlinks, and refuses one that ends up outside the root.
func (r *root) realPath(rel string) (string, error) {
	if !localPath(rel) {
		return "", errOutside
	}
	p, err := filepath.EvalSymlinks(filepath.Join(r.real, filepath.FromSlash(rel)))
	if err != nil {
		return "", unwrapPath(err)
	}
	if p != r.real && !strings.HasPrefix(p, r.real+string(filepath.Separator)) {
		return "", errOutside
	}
	return p, nil
}

// localPath accepts a relative, slash-separated path that stays inside
// its folder lexically ("." included).
func localPath(rel string) bool {
	return rel == "." || (len(rel) <= maxIDLen && !strings.ContainsAny(rel, "\\\x00") && filepath.IsLocal(filepath.FromSlash(rel)))
}

// open opens a regular file inside the root for reading. O_NONBLOCK keeps
// a FIFO put in a run folder from blocking the request; the Stat refuses
// it and devices.
func (r *root) open(rel string) (*os.File, os.FileInfo, error) {
	if !localPath(rel) {
		return nil, nil, errOutside
	}
	f, err := r.fs.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path.Base(rel))
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// readFile reads a regular file of at most limit bytes inside the root.
func (r *root) readFile(rel string, limit int64) ([]byte, os.FileInfo, error) {
	f, info, err := r.open(rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, nil, fmt.Errorf("%s is %d bytes, more than the %d this server reads", path.Base(rel), info.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s grew past %d bytes while read", path.Base(rel), limit)
	}
	return b, info, err
}

// Kinds of folder the scan finds.
const (
	kindRun     = "run"
	kindAblate  = "ablate"
	kindSweep   = "sweep"
	maxIDLen    = 1024
	maxDepth    = 6     // runs/sweep/runs/entry is depth 3
	maxFolders  = 20000 // folders visited per scan, so a huge tree cannot stall it
	summaryFile = "summary.csv"
	runsCSVFile = "runs.csv"
)

// runFiles are the files that make a folder a run folder (train's list).
var runFiles = []string{train.ConfigFile, train.ModelFile, train.MetricsFile, train.CheckpointFile}

// folder is a run folder or a comparison folder found by a scan.
type folder struct {
	id   string // label/rel, what the pages and the API name it by
	kind string
	root *root
	rel  string // slash-separated inside root, "." for the root itself
}

// scan lists the run and comparison folders under the roots: a folder
// holding any of runFiles is a run (not looked into further), one holding
// summary.csv (gptg ablate) or manifest.jsonl (gptg sweep) a comparison.
// Symlinked folders are not followed, hidden folders are skipped.
func scan(roots []*root) (map[string]*folder, []string) {
	found := map[string]*folder{}
	var problems []string
	visited := 0
	for _, r := range roots {
		var walk func(rel string, depth int)
		walk = func(rel string, depth int) {
			if visited++; visited > maxFolders {
				if visited == maxFolders+1 {
					problems = append(problems, fmt.Sprintf("stopped looking after %d folders", maxFolders))
				}
				return
			}
			entries, err := fs.ReadDir(r.fs.FS(), rel)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", path.Join(r.label, rel), unwrapPath(err)))
				return
			}
			names := make([]string, len(entries))
			for i, e := range entries {
				names[i] = e.Name()
			}
			id := r.label
			if rel != "." {
				id = r.label + "/" + rel
			}
			for _, n := range runFiles {
				if slices.Contains(names, n) {
					found[id] = &folder{id: id, kind: kindRun, root: r, rel: rel}
					return
				}
			}
			switch {
			case slices.Contains(names, sweep.ManifestFile):
				found[id] = &folder{id: id, kind: kindSweep, root: r, rel: rel}
			case slices.Contains(names, summaryFile):
				found[id] = &folder{id: id, kind: kindAblate, root: r, rel: rel}
			}
			if depth >= maxDepth {
				return
			}
			for _, e := range entries {
				// e.IsDir is false for a symlink, whatever it points to.
				if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
					walk(path.Join(rel, e.Name()), depth+1)
				}
			}
		}
		walk(".", 0)
	}
	return found, problems
}

// labelRoots gives roots with the same base name distinct labels.
func labelRoots(roots []*root) {
	seen := map[string]int{}
	for _, r := range roots {
		seen[r.label]++
		if n := seen[r.label]; n > 1 {
			r.label = fmt.Sprintf("%s~%d", r.label, n)
		}
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
