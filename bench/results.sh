#!/usr/bin/env bash
# bench/results.sh: the loss tables of README.md and docs/, measured and printed.
#
#   bench/results.sh [TABLE...]        TABLE: seeds, chapters, bf16 (default: seeds chapters)
#
#   seeds     the seed model (configs/shakespeare.toml, 2 epochs) at SEEDS
#             (default "42 1 2 3 4 5"; 42 is the config's own seed), gptg
#             beside the PyTorch reference (bench/gptref.py --variant qkv) at
#             the same seeds, one thread each: every test loss, then
#             mean ± sd (n−1) of each column.
#   chapters  the chapter ladder configs/ablation/*.toml through `gptg ablate`
#             at CHAPTER_SEEDS (default 5) seeds and CHAPTER_EPOCHS (default
#             0.25) epochs, Δ paired against 3-qkv: ablate's own summary.md.
#   bf16      model.dtype "bfloat16" beside "float32" at BF16_SEEDS (default
#             "1 2 3 4 5"), one thread each, for nanoGPT's CPU recipe
#             (configs/nanogpt/shakespeare-char-cpu.toml, 2,000 steps) and
#             the seed model (configs/shakespeare.toml): every test loss,
#             mean ± sd (n−1) of each row, and whether bfloat16's mean is
#             within one float32 sd of float32's (issue 37's criterion).
#             BF16_CONFIGS (default: both, "cpu seed") picks them.
#
# Every table is printed with the tree (git describe), the CPU, the core
# count and the load average at its start, so it can be pasted as is.
# Losses do not depend on the load or on the thread count (gptg's weights
# are the same bits for any --threads), so a busy machine only makes it slow:
# seeds takes about 15 minutes of one idle core per seed (gptg ~1 min, the
# reference ~3), chapters (a quarter epoch) about 6 minutes of 2 cores.
#
# Needs: go, and for seeds /usr/bin/python3 with python3-torch (Debian:
# apt-get install python3-torch libopenblas0-pthread libjemalloc2). The
# corpus is corpus/builtin/tinyshakespeare.txt, the copy built into gptg
# (DATA=FILE uses another copy). JOBS (default 2) runs that many trainings
# at once. OUT (default a temporary folder) keeps the run folders.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-/usr/bin/python3}
data=${DATA:-corpus/builtin/tinyshakespeare.txt}
jobs=${JOBS:-2}
tables=${*:-seeds chapters}
nice=${NICE:-5}

if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	out=$(cd "$OUT" && pwd)
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
go build -o "$out/gptg" ./cmd/gptg
gptg=$out/gptg
[ -f "$data" ] || { echo "results.sh: no corpus at $data" >&2; exit 2; }

# header TITLE: the provenance lines every table carries.
header() {
	local tree
	tree=$(git describe --always --dirty 2>/dev/null || echo "not a git checkout")
	echo
	echo "### $1"
	echo
	echo "tree $tree; $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg) at the start; $(go version | cut -d' ' -f3)"
	echo
}

# stats: "mean ± sd" (sample sd, n−1) of the numbers on stdin, 4 decimals.
stats() {
	awk '{x[NR] = $1; s += $1} END {m = s / NR; for (i = 1; i <= NR; i++) v += (x[i] - m) ^ 2;
		if (NR > 1) printf "%.4f ± %.4f", m, sqrt(v / (NR - 1)); else printf "%.4f", m}'
}

# gptg_seed S, ref_seed S: one training each, the test loss into $out/{gptg,ref}-S.
gptg_seed() {
	"$gptg" train configs/shakespeare.toml --quiet --threads 1 --force --set data.path="$data" \
		--set train.seed="$1" --set train.out="$out/seed-$1" |
		sed -n 's/.*test loss \([0-9.]*\) over.*/\1/p' >"$out/gptg-$1"
}
ref_seed() {
	"$python" bench/gptref.py train --data "$data" --variant qkv --seed "$1" --threads 1 |
		sed -n 's/.*"test_loss": \([0-9.]*\).*/\1/p' >"$out/ref-$1"
}

# throttle: wait while $jobs trainings run.
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done; }

