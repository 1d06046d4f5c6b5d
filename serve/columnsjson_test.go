package serve

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestColumnsWriteJSON: /api/metrics's answer, written a chunk at a time
// (marshalled whole, six answers of a 1.65M-row run would hold 69 MB
// each), is byte for byte json.Marshal's.
func TestColumnsWriteJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var rows []row
	for i := range 3*columnChunk + 17 {
		r := row{Step: i, LR: 6e-4 * rng.Float64(), Loss: 4 * rng.Float64(), TokensPerSec: 1e5 * rng.Float64(), ElapsedSecs: float64(i)}
		switch i % 97 {
		case 0:
			tl := rng.Float64()
			r.TestLoss = &tl
		case 1:
			r.Loss, r.LR = 1e-9, 1e21 // json's exponent forms
		}
		rows = append(rows, r)
	}
	for _, n := range []int{0, 1, columnChunk, len(rows)} {
		c := toColumns(rows[:n])
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := c.writeJSON(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%d rows: writeJSON differs from json.Marshal (%d vs %d bytes)", n, got.Len(), len(want))
		}
	}

}
