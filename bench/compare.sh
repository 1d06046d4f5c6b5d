#!/usr/bin/env bash
# bench/compare.sh: gptg against the PyTorch reference (gptref.py), in pairs.
#
#   bench/compare.sh [PAIRS [TOKENS]]      defaults: 3 256
#
# Training at three shapes, each at 1 thread and at every core (gptg
# --threads N against gptref.py --threads N, which pins PyTorch's and
# OpenBLAS's thread pools):
#   seed     configs/shakespeare.toml (qkv, 1 head), batch 4, context 32,
#            embedding 64, 2 blocks                   vs --variant qkv
#   cpu      nanoGPT's CPU recipe: prenorm, 4 heads, batch 12, context 64,
#            embedding 128, 4 blocks                  vs --variant prenorm --heads 4
#   10.8M    nanoGPT's shakespeare-char shape at batch 16: prenorm, 6 heads,
#            context 256, embedding 384, 6 blocks     vs --variant prenorm --heads 6
# Each pair runs gptg and the reference back to back (who goes first
# alternates) on the same data; the line gives both tokens/s (training
# time only, as both tools report it) and their ratio, and the summary the
# median ratio. The two larger shapes train on the first 300 kB of the
# corpus, so that the test loss both tools compute at the end stays short;
# the speed of a step does not depend on the file.
#
# Sampling at context 64 and 256: `gptg sample --stats --threads 1` and
# `gptref.py sample --threads 1` for TOKENS tokens from "ROMEO:" and the
# same model file (a short gptg training of the seed config at that
# context). A causal model samples through its key/value cache while the
# tokens fit the context, through the window graph after.
#
# The machine may be busy with other work: pairs run close together so
# that both see the same load; the ratios are what to compare.
#
# Environment: GPTG=path/to/gptg measures that binary instead of building
# this tree; PYTHON (default /usr/bin/python3) and GPTREF (default
# bench/gptref.py) locate the reference; SHAPES (default
# "seed cpu 10.8M") and THREADS (default "1 $(nproc)") choose what runs.
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=${1:-3}
tokens=${2:-256}
python=${PYTHON:-/usr/bin/python3}
ref=${GPTREF:-bench/gptref.py}
data=corpus/builtin/tinyshakespeare.txt # the corpus built into gptg, as a file for the reference
shapes=${SHAPES:-seed cpu 10.8M}
threads_list=${THREADS:-1 $(nproc)}

[ -f "$ref" ] || { echo "compare.sh: reference $ref not found (set GPTREF)" >&2; exit 1; }
[ -f "$data" ] || { echo "compare.sh: $data not found: run from the repository root" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${GPTG:-}" ]; then
	cp "$GPTG" "$tmp/gptg"
else
	go build -o "$tmp/gptg" ./cmd/gptg
fi
head -c 300000 "$data" >"$tmp/small.txt"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gptg: ${GPTG:-this tree}, $(go version | cut -d' ' -f3)"
echo "reference: $("$python" -c 'import torch; print("PyTorch", torch.__version__)')"

# median of the numbers on stdin
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# shape NAME sets: steps, the data file, gptg's --set flags, gptref's flags.
shape() {
	case $1 in
	seed)
		steps=1000 file=$data
		gflags=()
		rflags=(--variant qkv)
		;;
	cpu)
		steps=150 file=$tmp/small.txt
		gflags=(--set model.heads=4 --set model.residual=true --set model.norm=pre --set model.context=64
			--set model.embedding=128 --set model.blocks=4 --set train.batch=12)
		rflags=(--variant prenorm --heads 4 --context 64 --embedding 128 --blocks 4 --batch 12)
		;;
	10.8M)
		steps=12 file=$tmp/small.txt
		gflags=(--set model.heads=6 --set model.residual=true --set model.norm=pre --set model.context=256
			--set model.embedding=384 --set model.blocks=6 --set train.batch=16)
		rflags=(--variant prenorm --heads 6 --context 256 --embedding 384 --blocks 6 --batch 16)
		;;
	*) echo "compare.sh: unknown shape $1" >&2; exit 1 ;;
	esac
}

gptg_train() {
	"$tmp/gptg" train configs/shakespeare.toml "${gflags[@]}" --set data.path="$file" --set data.sha256= --set data.size=0 --set train.max_steps="$steps" \
		--set train.eval_every=0 --set train.out="$tmp/run" --threads "$threads" --force --quiet |
		sed -n 's/.*(\([0-9.]*\) tokens\/s).*/\1/p'
}
ref_train() {
	"$python" "$ref" train --data "$file" "${rflags[@]}" --max-steps "$steps" --threads "$threads" |
		sed -n 's/.*"tokens_per_s": \([0-9.]*\).*/\1/p'
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

for s in $shapes; do
	shape "$s"
	for threads in $threads_list; do
		pairs "training, shape $s, $threads thread(s), $steps steps" gptg_train ref_train
	done
done

for context in 64 256; do
	"$tmp/gptg" train configs/shakespeare.toml --set model.context="$context" --set train.max_steps=20 \
		--set train.eval_every=0 --set train.out="$tmp/model-$context" --quiet >/dev/null
	model="$tmp/model-$context/model.safetensors"
	pairs "sampling at context $context, $tokens tokens" gptg_sample ref_sample
done
