//go:build amd64 && !purego

package gemm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// needBF16 skips a test of the bfloat16 assembly on a CPU without
// AVX512_BF16 (CI's CPUs have it: a skip fails CI there).
func needBF16(t *testing.T) {
	t.Helper()
	if !haveBF16 {
		t.Skip("this CPU has no AVX512_BF16: the bfloat16 products run the Go twin here")
	}
}

// bf16Words draws n packed pairs: mostly numbers of a product's size, and
// a share of hard cases — random bit patterns over the whole exponent
// range (overflow, sums that cancel, results in the denormal range, which
// the instruction flushes), tiny numbers whose products are denormal, and
// numbers that differ in the last bits so that adds round to ties. With
// tiny, every number is tiny (2⁻⁶⁵ to 2⁻⁶², either sign): the chains'
// sums then lie near 2⁻¹²⁶, and even + odd and s + (even + odd) are often
// denormal, which the model flushes.
func bf16Words(rng *rand.Rand, n int, tiny bool) []uint32 {
	w := make([]uint32, n)
	half := func() uint32 {
		if tiny {
			return bf16Bits(float32(math.Ldexp(1+rng.Float64(), -65+rng.IntN(3)) * float64(1-2*rng.IntN(2))))
		}
		switch rng.IntN(6) {
		case 0: // any finite bfloat16 (no NaN, no denormal: packing never makes them)
			for {
				h := rng.Uint32() & 0xffff
				if e := h >> 7 & 0xff; e != 0xff && e != 0 {
					return h
				}
			}
		case 1: // around 2⁻⁶³: products near float32's smallest normal, 2⁻¹²⁶
			return bf16Bits(float32(math.Ldexp(1+rng.Float64(), -63-rng.IntN(3)) * float64(1-2*rng.IntN(2))))
		case 2: // 1 + a few low bits: sums whose last bit ties
			return bf16Bits(float32((1 + float64(rng.IntN(4))/128) * float64(1-2*rng.IntN(2))))
		}
		return bf16Bits(float32(2*rng.Float64() - 1))
	}
	for i := range w {
		w[i] = half() | half()<<16
	}
	return w
}

// chainsOf returns words in pairs order (word (r, q) at r·rowStride +
// q·qStride, q < kp, kp even) reordered into chains order (bf16Steps).
func chainsOf(words []uint32, rows, kp, rowStride, qStride int) []uint32 {
	out := append([]uint32(nil), words...)
	for r := range rows {
		for q := 0; q < kp; q += 2 {
			i0, i1 := r*rowStride+q*qStride, r*rowStride+(q+1)*qStride
			w0, w1 := words[i0], words[i1] // steps 0, 1 | 2, 3 (low, high)
			out[i0] = w1&0xffff | w0<<16
			out[i1] = w1>>16 | w0&0xffff0000
		}
	}
	return out
}

// TestBF16KernelBits: the assembly kernel, on words in chains order, gives
// the Go twin's bits on the same words in pairs order (the model: two
// chains a chunk, each add rounded once, denormal sums flushed), on hard
// cases, for one strip and several, from zero and added to C or a bias,
// for both layouts of A's strips, one chunk and many, and on tiny numbers
// whose sums the chunks' adds flush.
// This is the measurement of the hardware against the model: any
// difference in the order of the adds, a fused pair, or no flush fails
// here.
func TestBF16KernelBits(t *testing.T) {
	needBF16(t)
	mr, nr := bf16Kernels.mr, bf16Kernels.nr
	rng := rand.New(rand.NewPCG(21, 22))
	for _, kp := range []int{16, 32, 64, 256} {
		for _, strips := range []int{1, 3} {
			for _, addKind := range []string{"none", "c", "bias"} {
				for trial := range 20 {
					aRow, aStep := kp, 1
					if trial%2 == 1 {
						aRow, aStep = 1, mr*strips
					}
					aNext := kp * mr
					if trial%2 == 1 {
						aNext = mr
					}
					tiny := trial%4 >= 2
					a, b := bf16Words(rng, strips*kp*mr, tiny), bf16Words(rng, kp*nr, tiny)
					ldc := nr + 3
					c0 := to32(randoms(rng, strips*mr*ldc))
					if tiny {
						for i := range c0 {
							c0[i] *= 0x1p-126
						}
					}
					got := append([]float32(nil), c0...)
					add, ldAdd := kernelAdd(rng, addKind, c0, ldc, nr)
					ac := chainsOf(a, strips*mr, kp, aRow, aStep)
					microKernelBF16(kp, strips, ac, aRow, aStep, aNext, chainsOf(b, nr, kp, 1, nr), got, ldc, add, ldAdd)
					want := twinStrips(mr, nr, kp, strips, a, aRow, aStep, aNext, b, c0, ldc, add, ldAdd)
					checkKernelBits(t, fmt.Sprintf("kp %d strips %d add %s trial %d", kp, strips, addKind, trial), got, want, ldc)
				}
			}
		}
	}
}

