#!/usr/bin/env bash
# The model's matrix products against the core's peak: BenchmarkMul run
# RUNS times, per shape the median, min and max of GFLOP/cpu-s and of the
# share of the measured peak (BenchmarkPeak's register-only FMA loop).
#   bench/kernels.sh [RUNS [SHAPES]]     (default 5; SHAPES: -bench levels under Mul/, e.g. 'square/^1024$')
#   GEMM_THREADS=2 bench/kernels.sh      (products split over two threads)
# Run it on a quiet machine (here: inside /work/quiet); `uptime` is printed
# before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
shapes=${2:-'(linear|attention)/(rows768_C128|rows4096_C384|T256_hs64)/'}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/gemm.test" ./graph/internal/gemm
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $runs runs"
echo "before: $(uptime)"
(cd "$tmp" && ./gemm.test -test.run '^$' -test.bench "^BenchmarkMul$/$shapes" -test.benchtime 0.2s -test.count "$runs") >"$tmp/out"
grep '^peak' "$tmp/out"
echo "after: $(uptime)"
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
  }' "$tmp/out"
