package modelfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nlpodyssey/safetensors"
)

// bf16Case is one line of testdata/bf16golden.txt: a float32 and the
// bfloat16 PyTorch rounded it to.
type bf16Case struct {
	f32  uint32
	bf16 uint16
	note string
}

// bf16Golden reads testdata/bf16golden.txt, written by bf16golden.py with
// PyTorch's .to(torch.bfloat16).
func bf16Golden(t *testing.T) []bf16Case {
	t.Helper()
	f, err := os.Open("testdata/bf16golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []bf16Case
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) != 3 {
			t.Fatalf("golden line %q: want float32 bits, bfloat16 bits, note", line)
		}
		x, err1 := strconv.ParseUint(fields[0], 16, 32)
		y, err2 := strconv.ParseUint(fields[1], 16, 16)
		if err1 != nil || err2 != nil {
			t.Fatalf("golden line %q: %v %v", line, err1, err2)
		}
		cases = append(cases, bf16Case{uint32(x), uint16(y), fields[2]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 2000 {
		t.Fatalf("golden has %d values, want the 2036 bf16golden.py writes", len(cases))
	}
	return cases
}

func isNaNBF16(b uint16) bool { return b&0x7f80 == 0x7f80 && b&0x7f != 0 }

// TestBF16RoundingMatchesPyTorch holds the rounding of gptg export
// --dtype bfloat16 to PyTorch's, bit for bit: ties, subnormals (rounded,
// not flushed), the largest floats (some to infinity), infinities, zeros
// and 2000 random bit patterns. A NaN need only stay a NaN: PyTorch
// writes 0xffff for every NaN, whatever its sign and payload, and gptg
// keeps the sign and the top of the payload.
func TestBF16RoundingMatchesPyTorch(t *testing.T) {
	exact, nans := 0, 0
	for _, c := range bf16Golden(t) {
		got := bf16Bits(math.Float32frombits(c.f32))
		if isNaNBF16(c.bf16) {
			nans++
			if !isNaNBF16(got) {
				t.Errorf("%08x (%s): gptg %04x, not a NaN; PyTorch %04x", c.f32, c.note, got, c.bf16)
			}
			continue
		}
		exact++
		if got != c.bf16 {
			t.Errorf("%08x (%s): gptg %04x, PyTorch %04x", c.f32, c.note, got, c.bf16)
		}
	}
	if exact < 2000 || nans < 6 {
		t.Errorf("%d values compared bit for bit and %d NaNs: the golden lost its cases", exact, nans)
	}
}

// TestBF16ExportRoundTrip writes the golden's values with WriteBF16 and
// reads them back: the file is a safetensors file of BF16 tensors (as the
// safetensors library reads it, half the bytes), holding PyTorch's bits,
// and Read widens each to the float32 with those top bits.
func TestBF16ExportRoundTrip(t *testing.T) {
	cases := bf16Golden(t)
	values := make([]float32, len(cases))
	for i, c := range cases {
		values[i] = math.Float32frombits(c.f32)
	}
	in := []Tensor{
		{Name: "tok.weight", Shape: []int{len(values)}, F32: values},
		{Name: "blocks.0.att.q.bias", Shape: []int{3}, F32: []float32{7, 8.0078125, -0.1}}, // odd length: the next tensor starts 2-byte aligned
		{Name: "empty", Shape: []int{0, 4}, F32: []float32{}},
		{Name: "scale", Shape: []int{}, F32: []float32{0.125}},
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := WriteBF16(path, in, sampleMeta()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteToBF16(&buf, in, sampleMeta()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), raw) {
		t.Error("WriteToBF16 and WriteBF16 write different bytes")
	}

	st, err := safetensors.Deserialize(raw)
	if err != nil {
		t.Fatalf("the safetensors library rejects the BF16 file: %v", err)
	}
	view, ok := st.Tensor("tok.weight")
	if !ok || view.DType() != safetensors.BF16 || len(view.Data()) != 2*len(values) {
		t.Fatalf("tok.weight as the library reads it: %v, dtype %v, %d bytes; want BF16, %d bytes", ok, view.DType(), len(view.Data()), 2*len(values))
	}
	for i, c := range cases {
		b := binary.LittleEndian.Uint16(view.Data()[2*i:])
		if b != c.bf16 && !(isNaNBF16(b) && isNaNBF16(c.bf16)) {
			t.Errorf("stored bfloat16 of %08x (%s): %04x, PyTorch %04x", c.f32, c.note, b, c.bf16)
		}
	}

	f, err := Read(path, Limits{})
	if err != nil {
		t.Fatalf("Read rejects the BF16 file: %v", err)
	}
	for i, c := range cases {
		got := math.Float32bits(f.Tensors["tok.weight"].F32[i])
		want := uint32(binary.LittleEndian.Uint16(view.Data()[2*i:])) << 16
		if got != want {
			t.Errorf("read back %08x (%s): %08x, want the stored bfloat16 widened, %08x", c.f32, c.note, got, want)
		}
	}
	bias := f.Tensors["blocks.0.att.q.bias"].F32
	if want := []float32{7, 8, -0.10009765625}; len(bias) != 3 || bias[0] != want[0] || bias[1] != want[1] || bias[2] != want[2] {
		t.Errorf("bias read back %v, want %v", bias, want)
	}
	if e := f.Tensors["empty"]; e.F32 == nil || len(e.F32) != 0 {
		t.Errorf("empty tensor read back as %+v", e)
	}
	if s := f.Tensors["scale"]; len(s.F32) != 1 || s.F32[0] != 0.125 {
		t.Errorf("scalar read back as %+v", s)
	}
}

// TestBF16RefusesFloat64 shows that WriteBF16 refuses a float64 tensor
// (whose rounding through float32 would round twice) and leaves no file.
func TestBF16RefusesFloat64(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	err := WriteBF16(path, []Tensor{{Name: "w", Shape: []int{1}, F64: []float64{1}}}, nil)
	if err == nil || !strings.Contains(err.Error(), `tensor "w" is float64`) {
		t.Errorf("error %v, want the float64 tensor named", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a file was left behind")
	}
}
