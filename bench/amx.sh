#!/usr/bin/env bash
# The AMX probe (bench/amx/amxprobe.c): TDPBF16PS's peak on one core and
# how far its sums are from those of gptg's bfloat16 kernels (VDPBF16PS
# and their plain-Go twin), on a CPU with AMX-BF16 (Intel Sapphire Rapids
# and later; Linux 5.16+ for arch_prctl(ARCH_REQ_XCOMP_PERM)).
#   bench/amx.sh [ITERATIONS [SEEDS]]   (default 20000000 and "1 2 3")
# `uptime` is printed before and after; the peak is per CPU second too.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! grep -qw amx_bf16 /proc/cpuinfo; then
  echo "bench/amx.sh: this CPU has no AMX-BF16 (no amx_bf16 in /proc/cpuinfo)" >&2
  exit 2
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gcc -O2 -Wall -mamx-tile -mamx-bf16 -mavx512f -mavx512bf16 -o "$tmp/amxprobe" bench/amx/amxprobe.c -lm
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), $(nproc) cores"
echo "before: $(uptime)"
for seed in ${2:-1 2 3}; do
  "$tmp/amxprobe" "${1:-20000000}" "$seed"
done
echo "after: $(uptime)"
