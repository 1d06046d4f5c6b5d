package modelfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nlpodyssey/safetensors"
)

// FuzzRead feeds Read arbitrary bytes. It must never panic; its errors must
// be one line naming the file; and whatever it accepts must be a standard
// safetensors file that the reference library reads the same way.
// Run it with: go test ./modelfile -fuzz FuzzRead -fuzztime 1m
func FuzzRead(f *testing.F) {
	valid := validFile(f)
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0})
	f.Add(rawFile(`{}`, 0))
	f.Add(withLength(9999999999, "{}"))
	f.Add(rawFile(`[]`, 0))
	f.Add(rawFile(`{"a":{`+f32x2+`,"data_offsets":[0,8]},"b":{`+f32x2+`,"data_offsets":[4,12]}}`, 12))
	f.Add(rawFile(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, 8))
	f.Add(rawFile(`{"__metadata__":{"format":1}}`, 0))

	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(dir, "fuzz.safetensors")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := Read(path, Limits{MaxFileSize: 1 << 20})
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, path+": ") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line starting with the path: %q", msg)
			}
			return
		}
		if len(file.Order) != len(file.Tensors) || file.Meta == nil {
			t.Fatalf("inconsistent File: %d names, %d tensors, meta %v", len(file.Order), len(file.Tensors), file.Meta)
		}
		for _, name := range file.Order {
			tn := file.Tensors[name]
			n, err := numElements(tn.Shape)
			if err != nil || (tn.F32 == nil) == (tn.F64 == nil) || int64(len(tn.F32)+len(tn.F64)) != n {
				t.Fatalf("tensor %q: shape %v does not match its data", name, tn.Shape)
			}
		}
		st, err := safetensors.Deserialize(content)
		if err != nil {
			t.Fatalf("Read accepted a file the reference library rejects: %v", err)
		}
		assertSameAsLibrary(t, file, st, content)
	})
}
