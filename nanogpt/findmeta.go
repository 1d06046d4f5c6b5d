package nanogpt

import (
	"os"
	"path/filepath"
)

// FindMeta finds the meta.pkl of a checkpoint as nanoGPT's sample.py
// does: data/<dataset>/meta.pkl, <dataset> from the checkpoint's config,
// relative to the current folder (where train.py and sample.py run) and
// to the folder above the checkpoint's out_dir (nanoGPT's root when the
// checkpoint is where train.py left it); first of all a meta.pkl beside
// the checkpoint. It returns the first that exists, or "" and the places
// it looked.
func FindMeta(ckptPath string) (string, []string) {
	tried := []string{filepath.Join(filepath.Dir(ckptPath), "meta.pkl")}
	if ds := checkpointDataset(ckptPath); ds != "" {
		rel := filepath.Join("data", ds, "meta.pkl")
		tried = append(tried, rel)
		// A checkpoint at out/ckpt.pt has nanoGPT's root in "." too: one place, listed once.
		if above := filepath.Join(filepath.Dir(filepath.Dir(ckptPath)), rel); above != rel {
			tried = append(tried, above)
		}
	}
	for _, p := range tried {
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
			return p, tried
		}
	}
	return "", tried
}

// checkpointDataset is train.py's config["dataset"] in the checkpoint, ""
// when it cannot be read (Import then says what is wrong with the file).
func checkpointDataset(path string) string {
	c, err := openCheckpoint(path)
	if err != nil {
		return ""
	}
	defer c.Close()
	_, root, ok := dictOf(c.root)
	if !ok {
		return ""
	}
	_, cfg, ok := dictOf(root["config"])
	if !ok {
		return ""
	}
	ds, _ := cfg["dataset"].(string)
	if ds != filepath.Base(ds) || ds == "." || ds == ".." { // a name, not a path
		return ""
	}
	return ds
}
