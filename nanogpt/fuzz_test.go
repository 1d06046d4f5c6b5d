package nanogpt

import (
	"os"
	"testing"
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
