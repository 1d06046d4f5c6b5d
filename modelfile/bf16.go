package modelfile

import (
	"encoding/binary"
	"io"
	"math"
)

// bf16Bits is x rounded to bfloat16 (the top 16 bits of a float32), as
// PyTorch's .to(torch.bfloat16) rounds it, so that a file exported by gptg
// holds what PyTorch would have saved: to nearest, ties to even; a
// subnormal rounds like any other number (no flush to zero, unlike
// VDPBF16PS and the products of graph/internal/gemm); a finite number past
// bfloat16's largest becomes infinity; a NaN stays a NaN, quiet, with its
// sign and top payload bits (PyTorch writes 0xffff or 0x7fc0 for every
// NaN: the payload is no one's to rely on).
func bf16Bits(x float32) uint16 {
	u := math.Float32bits(x)
	if u&0x7fffffff > 0x7f800000 { // NaN: rounding could carry it into infinity
		return uint16(u>>16 | 0x40)
	}
	return uint16((u + 0x7fff + u>>16&1) >> 16)
}

// readBF16 fills dst with the little-endian bfloat16s read from r, widened
// to float32 (exactly: a bfloat16 is a float32's top half), through buf
// (of a multiple of 8 bytes).
func readBF16(r io.Reader, dst []float32, buf []byte) error {
	for len(dst) > 0 {
		b := buf[:min(len(buf), 2*len(dst))]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range len(b) / 2 {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
		dst = dst[len(b)/2:]
	}
	return nil
}
