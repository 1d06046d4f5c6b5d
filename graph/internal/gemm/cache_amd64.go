//go:build amd64 && !purego

package gemm

// cpuid runs the CPUID instruction for leaf and subleaf.
//
//go:noescape
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// caches returns one core's caches as the CPU reports them, zero for what
// it does not report: CPUID's deterministic cache parameters (leaf 4 on
// Intel, 0x8000001D on AMD), else AMD's older L1 and L2 leaves 0x80000005
// and 0x80000006 (what a virtual machine without the topology extensions,
// such as this project's Zen 5, reports; glibc reads the same).
func caches() (c cacheSizes) {
	ext, _, _, _ := cpuid(0x80000000, 0)
	std, _, _, _ := cpuid(0, 0)
	leaf := uint32(0)
	switch {
	case ext >= 0x8000001D:
		leaf = 0x8000001D
	case std >= 4:
		leaf = 4
	}
	for sub := uint32(0); leaf != 0 && sub < 16; sub++ {
		eax, ebx, ecx, _ := cpuid(leaf, sub)
		kind, level := eax&31, eax>>5&7
		if kind == 0 {
			break
		}
		line, parts, ways := int(ebx&0xfff)+1, int(ebx>>12&0x3ff)+1, int(ebx>>22)+1
		size := ways * parts * line * (int(ecx) + 1)
		switch {
		case level == 1 && kind == 1: // data
			c.l1d, c.l1dWays = size, ways
		case level == 2 && kind != 2: // unified (or data)
			c.l2 = size
		}
	}
	if c.l1d == 0 && ext >= 0x80000005 {
		_, _, ecx, _ := cpuid(0x80000005, 0) // KiB in bits 31–24, ways in 23–16
		c.l1d, c.l1dWays = int(ecx>>24)<<10, int(ecx>>16&0xff)
	}
	if c.l2 == 0 && ext >= 0x80000006 {
		_, _, ecx, _ := cpuid(0x80000006, 0) // KiB in bits 31–16
		c.l2 = int(ecx>>16) << 10
	}
	if c.l1dWays == 0xff { // "fully associative"
		c.l1dWays = c.l1d / 64
	}
	return c
}
