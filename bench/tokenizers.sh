#!/usr/bin/env bash
# GPT-2 tokenization speed: gptg's tokenizer (bpe.GPT2) against tiktoken's
# WASM build and js-tiktoken, on each built-in corpus, in one run.
#   bench/tokenizers.sh [RUNS]     (default 5)
# gptg: the first encoding in a fresh process (empty cache), one thread
# (GOMAXPROCS=1), the median of RUNS processes; then on every core
# (EncodeParallel). tiktoken and js-tiktoken: one thread each (node), the
# median of 5 encodings after a warm-up on the same text
# (bench/tokenizers.js). Decoding: the median of 5. Needs node and npm: the
# versions bpe/testdata/package-lock.json pins are installed there.
# One-thread speeds are of CPU time (user and system, every thread of the
# process: GC included), which other work on the machine does not inflate;
# the speed-up on every core is of wall time. Prints a markdown table;
# `uptime` before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
root=$PWD
(cd bpe/testdata && npm ci --no-audit --no-fund --silent)
export NODE_PATH=$root/bpe/testdata/node_modules
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/tokbench" ./bench/tokbench
cores=$(nproc)
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores cores; go $(go env GOVERSION | sed 's/^go//'), node $(node --version)"
echo "before: $(uptime)"
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'; }
echo
echo "| corpus | bytes | tokens | encode: gptg | tiktoken (WASM) | js-tiktoken | gptg ÷ the faster | gptg on $cores cores ÷ 1 (wall) | decode: gptg | tiktoken | js-tiktoken |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for name in tinyshakespeare bible-en-es toy; do
  file=$(ls corpus/builtin/$name.*)
  : >"$tmp/one"; : >"$tmp/all"
  for _ in $(seq "$runs"); do
    GOMAXPROCS=1 "$tmp/tokbench" "builtin:$name" >>"$tmp/one"
    GOMAXPROCS=$cores "$tmp/tokbench" --workers "$cores" "builtin:$name" >>"$tmp/all"
  done
  node bench/tokenizers.js "$file" >"$tmp/node"
  bytes=$(awk 'NR==1 {print $1}' "$tmp/one"); tokens=$(awk 'NR==1 {print $2}' "$tmp/one")
  for lib in tiktoken js-tiktoken; do
    n=$(awk -v l=$lib '$1==l {print $2}' "$tmp/node")
    [ "$n" = "$tokens" ] || { echo "$name: $lib made $n tokens, gptg $tokens" >&2; exit 1; }
  done
  enc1=$(awk '{print $6}' "$tmp/one" | median); dec=$(awk '{print $7}' "$tmp/one" | median)
  wall1=$(awk '{print $4}' "$tmp/one" | median); wallN=$(awk '{print $4}' "$tmp/all" | median)
  awk -v name="$name" -v bytes="$bytes" -v tokens="$tokens" -v e1="$enc1" -v w1="$wall1" -v wN="$wallN" -v d="$dec" '
    $1 == "tiktoken" { te = $5; td = $6 } $1 == "js-tiktoken" { je = $5; jd = $6 }
    END {
      mb = bytes / 1e6
      best = (te < je) ? te : je
      printf "| %s | %d | %d | %.1f MB/s | %.1f MB/s | %.1f MB/s | **%.1f×** | %.2f× | %.0f MB/s | %.0f MB/s | %.0f MB/s |\n",
        name, bytes, tokens, mb / e1, mb / te, mb / je, best / e1, w1 / wN, mb / d, mb / td, mb / jd
    }' "$tmp/node"
done
echo
echo "gptg's tokenizer built (the embedded table parsed, on first use) in $(awk '{print $8 * 1000}' "$tmp/one" | median) ms of CPU, $(awk '{print $3 * 1000}' "$tmp/one" | median) ms of wall time (medians)"
echo "after: $(uptime)"
