package train

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadMetricsBounds: ReadMetrics keeps complete rows only, and refuses
// a file of more rows than a run writes (89M rows of "{}" fit in the
// 256 MiB file bound and took 8 GB as rows) or a row longer than one can be.
func TestReadMetricsBounds(t *testing.T) {
	write := func(t *testing.T, b []byte) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, MetricsFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("partial last row", func(t *testing.T) {
		rows, err := ReadMetrics(write(t, []byte(`{"step":1,"loss":2.5}`+"\n"+`{"step":2,"lo`)))
		if err != nil || len(rows) != 1 || rows[0].Step != 1 || rows[0].Loss != 2.5 {
			t.Fatalf("rows %+v, err %v; want the one complete row", rows, err)
		}
	})
	t.Run("too many rows", func(t *testing.T) {
		dir := write(t, bytes.Repeat([]byte("{}\n"), maxMetricsRows+1))
		_, err := ReadMetrics(dir)
		if err == nil || !strings.Contains(err.Error(), "more than 2097152 rows") {
			t.Fatalf("err %v; want the row bound named", err)
		}
		if err := os.WriteFile(filepath.Join(dir, MetricsFile), bytes.Repeat([]byte("{}\n"), maxMetricsRows), 0o644); err != nil {
			t.Fatal(err)
		}
		if rows, err := ReadMetrics(dir); err != nil || len(rows) != maxMetricsRows {
			t.Fatalf("%d rows, err %v; want exactly the bound read", len(rows), err)
		}
	})
	t.Run("long row", func(t *testing.T) {
		long := `{"step":1,"pad":"` + strings.Repeat("x", maxRowBytes) + "\"}\n"
		_, err := ReadMetrics(write(t, []byte(`{"step":1}`+"\n"+long)))
		if err == nil || !strings.Contains(err.Error(), "row 2 is longer than") {
			t.Fatalf("err %v; want row 2 named as too long", err)
		}
		ok := `{"step":1,"pad":"` + strings.Repeat("x", 100<<10) + "\"}\n"
		if rows, err := ReadMetrics(write(t, []byte(ok))); err != nil || len(rows) != 1 {
			t.Fatalf("a 100 KB row: %d rows, err %v", len(rows), err)
		}
	})
}