// kernelAdd is what a kernel test adds the sums to: nothing ("none"), C
// itself ("c", ldc apart) or a random bias row of nr ("bias").
func kernelAdd(rng *rand.Rand, addKind string, c []float32, ldc, nr int) (add []float32, ldAdd int) {
	switch addKind {
	case "c":
		return c, ldc
	case "bias":
		return to32(randoms(rng, nr)), 0
	}
	return nil, 0
}

// twinStrips is what the Go twin (kernelBF16Go) gives for strips whole
// mr×nr tiles one below the other (strip s at a[s·aNext …], word (r, q)
// at r·aRow + q·aStep, pairs order), into a copy of c.
func twinStrips(mr, nr, kp, strips int, a []uint32, aRow, aStep, aNext int, b []uint32, c []float32, ldc int, add []float32, ldAdd int) []float32 {
	want := append([]float32(nil), c...)
	for s := range strips {
		var addS []float32
		if add != nil {
			addS = add[s*mr*ldAdd:]
		}
		kernelBF16Go(mr, nr, mr, nr, kp, a[s*aNext:], aRow, aStep, b, want[s*mr*ldc:], ldc, addS, ldAdd)
	}
	return want
}

// checkKernelBits fails the test at the first element of got (rows ldc
// apart) whose bits are not the twin's.
func checkKernelBits(t *testing.T, trial string, got, want []float32, ldc int) {
	t.Helper()
	for x := range got {
		if g, w := got[x], want[x]; !sameBits(g, w) {
			t.Fatalf("%s: element (%d, %d) = %g (%#08x), twin %g (%#08x)",
				trial, x/ldc, x%ldc, g, math.Float32bits(g), w, math.Float32bits(w))
		}
	}
}

// TestBF16PackBits: bf16Pack and bf16Rows (VCVTNE2PS2BF16) give the Go
// packers' words, in pairs and in chains order, rounding as RoundBF16
// does, on random bit patterns (NaN, infinities, denormals included) and
// ties, for every layout, edges (cnt < w), every k mod 4 and k past a
// chunk, widths up to the widest block (a transposed A's mc rows, whose
// padding reads as many zeros), and write nothing past their strip.
func TestBF16PackBits(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(23, 24))
	var wk worker
	for _, w := range []int{6, 32, 41, bf16Kernels.mc} {
		for _, kc := range []int{1, 2, 3, 7, 64, 66, 513} {
			for _, cnt := range []int{w, w - 1, 1} {
				for _, layout := range []string{"pairs", "pairs along rows", "rows"} {
					for _, chains := range []bool{false, true} {
						ld := w + 5 + kc
						src := make([]float32, (w+kc+2)*ld)
						for i := range src {
							u := rng.Uint32()
							if rng.IntN(2) == 0 {
								u = u&^0xffff | 0x8000 // a tie
							}
							src[i] = math.Float32frombits(u)
						}
						kp := bf16BlockWords(kc)
						got, want := make([]uint32, kp*w+1), make([]uint32, kp*w+1)
						for i := range got {
							got[i], want[i] = 0xdeadbeef, 0xdeadbeef
						}
						if layout == "rows" {
							packBF16Rows(true, chains, got[:kp*w], kp, w, src, ld, 2, kc, 1, cnt)
							packBF16Rows(false, chains, want[:kp*w], kp, w, src, ld, 2, kc, 1, cnt)
						} else {
							packBF16(&wk, true, chains, got[:kp*w], kp, w, src, ld, layout != "pairs", 2, kc, 1, cnt)
							packBF16Go(chains, want[:kp*w], kp, w, src, ld, layout != "pairs", 2, kc, 1, cnt)
						}
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("w %d kc %d cnt %d %s chains %v: word %d = %#08x, want %#08x", w, kc, cnt, layout, chains, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestBF16Encodings disassembles this test binary's bfloat16 kernels
// (objdump, GNU binutils) and checks that each instruction written as
// BYTEs in bf16_amd64.s decodes, at its place in its function, to the
// instruction its comment names.
func TestBF16Encodings(t *testing.T) {
	checkBYTEs(t, "bf16_amd64.s", 5, "vdpbf16ps", "vcvtne2ps2bf16")
}

// checkBYTEs disassembles this test binary (objdump, GNU binutils) and
// checks that each instruction written as BYTEs in the assembly file
// decodes, at its place in its function, to the instruction its comment
// names: funcs functions have BYTE lines, and the instructions of the
// binary whose mnemonic starts with one of mnemonics are those lines, in
// order. Each function is found by the bytes of its first BYTE line.
func checkBYTEs(t *testing.T, file string, funcs int, mnemonics ...string) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Per function, in order: the bytes and the comment of each BYTE line.
	type insn struct{ hex, text string }
	want := map[string][]insn{}
	var order []string
	fn := ""
	byteLine := regexp.MustCompile(`^\s*((?:BYTE \$0x[0-9a-f]{2};?\s*)+)// (.*)$`)
	for _, line := range strings.Split(string(src), "\n") {
		if m := regexp.MustCompile(`^TEXT ·(\w+)\(SB\)`).FindStringSubmatch(line); m != nil {
			fn = m[1]
			order = append(order, fn)
		}
		if m := byteLine.FindStringSubmatch(line); m != nil {
			hex := strings.Join(regexp.MustCompile(`0x([0-9a-f]{2})`).FindAllString(m[1], -1), " ")
			hex = strings.ReplaceAll(hex, "0x", "")
			want[fn] = append(want[fn], insn{hex, m[2]})
		}
	}
	if len(want) != funcs {
		t.Fatalf("BYTE-encoded instructions in %d functions of %s, want %d", len(want), file, funcs)
	}
	// go test links without a symbol table: each function is found by
	// the bytes of its first BYTE-encoded instruction in .text and
	// disassembled from there up to its RET.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	text := bin.Section(".text")
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, ",", ", ")), " ") }
	for _, fn := range order {
		if len(want[fn]) == 0 {
			continue // no BYTE lines
		}
		first := make([]byte, 0, 8)
		for _, h := range strings.Fields(want[fn][0].hex) {
			var b byte
			fmt.Sscanf(h, "%x", &b)
			first = append(first, b)
		}
		at := bytes.Index(code, first) // (the first occurrence: a later one is the same instruction again)
		if at < 0 {
			t.Fatalf("%s: its first instruction's bytes %s are not in .text", fn, want[fn][0].hex)
		}
		start := text.Addr + uint64(at)
		out, err := exec.Command("objdump", "-d", "-M", "intel", "--insn-width=16",
			fmt.Sprintf("--start-address=%#x", start), fmt.Sprintf("--stop-address=%#x", start+8192), exe).Output()
		if err != nil {
			t.Fatalf("objdump %s: %v (objdump from GNU binutils is needed)", fn, err)
		}
		var got []insn
		line := regexp.MustCompile(`^\s*[0-9a-f]+:\t((?:[0-9a-f]{2} )+)\s*\t(.*)$`)
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			m := line.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			text := strings.TrimSpace(m[2])
			if text == "ret" {
				break
			}
			if strings.Contains(text, "(bad)") {
				t.Fatalf("%s: objdump cannot decode %q", fn, m[1])
			}
			for _, mn := range mnemonics {
				if strings.HasPrefix(text, mn) {
					got = append(got, insn{strings.TrimSpace(m[1]), text})
					break
				}
			}
		}
		if len(got) != len(want[fn]) {
			t.Fatalf("%s: %d instructions %v in the binary, %d BYTE-encoded in %s", fn, len(got), mnemonics, len(want[fn]), file)
		}
		for i, w := range want[fn] {
			if got[i].hex != w.hex || norm(got[i].text) != norm(w.text) {
				t.Errorf("%s instruction %d: bytes %s decode to %q, want %s = %q", fn, i, got[i].hex, got[i].text, w.hex, w.text)
			}
		}
	}
}

