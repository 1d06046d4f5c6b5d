package nanogpt

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindMetaAsSampleDoes lays a checkpoint and its meta.pkl out as
// nanoGPT's train.py and prepare.py leave them (out-*/ckpt.pt beside
// data/<dataset>/meta.pkl) and finds the meta.pkl from nanoGPT's root and
// from elsewhere; one beside the checkpoint comes first.
func TestFindMetaAsSampleDoes(t *testing.T) {
	ds := checkpointDataset(ckpt)
	if ds != "shakespeare_char" {
		t.Fatalf("the test checkpoint's dataset is %q, want shakespeare_char", ds)
	}
	metaFile, _ := filepath.Abs(meta)
	root := t.TempDir()
	copyFile(t, ckpt, filepath.Join(root, "out-shakespeare-char", "ckpt.pt"))
	want := filepath.Join(root, "data", ds, "meta.pkl")
	copyFile(t, metaFile, want)

	got, _ := FindMeta(filepath.Join(root, "out-shakespeare-char", "ckpt.pt")) // from elsewhere
	if got != want {
		t.Errorf("from elsewhere: %q, want %q", got, want)
	}
	t.Chdir(root)
	if got, _ := FindMeta(filepath.Join("out-shakespeare-char", "ckpt.pt")); got != filepath.Join("data", ds, "meta.pkl") {
		t.Errorf("from nanoGPT's root: %q", got)
	}
	beside := filepath.Join("out-shakespeare-char", "meta.pkl")
	copyFile(t, metaFile, filepath.Join(root, beside))
	if got, _ := FindMeta(filepath.Join("out-shakespeare-char", "ckpt.pt")); got != beside {
		t.Errorf("with a meta.pkl beside the checkpoint: %q", got)
	}
	os.Remove(want)
	os.Remove(beside)
	// From nanoGPT's root, data/<ds>/meta.pkl and the folder above out_dir are one place: listed once.
	if got, tried := FindMeta(filepath.Join("out-shakespeare-char", "ckpt.pt")); got != "" || len(tried) != 2 {
		t.Errorf("nothing to find: %q, tried %q", got, tried)
	}
	if got, tried := FindMeta(filepath.Join(root, "out-shakespeare-char", "ckpt.pt")); got != "" || len(tried) != 3 {
		t.Errorf("nothing to find from elsewhere: %q, tried %q", got, tried)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
