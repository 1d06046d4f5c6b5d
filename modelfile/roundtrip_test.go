package modelfile

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nlpodyssey/safetensors"
)

// sample returns tensors covering both dtypes, a scalar, an empty tensor and
// values whose bits must survive exactly (NaN, -0, infinities, subnormals).
func sample() []Tensor {
	return []Tensor{
		{Name: "tok.weight", Shape: []int{3, 2}, F32: []float32{1, -2.5, float32(math.NaN()), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, float32(math.Copysign(0, -1))}},
		{Name: "blocks.0.att.q.weight", Shape: []int{2, 2}, F64: []float64{math.Pi, -math.MaxFloat64, math.Inf(1), math.SmallestNonzeroFloat64}},
		{Name: "scale", Shape: []int{}, F64: []float64{0.125}},
		{Name: "empty", Shape: []int{0, 4}, F32: []float32{}},
		{Name: "blocks.0.att.q.bias", Shape: []int{3}, F32: []float32{7, 8, 9}},
	}
}

func sampleMeta() map[string]string {
	return map[string]string{
		"format":    "gptg/1",
		"model":     `{"vocab":65,"context":32}`,
		"tokenizer": "char",
		"vocab":     `["\n"," ","!","é"]`,
	}
}

func sameBits(a, b Tensor) bool {
	if a.Name != b.Name || !slices.Equal(a.Shape, b.Shape) || (a.F32 == nil) != (b.F32 == nil) ||
		len(a.F32) != len(b.F32) || len(a.F64) != len(b.F64) {
		return false
	}
	for i := range a.F32 {
		if math.Float32bits(a.F32[i]) != math.Float32bits(b.F32[i]) {
			return false
		}
	}
	for i := range a.F64 {
		if math.Float64bits(a.F64[i]) != math.Float64bits(b.F64[i]) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	in := sample()
	if err := Write(path, in, sampleMeta()); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(f.Meta, sampleMeta()) {
		t.Errorf("meta = %q", f.Meta)
	}
	var names []string
	for _, tn := range in {
		names = append(names, tn.Name)
		if got := f.Tensors[tn.Name]; !sameBits(got, tn) {
			t.Errorf("tensor %s: got %+v, want %+v", tn.Name, got, tn)
		}
	}
	if !slices.Equal(f.Order, names) {
		t.Errorf("order = %q, want %q", f.Order, names)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	header := string(raw[8 : 8+n])
	json := strings.TrimRight(header, " ")
	if n%8 != 0 || !strings.HasSuffix(json, "}") || len(header)-len(json) >= 8 {
		t.Errorf("header %q is not padded with spaces to a multiple of 8", header)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", info.Mode().Perm())
	}
}

func TestRoundTripWithoutMetadata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Write(path, nil, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Meta == nil || len(f.Meta) != 0 || len(f.Tensors) != 0 || len(f.Order) != 0 {
		t.Fatalf("got %+v", f)
	}
}

// The reference library must read what Write produces, and Read must read
// what the library produces (it orders tensors by dtype, then name).
func TestInteropWithSafetensorsLibrary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := Write(path, sample(), sampleMeta()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.Deserialize(raw)
	if err != nil {
		t.Fatalf("library rejects our file: %v", err)
	}
	f, err := Read(path, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	assertSameAsLibrary(t, f, st, raw)

	views := map[string]safetensors.TensorView{}
	for _, name := range st.Names() {
		views[name], _ = st.Tensor(name)
	}
	theirs, err := safetensors.Serialize(views, sampleMeta())
	if err != nil {
		t.Fatal(err)
	}
	path2 := filepath.Join(t.TempDir(), "theirs.safetensors")
	if err := os.WriteFile(path2, theirs, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Read(path2, Limits{})
	if err != nil {
		t.Fatalf("Read rejects the library's file: %v", err)
	}
	for _, tn := range sample() {
		if !sameBits(g.Tensors[tn.Name], tn) {
			t.Errorf("tensor %s differs after the library's round trip", tn.Name)
		}
	}
}

// assertSameAsLibrary checks that f, from Read, holds what the library
// decoded from the same bytes.
func assertSameAsLibrary(t *testing.T, f *File, st safetensors.SafeTensors, raw []byte) {
	t.Helper()
	if st.Len() != len(f.Tensors) {
		t.Fatalf("library sees %d tensors, Read %d", st.Len(), len(f.Tensors))
	}
	_, md, _ := safetensors.ReadMetadata(raw)
	if lm := md.Metadata(); len(lm) != len(f.Meta) || (len(lm) > 0 && !maps.Equal(lm, f.Meta)) {
		t.Errorf("metadata: library %q, Read %q", lm, f.Meta)
	}
	for name, tn := range f.Tensors {
		view, ok := st.Tensor(name)
		if !ok {
			t.Fatalf("library has no tensor %q", name)
		}
		if view.DType().String() != tn.DType() {
			t.Errorf("%s: dtype %s vs %s", name, view.DType(), tn.DType())
		}
		shape := make([]int, len(view.Shape()))
		for i, d := range view.Shape() {
			shape[i] = int(d)
		}
		if !slices.Equal(shape, tn.Shape) {
			t.Errorf("%s: shape %v vs %v", name, shape, tn.Shape)
		}
		var data []byte
		for _, v := range tn.F32 {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		for _, v := range tn.F64 {
			data = binary.LittleEndian.AppendUint64(data, math.Float64bits(v))
		}
		if string(data) != string(view.Data()) {
			t.Errorf("%s: data differs from the library's", name)
		}
	}
}

func TestWriteRejectsBadTensors(t *testing.T) {
	cases := []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"no data", []Tensor{{Name: "a", Shape: []int{1}}}, `tensor "a" must have exactly one of F32 and F64`},
		{"both", []Tensor{{Name: "a", Shape: []int{1}, F32: []float32{1}, F64: []float64{1}}}, "exactly one"},
		{"shape", []Tensor{{Name: "a", Shape: []int{2, 2}, F32: []float32{1, 2, 3}}}, "has shape [2 2] (4 elements) but 3 values"},
		{"negative", []Tensor{{Name: "a", Shape: []int{-1}, F32: []float32{}}}, "shape[0] is negative"},
		{"twice", []Tensor{{Name: "a", Shape: []int{}, F32: []float32{1}}, {Name: "a", Shape: []int{}, F32: []float32{1}}}, `tensor "a" is given twice`},
		{"reserved", []Tensor{{Name: "__metadata__", Shape: []int{}, F32: []float32{1}}}, "reserved"},
		{"empty name", []Tensor{{Shape: []int{}, F32: []float32{1}}}, "reserved or empty"},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		err := Write(path, c.tensors, nil)
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	assertOnly(t, dir, "model.safetensors")
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("existing file changed to %q", got)
	}
}

// A failure after the temporary file exists (here: the rename, since the
// target is a non-empty directory) must remove it and leave the target be.
func TestWriteFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := os.MkdirAll(filepath.Join(path, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Write(path, sample(), sampleMeta())
	if err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Fatalf("err = %v", err)
	}
	assertOnly(t, dir, "model.safetensors")
	assertOnly(t, path, "keep")
}

func TestWriteReplacesExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	os.WriteFile(path, []byte("old"), 0o644)
	if err := Write(path, sample(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path, Limits{}); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dir, "model.safetensors")
}

func TestReadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.safetensors")
	_, err := Read(path, Limits{})
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != path+": cannot open: no such file or directory" {
		t.Fatalf("err = %v", err)
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

// TestWriteOwnReplacesALink: WriteOwn (a run's model and checkpoint) puts
// its file where a link was and leaves the file the link named as it was;
// Write (a path the user gave) writes through the link. A folder at the
// path is refused, nothing left behind.
func TestWriteOwnReplacesALink(t *testing.T) {
	dir := t.TempDir()
	outside, path := filepath.Join(dir, "precious.txt"), filepath.Join(dir, "model.safetensors")
	for _, own := range []bool{true, false} {
		os.Remove(path)
		if err := os.WriteFile(outside, []byte("precious"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, path); err != nil {
			t.Fatal(err)
		}
		write := map[bool]func(string, []Tensor, map[string]string) error{true: WriteOwn, false: Write}[own]
		if err := write(path, sample(), nil); err != nil {
			t.Fatal(err)
		}
		info, _ := os.Lstat(path)
		kept, _ := os.ReadFile(outside)
		if own && (string(kept) != "precious" || !info.Mode().IsRegular()) {
			t.Errorf("WriteOwn over a link: the file it named holds %.20q, the path is %v; want it untouched and a regular file", kept, info.Mode())
		}
		if !own && (string(kept) == "precious" || info.Mode()&fs.ModeSymlink == 0) {
			t.Errorf("Write over a link: the file it named holds %.20q, the path is %v; want the link kept, written through", kept, info.Mode())
		}
		if _, err := Read(path, Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(path)
	if err := os.MkdirAll(filepath.Join(path, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteOwn(path, sample(), nil); err == nil || !strings.HasPrefix(err.Error(), path+": is a folder") {
		t.Errorf("WriteOwn over a folder: err = %v", err)
	}
	assertOnly(t, dir, "model.safetensors", "precious.txt")
	assertOnly(t, path, "keep")
}

// TestStoredDtypes: Read and Stream say the dtype each tensor is stored in
// (the header's, BF16 included, though it is read into F32), and
// CountDtypes counts them from the shapes alone, for a file of F32 and F64
// tensors (sample's) and for its BF16 copy.
func TestStoredDtypes(t *testing.T) {
	dir := t.TempDir()
	var narrow []Tensor // sample's tensors all float32, for WriteBF16
	for _, tn := range sample() {
		if tn.F64 != nil {
			tn.F32 = make([]float32, len(tn.F64))
			for i, v := range tn.F64 {
				tn.F32[i] = float32(v)
			}
			tn.F64 = nil
		}
		narrow = append(narrow, tn)
	}
	mixed, half := filepath.Join(dir, "mixed.safetensors"), filepath.Join(dir, "half.safetensors")
	if err := Write(mixed, sample(), sampleMeta()); err != nil {
		t.Fatal(err)
	}
	if err := WriteBF16(half, narrow, sampleMeta()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		stored map[string]string
		counts []DtypeCount
	}{
		// sample: F32 tok.weight [3 2], empty [0 4], bias [3]; F64 q.weight [2 2], scale [].
		{mixed, map[string]string{"tok.weight": "F32", "blocks.0.att.q.weight": "F64", "scale": "F64", "empty": "F32", "blocks.0.att.q.bias": "F32"},
			[]DtypeCount{{"F32", 3, 9}, {"F64", 2, 5}}},
		{half, map[string]string{"tok.weight": "BF16", "blocks.0.att.q.weight": "BF16", "scale": "BF16", "empty": "BF16", "blocks.0.att.q.bias": "BF16"},
			[]DtypeCount{{"BF16", 5, 14}}},
	} {
		f, err := Read(c.path, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var read []Tensor
		for _, name := range f.Order {
			tn := f.Tensors[name]
			if tn.Stored != c.stored[name] {
				t.Errorf("%s: Read says %s is stored as %q, want %q", c.path, name, tn.Stored, c.stored[name])
			}
			read = append(read, tn)
		}
		if got := CountDtypes(read); !slices.Equal(got, c.counts) {
			t.Errorf("%s: CountDtypes of Read's tensors = %v, want %v", c.path, got, c.counts)
		}
		err = Stream(c.path, Limits{}, func(_ map[string]string, header []Tensor) error {
			for _, tn := range header {
				if tn.Stored != c.stored[tn.Name] {
					t.Errorf("%s: Stream's header says %s is stored as %q, want %q", c.path, tn.Name, tn.Stored, c.stored[tn.Name])
				}
			}
			if got := CountDtypes(header); !slices.Equal(got, c.counts) {
				t.Errorf("%s: CountDtypes of Stream's header = %v, want %v", c.path, got, c.counts)
			}
			return nil
		}, func(tn Tensor) error {
			if tn.Stored != c.stored[tn.Name] {
				t.Errorf("%s: Stream says %s is stored as %q, want %q", c.path, tn.Name, tn.Stored, c.stored[tn.Name])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
