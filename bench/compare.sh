#!/usr/bin/env bash
# bench/compare.sh: gptg against the PyTorch reference (gptref.py), in pairs.
#
#   bench/compare.sh [STEPS [PAIRS [TOKENS]]]      defaults: 1000 3 256
#
# Training: `gptg train configs/shakespeare.toml` (the seed config) and
# `gptref.py train --threads 1` for STEPS steps each, one after the other,
# PAIRS times (who goes first alternates). Sampling, at context 64 and at
# context 256: `gptg sample --stats --threads 1` and `gptref.py sample
# --threads 1` for TOKENS tokens from the prompt "ROMEO:" and the same
# model file, made by a short gptg training of the seed config at that
# context. Each pair prints both tokens/s and their ratio; the summary is
# the median ratio. The machine may be busy with other work: the pairs run
# close together so that both see the same load, and the ratios are what
# to compare, not the absolute numbers.
#
# Environment: GPTG_UNFUSED=1 trains on the unfused graph (gptg sample is
# always fused); GPTG=path/to/gptg measures that binary instead of building
# this tree (an older build, for before/after); GOMAXPROCS is passed
# through to gptg (PyTorch runs one thread); PYTHON (default
# /usr/bin/python3) and GPTREF (default ../shared/reference/gptref.py)
# locate the reference.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${1:-1000}
pairs=${2:-3}
tokens=${3:-256}
python=${PYTHON:-/usr/bin/python3}
ref=${GPTREF:-../shared/reference/gptref.py}
data=data/tinyshakespeare.txt # the seed config's data.path, relative to the repository root

[ -f "$ref" ] || { echo "compare.sh: reference $ref not found (set GPTREF)" >&2; exit 1; }
[ -f "$data" ] || { echo "compare.sh: $data not found (gptg train downloads it: run it once)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${GPTG:-}" ]; then
	cp "$GPTG" "$tmp/gptg"
else
	go build -o "$tmp/gptg" ./cmd/gptg
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gptg: ${GPTG:-this tree}, $(go version | cut -d' ' -f3), GOMAXPROCS=${GOMAXPROCS:-$(nproc) (default)}, GPTG_UNFUSED=${GPTG_UNFUSED:-unset}"
echo "reference: $("$python" -c 'import torch; print("PyTorch", torch.__version__)'), --threads 1"

# median of the numbers on stdin
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

gptg_train() {
	"$tmp/gptg" train configs/shakespeare.toml --set train.max_steps="$steps" --set train.eval_every=0 \
		--set train.out="$tmp/run" --force --quiet | sed -n 's/.*(\([0-9.]*\) tokens\/s).*/\1/p'
}
ref_train() {
	"$python" "$ref" train --data "$data" --max-steps "$steps" --threads 1 | sed -n 's/.*"tokens_per_s": \([0-9.]*\).*/\1/p'
}
gptg_sample() {
	"$tmp/gptg" sample "$model" --prompt ROMEO: --tokens "$tokens" --threads 1 --stats 2>&1 >/dev/null |
		sed -n 's/.*"tokens_per_s": \([0-9.]*\).*/\1/p'
}
ref_sample() {
	"$python" "$ref" sample --model "$model" --prompt ROMEO: --tokens "$tokens" --threads 1 2>&1 >/dev/null |
		sed -n 's/.*"tokens_per_s": \([0-9.]*\).*/\1/p'
}

# pairs NAME GPTG_FN REF_FN: runs the pairs, prints them and the median ratio.
pairs() {
	local name=$1 g r ratios=()
	echo
	echo "$name: $pairs pairs (tokens/s)"
	printf '  %-5s %10s %10s %8s\n' pair gptg ref ratio
	for i in $(seq "$pairs"); do
		if ((i % 2)); then g=$($2); r=$($3); else r=$($3); g=$($2); fi
		[ -n "$g" ] && [ -n "$r" ] || { echo "compare.sh: a $name run printed no tokens/s" >&2; exit 1; }
		ratios+=("$(awk -v g="$g" -v r="$r" 'BEGIN {printf "%.2f", g / r}')")
		printf '  %-5s %10.0f %10.0f %7sx\n' "$i" "$g" "$r" "${ratios[-1]}"
	done
	echo "  median ratio gptg/ref: $(printf '%s\n' "${ratios[@]}" | median)x"
}

pairs "training, $steps steps" gptg_train ref_train

# Sampling at two contexts: a causal model samples through its key/value
# cache while the tokens fit the context, through the window graph after.
# The model: a short training of the seed config at that context (speed
# does not depend on how well it is trained).
for context in 64 256; do
	"$tmp/gptg" train configs/shakespeare.toml --set model.context="$context" --set train.max_steps=20 \
		--set train.eval_every=0 --set train.out="$tmp/model-$context" --quiet >/dev/null
	model="$tmp/model-$context/model.safetensors"
	pairs "sampling at context $context, $tokens tokens" gptg_sample ref_sample
done
