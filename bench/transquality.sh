#!/usr/bin/env bash
# bench/transquality.sh: gptg's translation model beside the PyTorch reference
# (bench/transref.py) over several seeds: test loss and BLEU, mean ± sd.
#
#   bench/transquality.sh CONFIG [SEEDS [OUT]]     defaults: SEEDS "1 2 3", OUT runs/transquality-<config>
#
# For each seed S, both tools train CONFIG with train.seed = S on the same
# split and the same batches in the same order (`gptg data pairs CONFIG
# --set train.seed=S --out DIR` writes them; transref.py trains on DIR):
#   gptg train CONFIG --set train.seed=S --threads 1, then gptg eval (test loss, greedy BLEU)
#   transref.py train DIR --threads 1               (test loss, greedy BLEU)
# Two runs at once (JOBS, default 2), each on one thread: the losses do not
# depend on the load, so this is not a timing (run it under /work/background
# on a shared machine). Finished runs are reused; OUT/summary.md holds the table.
#
# Environment: GPTG=path/to/gptg uses that binary instead of building this
# tree; PYTHON (default /usr/bin/python3); JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { echo "usage: bench/transquality.sh CONFIG [SEEDS [OUT]]" >&2; exit 2; }
config=$1
seeds=${2:-1 2 3}
name=$(basename "$config" .toml)
out=${3:-runs/transquality-$name}
python=${PYTHON:-/usr/bin/python3}
jobs=${JOBS:-2}
[ -f "$config" ] || { echo "transquality.sh: $config not found" >&2; exit 2; }

mkdir -p "$out"
if [ -n "${GPTG:-}" ]; then
	gptg=$GPTG
else
	go build -o "$out/gptg" ./cmd/gptg
	gptg=$out/gptg
fi

# one TOOL SEED: one training and its evaluation; the result line goes to
# OUT/TOOL-SEED.json ({"test_loss": …, "bleu": …}).
one() {
	local tool=$1 s=$2
	local res=$out/$tool-$s.json
	[ -s "$res" ] && return 0
	local data=$out/data-$s
	[ -f "$data/batches.tsv" ] || "$gptg" data pairs "$config" --set train.seed="$s" --out "$data" >/dev/null
	case $tool in
	gptg)
		"$gptg" train "$config" --set train.seed="$s" --set train.out="$out/gptg-$s" --threads 1 --quiet --force \
			>"$out/gptg-$s.log" 2>&1
		"$gptg" eval "$out/gptg-$s" --threads 1 >"$out/gptg-$s.eval" 2>/dev/null
		local loss bleu tps
		loss=$(sed -n 's/^test loss \([0-9.]*\).*/\1/p' "$out/gptg-$s.eval")
		bleu=$(sed -n 's/.*BLEU = \([0-9.]*\).*/\1/p' "$out/gptg-$s.eval")
		ratio=$(sed -n 's/.*ratio = \([0-9.]*\).*/\1/p' "$out/gptg-$s.eval")
		tps=$(tail -1 "$out/gptg-$s/metrics.jsonl" | sed -n 's/.*"tokens_per_s":\([0-9.e+]*\).*/\1/p')
		echo "{\"test_loss\": $loss, \"bleu\": $bleu, \"bleu_ratio\": $ratio, \"tokens_per_sec\": $tps}" >"$res.tmp"
		;;
	ref)
		"$python" bench/transref.py train "$data" --threads 1 >"$out/ref-$s.log"
		grep '"final"' "$out/ref-$s.log" >"$res.tmp"
		;;
	esac
	mv "$res.tmp" "$res"
	echo "$tool seed $s: $(cat "$res")"
}

running=0
for s in $seeds; do
	for tool in gptg ref; do
		one "$tool" "$s" &
		running=$((running + 1))
		if [ "$running" -ge "$jobs" ]; then
			wait -n
			running=$((running - 1))
		fi
	done
done
wait

"$python" - "$out" "$config" $seeds <<'EOF' | tee "$out/summary.md"
import json, statistics as st, sys
out, config, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
def col(tool, key):
    return [json.load(open(f"{out}/{tool}-{s}.json")).get(key) for s in seeds]
def ms(v):
    return f"{st.mean(v):.4f} ± {st.stdev(v):.4f}" if len(v) > 1 else f"{v[0]:.4f}"
def msb(v):
    return f"{st.mean(v):.2f} ± {st.stdev(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"
print(f"{config}, seeds {' '.join(seeds)} (mean ± sd over seeds; one thread per run)\n")
print("| | test loss | BLEU (greedy) | length ratio | per seed: test loss / BLEU |")
print("|---|---|---|---|---|")
for tool, label in (("gptg", "gptg"), ("ref", "PyTorch reference")):
    loss, bleu = col(tool, "test_loss"), col(tool, "bleu")
    ratio = [r for r in col(tool, "bleu_ratio") if r is not None]  # runs of older scripts lack it
    per = ", ".join(f"{l:.3f} / {b:.2f}" for l, b in zip(loss, bleu))
    rs = f"{st.mean(ratio):.3f} (n={len(ratio)})" if ratio else "–"
    print(f"| {label} | {ms(loss)} | {msb(bleu)} | {rs} | {per} |")
EOF
