package nanogpt

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/cputime"
)

// FuzzUnpickle feeds arbitrary bytes to the checkpoint unpickler: it must
// return a value or an error, never panic, hang or allocate past the input.
// The seed corpus (real pickles and hostile ones) runs in every go test;
// go test ./nanogpt -run '^$' -fuzz FuzzUnpickle -fuzztime 1m explores.
func FuzzUnpickle(f *testing.F) {
	m, err := os.ReadFile(meta)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(m)
	f.Add(tensorPickle(4, 4))
	f.Add([]byte("\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsR."))
	f.Add([]byte("\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94."))
	f.Add([]byte("\x80\x03ccollections\nOrderedDict\n)RC\x01aK\x01s."))
	f.Fuzz(func(t *testing.T, data []byte) {
		persistent := func(id any) (any, error) { return &storage{typ: storageType{"torch.FloatStorage", 4}, numel: 16}, nil }
		unpickle(data, checkpointClasses(), persistent)
		unpickle(data, map[string]any{}, nil)
	})
}

// Bounds every input of FuzzImport must keep: the whole import (zip,
// pickles, tensors, conversion) of a checkpoint and meta.pkl of n bytes
// together allocates at most importAllocPerByte·n + importAllocFixed bytes
// and takes at most importTime of CPU (each fuzzing worker is a process
// of its own, and the time a busy machine adds is not counted), however
// hostile the bytes. The real
// checkpoints of testdata/nanogpt allocate about 5·n.
const (
	importAllocPerByte = 40
	importAllocFixed   = 8 << 20
	importTime         = 5 * time.Second
)

// FuzzImport runs the whole import path on a fuzzed checkpoint and
// meta.pkl and asserts the bounds above for each input. With wrap set, the
// first input is taken as data.pkl and wrapped in an archive with the real
// checkpoint's storages, so that the fuzzer explores pickles (which a
// mutated archive mostly hides behind its CRCs) that reach real tensors.
// The seeds are nanoGPT's own files (testdata/nanogpt) and hostile ones.
//
//	go test ./nanogpt -run '^$' -fuzz FuzzImport -fuzztime 3m
func FuzzImport(f *testing.F) {
	read := func(name string) []byte {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	real, compiled, m := read(ckpt), read(ckptCompiled), read(meta)
	m0 := read(metaProtocol0)
	storages, pkl := unzipCheckpoint(f, real)
	f.Add(real, m, false)
	f.Add(compiled, m0, false)
	f.Add(pkl, m, true)
	f.Add(pkl, m0, true)
	f.Add(tensorPickle(4, 4), m, true)
	f.Add([]byte("\x80\x02\x8b\x00\x00\x01\x00"+string(make([]byte, 1<<16))+"."), m, true)
	f.Add(pkl, []byte("(dp0\nVitos\np1\n(dp2\nI0\nV\\u000a\nss."), true)
	f.Fuzz(func(t *testing.T, archive, metaData []byte, wrap bool) {
		if wrap {
			archive = zipCheckpoint(t, archive, storages)
		}
		n := uint64(len(archive) + len(metaData))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := cputime.Process()
		vocab, err := readMeta("meta.pkl", metaData)
		if err == nil {
			var c *checkpoint
			if c, err = readCheckpoint("ckpt.pt", bytes.NewReader(archive), int64(len(archive))); err == nil {
				_, err = convert(c, vocab, config.DefaultMaxMemory)
			}
		}
		elapsed := cputime.Process() - start
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > importAllocPerByte*n+importAllocFixed {
			t.Errorf("importing %d bytes allocated %d (%v)", n, alloc, err)
		}
		if elapsed > importTime {
			t.Errorf("importing %d bytes took %v of CPU (%v)", n, elapsed, err)
		}
	})
}

// unzipCheckpoint returns the storages and data.pkl of a torch.save archive.
func unzipCheckpoint(f *testing.F, archive []byte) (map[string][]byte, []byte) {
	z, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		f.Fatal(err)
	}
	storages := map[string][]byte{}
	var pkl []byte
	for _, e := range z.File {
		r, err := e.Open()
		if err != nil {
			f.Fatal(err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			f.Fatal(err)
		}
		if dir, name, ok := bytes.Cut([]byte(e.Name), []byte("/data/")); ok && len(dir) > 0 {
			storages[string(name)] = b
		} else if bytes.HasSuffix([]byte(e.Name), []byte("/data.pkl")) {
			pkl = b
		}
	}
	return storages, pkl
}

// zipCheckpoint is a torch.save archive of data.pkl = pkl and the storages.
func zipCheckpoint(t *testing.T, pkl []byte, storages map[string][]byte) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	add := func(name string, data []byte) {
		w, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	add("archive/data.pkl", pkl)
	for k, v := range storages {
		add("archive/data/"+k, v)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
