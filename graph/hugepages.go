package graph

import "unsafe"

// hugePage is the size of a transparent huge page on x86-64 and arm64
// Linux (the default 4 KiB base page with 2 MiB PMD mappings).
const hugePage = 2 << 20

// newBuffer returns n zeroed elements for a fused op's output. Buffers of
// at least two huge pages are laid out so that their 2 MiB-aligned
// interior is backed by transparent huge pages where the system allows it
// (adviseHugePages): a training step at nanoGPT's 10.8M shape walks
// a gigabyte of activations with row strides of kilobytes, and on 4 KiB
// pages the products spent a share of their time on TLB misses
// (bench/NOTES.md H1). Smaller buffers are a plain make.
func newBuffer[F float32 | float64](n int) []F {
	size := n * int(unsafe.Sizeof(F(0)))
	if size < 2*hugePage || !hugePagesAvailable {
		return make([]F, n)
	}
	// The extra huge page lets the interior start on a 2 MiB boundary; the
	// part of it before that boundary is never touched, so it costs no
	// memory.
	pad := hugePage / int(unsafe.Sizeof(F(0)))
	buf := make([]F, n+pad)
	start := uintptr(unsafe.Pointer(&buf[0]))
	skip := int((hugePage-start%hugePage)%hugePage) / int(unsafe.Sizeof(F(0)))
	buf = buf[skip : skip+n : skip+n]
	adviseHugePages(unsafe.Pointer(&buf[0]), size)
	return buf
}
