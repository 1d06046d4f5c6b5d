package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The rows of this file are what gptg import nanogpt refuses: checkpoints
// and meta.pkl files that are damaged, inconsistent or too large for the
// memory the conversion may take.

func importInputs(t *testing.T) []badInput {
	both := func(t *testing.T, dir string) { nanoMeta(t, dir); nanoCheckpoint(t, dir) }

	return []badInput{
		{name: "import: a missing checkpoint", setup: nanoMeta, args: []string{"import", "nanogpt", "nope.pt", "--meta", "meta.pkl", "--out", "m.safetensors"},
			code: 2, msg: "nope.pt: no such file"},
		// A zip naming one storage twice, the second all zeros: which one a
		// reader takes is not defined, so neither is the model.
		{name: "import: a checkpoint holding one entry twice", setup: func(t *testing.T, dir string) {
			nanoMeta(t, dir)
			zr, err := zip.OpenReader("../../testdata/nanogpt/ckpt.pt")
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			for i, f := range append(slices.Clone(zr.File), zr.File[1]) {
				r, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(r)
				if i == len(zr.File) {
					b = make([]byte, len(b))
				}
				w, _ := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
				w.Write(b)
			}
			zw.Close()
			if err := os.WriteFile(filepath.Join(dir, "ckpt.pt"), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "ckpt.pt: holds the entry ckpt/data/0 twice"},
		// Imports: a damaged storage is not imported.
		{name: "import: a storage whose CRC is wrong", setup: badCRC,
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "zip: checksum error: the entry's 3520 bytes are damaged"},
		// A meta.pkl whose parts disagree: the imported model would decode
		// its tokens to other characters than nanoGPT does.
		{name: "import: meta.pkl's vocab_size is not its itos's size", setup: func(t *testing.T, dir string) {
			nanoCheckpoint(t, dir)
			editMeta(t, dir, func(b []byte) []byte { return bytes.Replace(b, []byte("I55\n"), []byte("I56\n"), 1) })
		}, args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "meta.pkl: vocab_size is 56, but itos holds 55 characters"},
		{name: "import: meta.pkl's stoi is not the inverse of itos", setup: func(t *testing.T, dir string) {
			nanoCheckpoint(t, dir)
			editMeta(t, dir, func(b []byte) []byte {
				i := bytes.Index(b, []byte("Vstoi\n"))
				j := i + bytes.Index(b[i:], []byte("I0\n"))
				return append(append(append([]byte(nil), b[:j]...), "I1\n"...), b[j+3:]...)
			})
		}, args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "meta.pkl: stoi is not the inverse of itos (it maps \"\\n\" to 1, itos does not)"},
		// Unchecked, a 600 MB checkpoint (50M parameters, 810 MB to
		// convert) under ulimit -v 2.3 GB ends in the runtime's
		// out-of-memory trace, under a 600 MiB cgroup in the kernel's OOM
		// kill.
		{name: "import: a model whose conversion needs more than GPTG_MAX_MEMORY", setup: both, env: []string{"GPTG_MAX_MEMORY=0.0001"},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2,
			msg: "ckpt.pt: importing this model needs about 125 KiB (7728 parameters"},
		{name: "import: GPTG_MAX_MEMORY not a number", setup: both, env: []string{"GPTG_MAX_MEMORY=lots"},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: `GPTG_MAX_MEMORY="lots" is not a number of GiB`},
	}
}

// badCRC copies the nanoGPT checkpoint with one byte of a storage flipped,
// its CRC left as it was.
func badCRC(t *testing.T, dir string) {
	nanoCheckpoint(t, dir)
	nanoMeta(t, dir)
	p := filepath.Join(dir, "ckpt.pt")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	name := []byte("ckpt/data/0")
	for at := 0; ; at++ {
		i := bytes.Index(b[at:], name)
		if i < 0 {
			t.Fatal("no local header of ckpt/data/0")
		}
		at += i
		if at >= 30 && string(b[at-30:at-26]) == "PK\x03\x04" && binary.LittleEndian.Uint16(b[at-4:]) == uint16(len(name)) {
			extra := int(binary.LittleEndian.Uint16(b[at-2:]))
			b[at+len(name)+extra] ^= 1
			break
		}
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// editMeta writes testdata's protocol-0 meta.pkl (text) as dir/meta.pkl
// after change.
func editMeta(t *testing.T, dir string, change func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "nanogpt", "meta-protocol0.pkl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.pkl"), change(b), 0o644); err != nil {
		t.Fatal(err)
	}
}