// TestBF16KernelName: BF16Kernel names the kernel the products run:
// "amx" where AMX runs (on this project's Xeon), "avx512bf16" with AMX
// kept off, "avx512bf16 (AMX unused: why)" where the OS refuses it, "go"
// under Use("Go").
func TestBF16KernelName(t *testing.T) {
	want := map[bool]string{true: "avx512bf16", false: "go"}[haveBF16]
	if haveBF16 && amxWhyNot() == "" {
		want = "amx"
	} else if haveBF16 && amxCPU() == "" {
		want = "avx512bf16 (AMX unused: " + amxWhyNot() + ")"
	}
	if got := BF16Kernel(); got != want {
		t.Errorf("BF16Kernel() = %q, want %q (AVX512_BF16 %v, AMX: %q)", got, want, haveBF16, amxWhyNot())
	}
	if haveBF16 && amxCPU() == "" { // the OS refusing the tile state: VDPBF16PS, and the name says why
		saved := amxWhyNot
		amxWhyNot = func() string { return "arch_prctl(ARCH_REQ_XCOMP_PERM) refused: a test" }
		got, on := BF16Kernel(), bf16AMX()
		amxWhyNot = saved
		if want := "avx512bf16 (AMX unused: arch_prctl(ARCH_REQ_XCOMP_PERM) refused: a test)"; got != want || on {
			t.Errorf("AMX refused: BF16Kernel() = %q, want %q; products on AMX: %v", got, want, on)
		}
	}
	withAMX(false, func() {
		if got := BF16Kernel(); haveBF16 && got != "avx512bf16" {
			t.Errorf("with AMX off: BF16Kernel() = %q, want \"avx512bf16\"", got)
		}
	})
	restore := Use("Go")
	defer restore()
	if got := BF16Kernel(); got != "go" {
		t.Errorf("under Use(\"Go\"): BF16Kernel() = %q, want \"go\"", got)
	}
}