seeds_table() {
	local seeds=${SEEDS:-42 1 2 3 4 5} s
	header "The seed model, configs/shakespeare.toml (2 epochs), gptg and the reference at seeds ${seeds// /, }"
	for s in $seeds; do
		[ -s "$out/gptg-$s" ] || { throttle; gptg_seed "$s" & }
		[ -s "$out/ref-$s" ] || { throttle; ref_seed "$s" & }
	done
	wait || true
	for s in $seeds; do
		for who in gptg ref; do
			[ -s "$out/$who-$s" ] || { echo "results.sh: the $who training at seed $s gave no test loss" >&2; exit 1; }
		done
	done
	printf '| seed |'; for s in $seeds; do printf ' %s |' "$s"; done; printf ' mean ± sd |\n'
	printf '|---|'; for s in $seeds; do printf -- '---|'; done; printf -- '---|\n'
	for who in gptg ref; do
		[ $who = gptg ] && printf '| gptg |' || printf '| reference (PyTorch) |'
		for s in $seeds; do printf ' %s |' "$(cat "$out/$who-$s")"; done
		printf ' **%s** |\n' "$(for s in $seeds; do cat "$out/$who-$s"; done | stats)"
	done
	echo
	echo "gptg: \`gptg train configs/shakespeare.toml --set train.seed=S\`; reference: \`bench/gptref.py train --data $data --variant qkv --seed S --threads 1\`."
}

chapters_table() {
	local seeds=${CHAPTER_SEEDS:-5} epochs=${CHAPTER_EPOCHS:-0.25}
	header "The chapters, configs/ablation/*.toml, $seeds seeds, $epochs epochs"
	"$gptg" ablate configs/ablation/*.toml --seeds "$seeds" --jobs "$jobs" --set train.threads=1 \
		--set train.epochs="$epochs" --set data.path="$data" --baseline 3-qkv --out "$out/chapters" >&2
	cat "$out/chapters/summary.md"
	echo
	echo "\`gptg ablate configs/ablation/*.toml --seeds $seeds --set train.epochs=$epochs --baseline 3-qkv\`"
}

# dtype_seed NAME CONFIG DTYPE S: one training, its test loss into $out/NAME-DTYPE-S.
dtype_seed() {
	nice -n "$nice" "$gptg" train "$2" --quiet --threads 1 --force --set data.path="$data" \
		--set model.dtype="$3" --set train.seed="$4" --set train.out="$out/runs/$1-$3-$4" |
		sed -n 's/.*test loss \([0-9.]*\) over.*/\1/p' >"$out/$1-$3-$4"
}

bf16_table() {
	local seeds=${BF16_SEEDS:-1 2 3 4 5} configs=${BF16_CONFIGS:-cpu seed} name config s d
	header "model.dtype bfloat16 beside float32 at seeds ${seeds// /, }, one thread each"
	for name in $configs; do
		case $name in
		cpu) config=configs/nanogpt/shakespeare-char-cpu.toml ;;
		seed) config=configs/shakespeare.toml ;;
		*) echo "results.sh: unknown BF16_CONFIGS entry $name (cpu, seed)" >&2; exit 2 ;;
		esac
		for s in $seeds; do
			for d in float32 bfloat16; do
				[ -s "$out/$name-$d-$s" ] || { throttle; dtype_seed "$name" "$config" "$d" "$s" & }
			done
		done
	done
	wait || true
	for name in $configs; do
		[ "$name" = cpu ] && config=configs/nanogpt/shakespeare-char-cpu.toml || config=configs/shakespeare.toml
		echo "$config:"
		echo
		printf '| dtype |'; for s in $seeds; do printf ' seed %s |' "$s"; done; printf ' mean ± sd |\n'
		printf '|---|'; for s in $seeds; do printf -- '---|'; done; printf -- '---|\n'
		for d in float32 bfloat16; do
			printf '| %s |' "$d"
			for s in $seeds; do
				[ -s "$out/$name-$d-$s" ] || { echo "results.sh: the $d training of $config at seed $s gave no test loss" >&2; exit 1; }
				printf ' %s |' "$(cat "$out/$name-$d-$s")"
			done
			printf ' **%s** |\n' "$(for s in $seeds; do cat "$out/$name-$d-$s"; done | stats)"
		done
		echo
		for d in float32 bfloat16; do for s in $seeds; do echo "$d $(cat "$out/$name-$d-$s")"; done; done |
			awk '{n[$1]++; s[$1] += $2; q[$1] += $2 * $2}
			END {m32 = s["float32"] / n["float32"]; mbf = s["bfloat16"] / n["bfloat16"]
				sd = sqrt((q["float32"] - n["float32"] * m32 * m32) / (n["float32"] - 1))
				d = mbf - m32; printf "bfloat16 − float32 = %+.4f; float32 sd %.4f: %s one sd\n", d, sd, (d < 0 ? -d : d) <= sd ? "within" : "NOT within"}'
		echo
	done
	echo "\`gptg train CONFIG --threads 1 --set model.dtype=D --set train.seed=S\`; the test loss of its \`done:\` line."
}

for t in $tables; do
	case $t in
	seeds) seeds_table ;;
	chapters) chapters_table ;;
	bf16) bf16_table ;;
	*) echo "results.sh: unknown table $t (seeds, chapters, bf16)" >&2; exit 2 ;;
	esac
done
