#!/usr/bin/env bash
# gptg train's own tokens/s on 1 thread and on N, alternated, at one shape.
#   bench/scaling.sh SHAPE [PAIRS [THREADS [STEPS]]]   SHAPE: cpu | 10.8M
#   GPTG=path/to/gptg bench/scaling.sh cpu 3          (default: build ./cmd/gptg)
# Prints each run's tokens/s (the "done:" line of gptg train) and the
# median ratio N-thread / 1-thread over the pairs. Run it on a quiet
# machine (here: inside /work/quiet); `uptime` is printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
shape=${1:?shape: cpu or 10.8M}; pairs=${2:-3}; threads=${3:-2}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gptg=${GPTG:-}
if [ -z "$gptg" ]; then go build -o "$tmp/gptg" ./cmd/gptg; gptg=$tmp/gptg; fi
case $shape in
  cpu)   steps=${4:-300}; args=(configs/nanogpt/shakespeare-char-cpu.toml) ;;
  10.8M) steps=${4:-12};  args=(configs/nanogpt/shakespeare-char.toml --set train.batch=16 --set train.grad_accum=1 --set model.dropout=0.0) ;;
  *) echo "scaling.sh: unknown shape $shape (cpu or 10.8M)" >&2; exit 2 ;;
esac
run() { # threads → tokens/s
  "$gptg" train "${args[@]}" --set train.max_steps="$steps" --set train.eval_every=0 --set train.eval_batches=2 \
    --set train.out="$tmp/run" --force --quiet --threads "$1" 2>&1 |
    sed -n 's/^done: .*(\([0-9.]*\) tokens\/s).*/\1/p'
}
echo "shape $shape, $steps steps, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "before: $(uptime)"
ratios=()
for i in $(seq "$pairs"); do
  a=$(run 1); b=$(run "$threads")
  r=$(echo "$b / $a" | bc -l)
  ratios+=("$r")
  printf 'pair %d: 1 thread %s tokens/s, %d threads %s tokens/s, ratio %.3f\n' "$i" "$a" "$threads" "$b" "$r"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR]=$1} END {m = NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "median ratio %.3f (range %.3f–%.3f)\n", m, v[1], v[NR]}'
echo "after: $(uptime)"
