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
# on a shared machine). OUT/summary.md holds the table.
#
# Finished runs are reused only when the same programs would make them
# again. Each result (OUT/TOOL-SEED.json) records what made it: the gptg
# commit ("gptg_commit", for people; "+dirty" when the tree had changes) and
# the digests that decide ("gptg_sha256" of the binary and "config_sha256"
# for a gptg run; "data_sha256" of the pairs and batches gptg data pairs
# wrote and "transref_sha256" of bench/transref.py and bench/torchref.py for
# a reference run). A result that another build (or config, or reference)
# made is trained again, saying so, its old file kept as TOOL-SEED.json.old;
# REUSE=any keeps every finished run as it is (the summary names the
# commits that made them).
#
# Environment: GPTG=path/to/gptg uses that binary instead of building this
# tree; PYTHON (default /usr/bin/python3); JOBS; REUSE.
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

reuse=${REUSE:-}
case $reuse in "" | any) ;; *) echo "transquality.sh: REUSE is \"any\" or unset, not \"$reuse\"" >&2; exit 2 ;; esac

mkdir -p "$out"
if [ -n "${GPTG:-}" ]; then
	gptg=$GPTG
	commit=$("$gptg" version | sed -n 's/.*, revision \([^ ,]*\).*/\1/p')
else
	go build -o "$out/gptg" ./cmd/gptg
	gptg=$out/gptg
	commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
	git diff --quiet HEAD -- . 2>/dev/null || commit=$commit+dirty
fi
sha() { cat "$@" | sha256sum | cut -c1-64; }
gptg_sha=$(sha "$gptg")
config_sha=$(sha "$config")
transref_sha=$(sha bench/transref.py bench/torchref.py)

# pairs SEED: OUT/data-SEED as this gptg writes it (rewritten when another
# build wrote it; reference runs on it stay valid when the files are the same).
pairs() {
	local data=$out/data-$1
	[ "$(cat "$data/made-by" 2>/dev/null)" = "$gptg_sha $config_sha" ] && return 0
	rm -rf "$data.new"
	"$gptg" data pairs "$config" --set train.seed="$1" --out "$data.new" >/dev/null
	if [ -d "$data" ] && diff -rq -x made-by "$data" "$data.new" >/dev/null; then
		rm -rf "$data.new"
	else
		rm -rf "$data"
		mv "$data.new" "$data"
	fi
	echo "$gptg_sha $config_sha" >"$data/made-by"
}

# made TOOL SEED: the fields that say what makes TOOL's result now (JSON).
made() {
	case $1 in
	gptg) echo "{\"gptg_commit\": \"$commit\", \"gptg_sha256\": \"$gptg_sha\", \"config_sha256\": \"$config_sha\"}" ;;
	ref) echo "{\"gptg_commit\": \"$commit\", \"data_sha256\": \"$(cd "$out/data-$2" && sha train.tsv test.tsv src.vocab tgt.vocab batches.tsv config.toml)\", \"transref_sha256\": \"$transref_sha\"}" ;;
	esac
}

# fresh RESULT MADE: whether RESULT's record of what made it matches MADE;
# says why not.
fresh() {
	"$python" - "$1" "$2" <<'PY'
import json, sys
have, want = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
keys = [k for k in want if k != "gptg_commit"]
if all(have.get(k) == want[k] for k in keys):
    sys.exit(0)
res = sys.argv[1]
if not any(k in have for k in keys):
    why = "does not record what made it (an older transquality.sh wrote it)"
else:
    names = {"gptg_sha256": "another gptg binary", "config_sha256": "another config",
             "data_sha256": "other pairs or batches", "transref_sha256": "another transref.py"}
    what = " and ".join(names[k] for k in keys if have.get(k) != want[k])
    why = f"was made with {what} (gptg commit {have.get('gptg_commit', 'not recorded')})"
print(f"transquality.sh: {res} {why}: training again (the old result is kept as {res}.old; REUSE=any keeps it)", file=sys.stderr)
sys.exit(1)
PY
}

# one TOOL SEED: one training and its evaluation; the result line goes to
# OUT/TOOL-SEED.json ({"test_loss": …, "bleu": …} and what made it).
one() {
	local tool=$1 s=$2
	local res=$out/$tool-$s.json
	local data=$out/data-$s
	local made
	made=$(made "$tool" "$s")
	if [ -s "$res" ]; then
		{ [ "$reuse" = any ] || fresh "$res" "$made"; } && return 0
		mv "$res" "$res.old"
	fi
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
	"$python" -c 'import json, sys; d = json.loads(sys.stdin.readline()); d.update(json.loads(sys.argv[1])); print(json.dumps(d))' \
		"$made" <"$res.tmp" >"$res.new"
	rm "$res.tmp"
	mv "$res.new" "$res"
	echo "$tool seed $s: $(cat "$res")"
}

# The data first, one seed at a time: both tools' runs of a seed read it.
for s in $seeds; do
	pairs "$s"
done
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
made = {}
for tool in ("gptg", "ref"):
    for s in seeds:
        made.setdefault(json.load(open(f"{out}/{tool}-{s}.json")).get("gptg_commit", "unrecorded"), []).append(f"{tool}-{s}")
print("\ngptg commit: " + "; ".join(f"{c} ({' '.join(runs)})" for c, runs in made.items()))
EOF
