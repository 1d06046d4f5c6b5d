#!/usr/bin/env bash
# bench/spread.sh: where the seed model's spread over seeds comes from
# (docs/results.md, "Why the seeds spread").
#
#   bench/spread.sh
#
# At SEEDS (default "42 1 2 3 4 5 6 7 8 9 10 11") it trains
# configs/shakespeare.toml (2 epochs, one thread) with gptg twice a seed:
# from gptg's own initial draws, and from the PyTorch reference's (its
# untrained model of that seed, bench/gptref.py init, through
# `gptg train --init`). Both runs of a seed see gptg's batch order of that
# seed, so the two columns differ only in where the initial weights were
# drawn. Then, per run, the test loss and the share of block 1's query
# positions that look at another position than their own (bench/spread.py
# away), and the two columns' spread compared (bench/spread.py stats).
#
# EPOCHS (default 2, the config's) shortens the trainings for a quick
# look. Needs go and /usr/bin/python3 with python3-torch. JOBS (default 2)
# trainings at once, each niced; OUT (default a temporary folder) keeps
# the runs. About 2 minutes of one idle core a seed.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-/usr/bin/python3}
data=${DATA:-corpus/builtin/tinyshakespeare.txt}
jobs=${JOBS:-2}
seeds=${SEEDS:-42 1 2 3 4 5 6 7 8 9 10 11}
epochs=${EPOCHS:-2}
if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	out=$(cd "$OUT" && pwd)
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
go build -o "$out/gptg" ./cmd/gptg

# train KIND S: one training, KIND own (gptg's draws) or torch (the reference's).
train() {
	local init=()
	[ "$1" = torch ] && init=(--init "$out/torch-init-$2.safetensors")
	nice -n 19 "$out/gptg" train configs/shakespeare.toml --quiet --threads 1 --force --set data.path="$data" \
		--set train.epochs="$epochs" --set train.seed="$2" --set train.out="$out/$1-$2" "${init[@]}" |
		sed -n 's/.*test loss \([0-9.]*\) over.*/\1/p' >"$out/$1-$2.loss"
}
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done; }

echo "tree $(git describe --always --dirty 2>/dev/null || echo '?'); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
for s in $seeds; do
	"$python" bench/gptref.py init --data "$data" --seed "$s" --out "$out/torch-init-$s.safetensors"
done
for s in $seeds; do
	for kind in own torch; do
		[ -s "$out/$kind-$s.loss" ] || { throttle; train "$kind" "$s" & }
	done
done
wait || true

echo
echo "| seed | gptg's init: test loss | looking away | PyTorch's init: test loss | looking away |"
echo "|---|---|---|---|---|"
: >"$out/own.losses"
: >"$out/torch.losses"
for s in $seeds; do
	row="| $s |"
	for kind in own torch; do
		[ -s "$out/$kind-$s.loss" ] || { echo "spread.sh: the $kind training at seed $s gave no test loss" >&2; exit 1; }
		cat "$out/$kind-$s.loss" >>"$out/$kind.losses"
		away=$("$python" bench/spread.py away --data "$data" "$out/$kind-$s" | cut -d' ' -f2)
		row="$row $(cat "$out/$kind-$s.loss") | $away |"
	done
	echo "$row"
done
echo
"$python" bench/spread.py stats "$out/own.losses" "$out/torch.losses"
