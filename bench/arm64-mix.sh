#!/usr/bin/env bash
# bench/arm64-mix.sh: the instruction mix of the float32 product's inner
# loop on arm64, NEON kernel against the plain-Go kernel, from the code the
# Go compiler and assembler produce (no arm64 machine is needed, nor is one
# timed): the loop of neonF32 (graph/internal/gemm/kernel_arm64.s) and the
# loop of the Go twin's 4×4 register block (block4x4[float32], what
# -tags purego runs there), each disassembled by binutils from the arm64
# test binary, with instructions, FLOPs and FLOPs per instruction per
# iteration; then, where llvm-mca is installed, its cycle estimate for
# each loop on its Apple M1 model (-mcpu=apple-m1).
#
# Needs binutils-aarch64-linux-gnu; llvm-mca (Debian's llvm) is optional.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOARCH=arm64 go test -c -o "$tmp/gemm.test" ./graph/internal/gemm
aarch64-linux-gnu-objdump -d --no-show-raw-insn "$tmp/gemm.test" >"$tmp/dis"

# loop FUNC FIRST LAST: the instructions of FUNC from the first line
# matching FIRST to the next matching LAST (the loop's branch back),
# addresses and comments dropped, the branch aimed at a label.
loop() {
	awk -v fn="<$1>:" -v first="$2" -v last="$3" '
		index($0, fn) { infn = 1; next }
		infn && /^$/ { exit }
		infn && !on && $0 ~ first { on = 1; print "loop:" }
		on { sub(/^ *[0-9a-f]+:[ \t]*/, ""); sub(/[ \t]*\/\/.*/, "");
		     if ($0 ~ last) { sub(/[0-9a-f]+ <.*/, "loop") ; print; exit } print }
	' "$tmp/dis"
}
loop 'github.com/gptg/gptg/graph/internal/gemm.neonF32.abi0' 'ld1\t\{v24' '^b\.ne' >"$tmp/neon.s"
loop 'github.com/gptg/gptg/graph/internal/gemm.block4x4[go.shape.float32]' 'ldr\ts16' '^b\.gt' >"$tmp/go.s"

printf '%-22s %6s %6s %6s %6s %8s\n' "loop (one iteration)" instr loads fma FLOPs FLOP/ins
for k in neon go; do
	awk -v name="$k" '
		/^loop:/ { next }
		{ n++ }
		/^ld|^ldr/ { loads++ }
		/^fmla.*\.4s/ { fma++; flops += 8 }
		/^fmadd\ts/ { fma++; flops += 2 }
		END { printf "%-22s %6d %6d %6d %6d %8.2f\n", (name == "neon" ? "NEON neonF32 8×12" : "Go block4x4 4×4"), n, loads, fma, flops, flops / n }
	' "$tmp/$k.s"
done
if command -v llvm-mca >/dev/null; then
	for k in neon go; do
		printf '%s, llvm-mca -mcpu=apple-m1: ' "$k"
		llvm-mca -mtriple=aarch64 -mcpu=apple-m1 -iterations=1000 "$tmp/$k.s" |
			awk '/^Total Cycles:/ { print $3 / 1000 " cycles an iteration" }'
	done
fi
