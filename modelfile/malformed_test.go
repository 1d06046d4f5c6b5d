package modelfile

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawFile assembles a safetensors file by hand: header length, header, data.
func rawFile(header string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, data)...)
}

// withLength is rawFile with a header length that lies.
func withLength(n uint64, rest string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
}

// validFile is a correct two-tensor file, written by Write.
func validFile(t testing.TB) []byte {
	path := filepath.Join(t.TempDir(), "valid.safetensors")
	if err := Write(path, sample(), sampleMeta()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// readBytes stores content under a fixed name and reads it.
func readBytes(t testing.TB, content []byte, limits Limits) (string, error) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path, limits)
	return path, err
}

const f32x2 = `"dtype":"F32","shape":[2]`

func TestReadMalformed(t *testing.T) {
	valid := validFile(t)
	cases := []struct {
		name    string
		content []byte
		want    string
	}{
		{"empty file", nil, "file is empty"},
		{"shorter than 8 bytes", []byte{1, 2, 3, 4, 5}, "file is only 5 bytes"},
		{"huge header length", withLength(9999999999, "{}  "), "header length 9999999999 exceeds the file size 12 (4 bytes follow the length field)"},
		{"header length 0", withLength(0, "{}"), "header length 0 is too small"},
		{"header length 1", withLength(1, "{}"), "header length 1 is too small"},
		{"header not JSON", rawFile(`{"a":`, 0), "header is not valid JSON: unexpected end of JSON input"},
		{"header bad JSON", rawFile(`{"a" 1}`, 0), "header is not valid JSON: invalid character '1' after object key (after 6 bytes of the header)"},
		{"header an array", rawFile(`[1, 2]`, 0), "header is a JSON array, not an object"},
		{"header null", rawFile(`null`, 0), "header is a JSON null, not an object"},
		{"header a string", rawFile(`"{}"`, 0), "header is a JSON string, not an object"},
		{"duplicate key", rawFile(`{"a":{`+f32x2+`,"data_offsets":[0,8]},"a":{`+f32x2+`,"data_offsets":[0,8]}}`, 8), `header has the key "a" twice`},
		{"unknown dtype", rawFile(`{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, 4), `tensor "w": dtype "F16" is not supported`},
		{"dtype not a string", rawFile(`{"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}`, 8), `tensor "w": dtype is a JSON number, not a string`},
		{"entry not an object", rawFile(`{"w":[1]}`, 0), `tensor "w": entry is a JSON array, not an object`},
		{"unknown field", rawFile(`{"w":{`+f32x2+`,"data_offsets":[0,8],"x":1}}`, 8), `tensor "w": unknown field "x"`},
		{"missing field", rawFile(`{"w":{`+f32x2+`}}`, 8), `tensor "w": no data_offsets field`},
		{"negative shape", rawFile(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, 0), `tensor "w": shape[0] is negative (-1)`},
		{"fractional shape", rawFile(`{"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}`, 8), `tensor "w": shape[0] is not a whole number (2.5)`},
		{"string in shape", rawFile(`{"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}}`, 8), `tensor "w": shape[0] is a JSON string, not an integer`},
		{"shape not an array", rawFile(`{"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}`, 8), `tensor "w": shape is a JSON number, not an array`},
		{"huge shape number", rawFile(`{"w":{"dtype":"F32","shape":[123456789012345678901234567890],"data_offsets":[0,8]}}`, 8), `tensor "w": shape[0] is too large (12345678901234567890...)`},
		{"shape overflows", rawFile(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, 8), `tensor "w": shape [4294967296 4294967296] has too many elements`},
		{"three offsets", rawFile(`{"w":{`+f32x2+`,"data_offsets":[0,4,8]}}`, 8), `tensor "w": data_offsets has 3 numbers, want 2`},
		{"offsets reversed", rawFile(`{"w":{`+f32x2+`,"data_offsets":[8,0]}}`, 8), `tensor "w": data_offsets [8, 0] end before they begin`},
		{"negative offset", rawFile(`{"w":{`+f32x2+`,"data_offsets":[-8,0]}}`, 8), `tensor "w": data_offsets[0] is negative (-8)`},
		{"size mismatch", rawFile(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), `tensor "w": data_offsets [0, 8] span 8 bytes, but F32 [3] needs 12`},
		{"offsets past end", rawFile(`{"w":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}`, 8), `tensor "w" ends at byte 16, past the end of the data (8 bytes)`},
		{"overlapping tensors", rawFile(`{"a":{`+f32x2+`,"data_offsets":[0,8]},"b":{`+f32x2+`,"data_offsets":[4,12]}}`, 12), `tensors "a" (bytes 0 to 8) and "b" (bytes 4 to 12) overlap`},
		{"gap", rawFile(`{"a":{`+f32x2+`,"data_offsets":[0,8]},"b":{`+f32x2+`,"data_offsets":[12,20]}}`, 20), `data bytes 8 to 12 belong to no tensor (a gap before tensor "b")`},
		{"gap at the start", rawFile(`{"b":{`+f32x2+`,"data_offsets":[4,12]}}`, 12), `data bytes 0 to 4 belong to no tensor`},
		{"trailing bytes", rawFile(`{"a":{`+f32x2+`,"data_offsets":[0,8]}}`, 12), `data bytes 8 to 12 belong to no tensor (after the last one)`},
		{"metadata not a string", rawFile(`{"__metadata__":{"format":"gptg/1","model":{"vocab":65}}}`, 0), `__metadata__ "model" is a JSON object, not a string`},
		{"metadata a number", rawFile(`{"__metadata__":{"format":1}}`, 0), `__metadata__ "format" is a JSON number, not a string`},
		{"metadata not an object", rawFile(`{"__metadata__":["gptg/1"]}`, 0), `__metadata__ is a JSON array, not an object`},
		{"truncated data", valid[:len(valid)-3], "past the end of the data"},
		{"truncated header", valid[:20], "exceeds the file size 20"},
		{"duplicate metadata key", rawFile(`{"__metadata__":{"format":"gptg/1","format":"pt"}}`, 0), `__metadata__: key "format" appears twice`},
		{"a TOML config", []byte("# config\n[model]\nheads = 4\n"), "not a safetensors model file: it is text that looks like a TOML config"},
		{"a TOML config without comments", []byte("extends = \"../shakespeare.toml\"\n"), "not a safetensors model file: it is text that looks like a TOML config"},
		{"JSON", []byte(`{"vocab": 65, "context": 32}`), "not a safetensors model file: it is text that looks like JSON"},
		{"plain text", []byte("First Citizen:\nBefore we proceed any further, hear me speak.\n"), "not a safetensors model file: it is a text file"},
		{"a zip (a .pt file)", append([]byte("PK\x03\x04"), make([]byte, 40)...), "not a safetensors model file: it is a zip archive"},
		{"binary that is not safetensors", withLength(1<<40, "\x00\x01"), "not a safetensors model file: header length 1099511627776 exceeds the file size 10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, err := readBytes(t, c.content, Limits{})
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q\nwant one line %q", msg, path+": ..."+c.want+"...")
			}
		})
	}
}

func TestReadLimits(t *testing.T) {
	valid := validFile(t)
	cases := []struct {
		name   string
		limits Limits
		want   string
	}{
		{"file size", Limits{MaxFileSize: 100}, "more than the limit of 100"},
		{"tensors", Limits{MaxTensors: 2}, "header lists more than 2 tensors"},
		{"elements", Limits{MaxElements: 5}, `tensor "tok.weight": shape [3 2] has 6 elements, more than the limit of 5`},
	}
	for _, c := range cases {
		if _, err := readBytes(t, valid, c.limits); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := readBytes(t, valid, Limits{MaxTensors: 5, MaxElements: 6, MaxFileSize: int64(len(valid))}); err != nil {
		t.Errorf("limits that fit exactly: %v", err)
	}
}

// A header length over the safetensors limit is refused before any of it
// is read. The file is sparse, so the test costs no disk space.
func TestReadHeaderOverLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.safetensors")
	if err := os.WriteFile(path, withLength(maxHeaderSize+8, "{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, maxHeaderSize+64); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path, Limits{})
	if err == nil || !strings.Contains(err.Error(), "header length 100000008 exceeds the safetensors limit of 100000000 bytes") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir, Limits{}); err == nil || err.Error() != dir+": is a directory, not a model file" {
		t.Fatalf("err = %v", err)
	}
}

// TestManyTensorsRefused: a header listing more than DefaultMaxTensors
// (empty) tensors is refused while parsing, before it costs gigabytes.
func TestManyTensorsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range DefaultMaxTensors + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`, i)
	}
	b.WriteString("}")
	_, err := readBytes(t, rawFile(b.String(), 0), Limits{})
	if err == nil || !strings.Contains(err.Error(), "header lists more than 65536 tensors") {
		t.Fatalf("err = %v", err)
	}
}

func TestUniqueKeys(t *testing.T) {
	for text, want := range map[string]string{
		`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`: "",
		`{"a":1,"a":2}`:                         `key "a" appears twice`,
		`{"x":{"heads":2,"vocab":3,"heads":4}}`: `key "heads" appears twice`,
		`[{"a":"a","b":"a"},{"a":{"a":"a"}}]`:   "",
		`{"a":["a","a"],"b":"a"}`:               "",
	} {
		err := UniqueKeys([]byte(text))
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", text, err, want)
		}
	}
}
