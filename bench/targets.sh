#!/usr/bin/env bash
# Memory and time of one training step at vocabulary sizes 65, 11k and 50k
# (BenchmarkTrainStep in graph/tape: embedding 64, 2 blocks, context 64,
# batch 8, float32, fused, one thread), each size in its own process so
# that its peak resident memory is its own.
#
#   bench/targets.sh [ROUNDS] [LABEL=TEST_BINARY ...]
#
# Without binaries it builds this tree's (go test -c ./graph/tape). Given
# several (e.g. before=/tmp/old.test after=/tmp/new.test, built from two
# trees with the same bench_test.go), it runs them in turn, size by size
# and round by round, so that a loaded machine slows them alike. Prints
# one line per run: label, vocabulary, wall ms/step, CPU ms/step (user +
# system), bytes allocated per step, peak RSS in MB.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
[ $# -gt 0 ] && shift
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  go test -c -o /tmp/gptg-targets.test ./graph/tape
  bins=("this=/tmp/gptg-targets.test")
fi
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %6s %10s %10s %8s %8s\n' label vocab wall-ms cpu-ms B/op peak-MB
for r in $(seq "$rounds"); do
  for v in 65 11000 50257; do
    n=5
    [ "$v" = 65 ] && n=200
    [ "$v" = 11000 ] && n=20
    for b in "${bins[@]}"; do
      label=${b%%=*} bin=${b#*=}
      (cd graph/tape && "$bin" -test.run XXX -test.bench "TrainStep/V$v\$" -test.benchtime "${n}x") |
        awk -v l="$label" -v v="$v" '/^BenchmarkTrainStep/ {
          for (i = 1; i <= NF; i++) {
            if ($(i+1) == "ns/op") wall = $i / 1e6
            if ($(i+1) == "cpu-ms/op") cpu = $i
            if ($(i+1) == "B/op") bop = $i
            if ($(i+1) == "peak-MB") peak = $i
          }
          printf "%-8s %6d %10.1f %10.1f %8d %8.1f\n", l, v, wall, cpu, bop, peak }'
    done
  done
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
