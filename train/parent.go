package train

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gptg/gptg/config"
)

// A run whose config extends another records, in a comment line of its
// config.toml, the file it extends and the settings it changes from it:
// what makes this run what it is, as its author wrote it. gptg serve shows
// them in its runs table, and cannot read the parent itself (it reads only
// the run folders it serves, and the parent may have changed since).
//
//	# extends: "configs/shakespeare.toml" changes: ["model.qkv=true","train.seed=2"]
const parentPrefix = "# extends: "

// parentHeader is the comment line of cfg's parent, or "" when cfg
// extends none or its parent does not load on its own (a partial base).
func parentHeader(cfg *config.Config) string {
	if cfg.Extends == "" {
		return ""
	}
	parent, err := config.Load(cfg.Extends, nil)
	if err != nil {
		return ""
	}
	// What train records of the corpus (its size and hash, when the config
	// leaves them out) is no change of the author's.
	if parent.Data.Size == 0 {
		parent.Data.Size = cfg.Data.Size
	}
	if parent.Data.SHA256 == "" {
		parent.Data.SHA256 = cfg.Data.SHA256
	}
	if parent.Data.ValSize == 0 {
		parent.Data.ValSize = cfg.Data.ValSize
	}
	if parent.Data.ValSHA256 == "" {
		parent.Data.ValSHA256 = cfg.Data.ValSHA256
	}
	changes := cfg.Diff(parent)
	if changes == nil {
		changes = []string{}
	}
	list, _ := json.Marshal(changes)
	return fmt.Sprintf("%s%s changes: %s\n", parentPrefix, strconv.Quote(filepath.Clean(cfg.Extends)), list)
}

// readParentLine finds the parent's comment line in a config.toml's text
// ("" if none), so that a resume writes it again.
func readParentLine(text []byte) string {
	for line := range strings.Lines(string(text)) {
		if strings.HasPrefix(line, parentPrefix) {
			return strings.TrimSuffix(line, "\n") + "\n"
		}
		if !strings.HasPrefix(line, "#") {
			break
		}
	}
	return ""
}

// Parent reads what a run's config.toml text records of the config it
// extends: the parent's path as the run was started with it, and the
// settings ("section.key=value") the run changes from it. ok is false when
// the run's config extended none (or the line is missing or mangled).
func Parent(text []byte) (parent string, changes []string, ok bool) {
	line := readParentLine(text)
	if line == "" {
		return "", nil, false
	}
	rest := strings.TrimPrefix(line, parentPrefix)
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", nil, false
	}
	parent, _ = strconv.Unquote(q)
	list, found := strings.CutPrefix(strings.TrimSpace(rest[len(q):]), "changes: ")
	if !found || json.Unmarshal([]byte(list), &changes) != nil {
		return "", nil, false
	}
	return parent, changes, true
}
