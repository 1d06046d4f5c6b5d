#!/usr/bin/env bash
# Test loss of short trainings, gptg beside the PyTorch reference, several seeds.
#   bench/short-runs.sh [EPOCHS] [SEEDS...]      e.g. bench/short-runs.sh 0.1 1 2 3
# Needs ../shared (the reference) and python3-torch (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-0.1}; shift || true
seeds=${*:-1 2 3}
shared=$(cd .. && pwd)/shared
data=$PWD/corpus/builtin/tinyshakespeare.txt # the corpus built into gptg, as a file for the reference
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gptg" ./cmd/gptg
printf '%-6s %-6s %-12s %-12s\n' epochs seed gptg reference
for s in $seeds; do
  g=$("$tmp/gptg" train configs/shakespeare.toml --quiet --set data.path="$data" \
      --set train.epochs="$epochs" --set train.seed="$s" --set train.eval_every=0 --set train.out="$tmp/run$s" |
      sed -n 's/.*test loss \([0-9.]*\) over.*/\1/p')
  r=$(/usr/bin/python3 "$shared/reference/gptref.py" train --data "$data" --variant qkv \
      --epochs "$epochs" --seed "$s" | sed -n 's/.*"test_loss": \([0-9.]*\).*/\1/p')
  printf '%-6s %-6s %-12s %-12s\n' "$epochs" "$s" "$g" "$r"
done
