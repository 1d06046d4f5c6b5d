#!/usr/bin/env bash
# The model's matrix products against the core's peak: BenchmarkMul run
# RUNS times, per shape the median, min and max of GFLOP/cpu-s and of the
# share of the measured peak (BenchmarkPeak's register-only FMA loop).
#   bench/kernels.sh [RUNS [SHAPES]]     (default 5; SHAPES: -bench levels under Mul/, e.g. 'square/^1024$')
#   GEMM_THREADS=2 bench/kernels.sh      (products split over two threads)
#   GEMM_BF16=1 bench/kernels.sh         (bfloat16 products; % of the bfloat16 peak, a VDPBF16PS loop)
#   bench/kernels.sh --bf16 [RUNS [SHAPES]]
#                                        (float32 and bfloat16 runs alternating, in one table
#                                         with the ratio of their medians)
# Run it on a quiet machine (here: inside /work/quiet); `uptime` is printed
# before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
both=
if [ "${1:-}" = --bf16 ]; then both=1; shift; fi
runs=${1:-5}
shapes=${2:-'(linear|attention)/(rows768_C128|rows4096_C384|T256_hs64)/'}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/gemm.test" ./graph/internal/gemm
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $runs runs"
echo "before: $(uptime)"
# table FILE: per product, the median, min and max of BenchmarkMul's runs.
table() {
  awk '
  /^BenchmarkMul\// {
    name = $1; sub(/^BenchmarkMul\//, "", name); sub(/-[0-9]+$/, "", name)
    for (i = 2; i < NF; i++) {
      if ($(i+1) == "GFLOP/cpu-s") g[name] = g[name] " " $i
      if ($(i+1) == "%peak") p[name] = p[name] " " $i
    }
    if (!(name in seen)) { seen[name] = 1; order[++n] = name }
  }
  function stats(s, out,   v, k, m, i, j, t) {
    k = split(s, v, " ")
    for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
    m = k % 2 ? v[(k+1)/2] : (v[k/2] + v[k/2+1]) / 2
    out["med"] = m; out["min"] = v[1]; out["max"] = v[k]; out["n"] = k
  }
  END {
    printf "%-34s %5s %22s %24s\n", "product", "runs", "GFLOP/cpu-s median", "% of peak median (min–max)"
    for (i = 1; i <= n; i++) {
      stats(g[order[i]], G); stats(p[order[i]], P)
      printf "%-34s %5d %22.1f %10.1f (%.1f–%.1f)\n", order[i], P["n"], G["med"], P["med"], P["min"], P["max"]
    }
  }' "$1"
}
bench() { (cd "$tmp" && ./gemm.test -test.run '^$' -test.bench "^BenchmarkMul$/$shapes" -test.benchtime 0.2s -test.count "$1"); }
if [ -z "$both" ]; then
  bench "$runs" >"$tmp/out"
  grep '^peak' "$tmp/out"
  echo "after: $(uptime)"
  table "$tmp/out"
  exit
fi
# --bf16: one run of each shape in float32, then one in bfloat16, RUNS
# times, so that both see the same load.
for _ in $(seq "$runs"); do
  GEMM_BF16=0 bench 1 >>"$tmp/f32"
  GEMM_BF16=1 bench 1 >>"$tmp/bf16"
done
grep -m1 '^peak' "$tmp/f32"
grep -m1 '^peak' "$tmp/bf16"
echo "after: $(uptime)"
table "$tmp/f32" >"$tmp/t32"
table "$tmp/bf16" >"$tmp/t16"
printf "%-34s %5s %14s %14s %8s %16s\n" product runs "float32" "bfloat16" "ratio" "bf16 % of peak"
printf "%-34s %5s %14s %14s %8s %16s\n" "" "" "GFLOP/cpu-s" "GFLOP/cpu-s" "" "(median)"
awk 'NR == FNR { g16[$1] = $3; p16[$1] = $4; next }
  FNR > 1 { printf "%-34s %5d %14.1f %14.1f %7.2f× %16.1f\n", $1, $2, $3, g16[$1], g16[$1] / $3, p16[$1] }' "$tmp/t16" "$tmp/t32"
