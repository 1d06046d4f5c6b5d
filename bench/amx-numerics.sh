#!/usr/bin/env bash
# TDPBF16PS's arithmetic (bench/amx/amxnum.c): the crafted cases, then
# random tiles checked against the candidate models, on a CPU with
# AMX-BF16 (Linux 5.16+ for arch_prctl(ARCH_REQ_XCOMP_PERM)).
#   bench/amx-numerics.sh [TILES [SEEDS]]   (default 20000 tiles, "1 2 3";
#                                           256 sums a tile)
#   bench/amx-numerics.sh golden            rewrites bench/amxmodel/
#                                           testdata/golden.txt
set -euo pipefail
cd "$(dirname "$0")/.."
if ! grep -qw amx_bf16 /proc/cpuinfo; then
  echo "bench/amx-numerics.sh: this CPU has no AMX-BF16 (no amx_bf16 in /proc/cpuinfo)" >&2
  exit 2
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gcc -O2 -Wall -mamx-tile -mamx-bf16 -mavx512f -mavx512bf16 -o "$tmp/amxnum" bench/amx/amxnum.c -lm
if [ "${1:-}" = golden ]; then
  # 1000 cases: K = 2..32, four operand ranges, C zero and not.
  "$tmp/amxnum" golden 7 1000 >"$tmp/golden.txt"
  mv "$tmp/golden.txt" bench/amxmodel/testdata/golden.txt
  exit 0
fi
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), $(nproc) cores"
echo "before: $(uptime)"
"$tmp/amxnum" crafted
for seed in ${2:-1 2 3}; do
  "$tmp/amxnum" check "$seed" "${1:-20000}"
done
echo "after: $(uptime)"
