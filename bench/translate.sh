#!/usr/bin/env bash
# bench/translate.sh: gptg's translation model against the PyTorch reference
# (bench/transref.py), speed and memory, in pairs.
#
#   bench/translate.sh [PAIRS]      default 3
#
# train: short fixed-step trainings at two settings, at each thread count:
#   seed  configs/translate/en-es-seed.toml  (d 64, 1 head, 1 + 1 blocks, 17×25)  STEPS_SEED (default 200)
#   main  configs/translate/en-es.toml       (d 128, 4 heads, 2 + 2 blocks, 25×33) STEPS_MAIN (default 30)
#   `gptg train CONFIG --set train.max_steps=N --threads T` against `transref.py
#   train DIR --max-steps N --threads T` on the same batches (`gptg data pairs
#   --out DIR`); each reports target tokens (non-PAD dec_tgt) per second of
#   training steps, and /usr/bin/time the process's peak RSS.
# translate: greedy translation, batch 1, of the first SENTENCES (default 50)
#   test sources of a trained seed-setting model (MODEL=RUN_DIR, or a 1,200-step
#   training made here first), against `transref.py translate` (a greedy loop
#   recomputing the decoder over the prefix for every word, no cache):
#   warm: translate.BenchmarkGreedy (gptg's Translator with its key/value cache,
#   after a pass that builds every source length's graphs) against the
#   reference's second pass (--warm); cold: the whole `gptg translate RUN
#   --threads T` process, start-up included, against the reference's first
#   pass; and how many translations are equal.
# Each pair runs gptg and the reference back to back, who goes first
# alternating; a line per pair gives both figures and the ratio, the summary
# the median ratio. On a shared machine run it under a lock that keeps other
# work off the cores, one part at a time (PARTS, SETTINGS, THREADS).
#
# Environment: GPTG=path/to/gptg measures that binary instead of building this
# tree; PYTHON (default /usr/bin/python3); PARTS (default "train translate");
# SETTINGS (default "seed main"); THREADS (default "1 $(nproc)"); WORK (a folder
# kept between calls, default a temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=${1:-3}
python=${PYTHON:-/usr/bin/python3}
parts=${PARTS:-train translate}
settings=${SETTINGS:-seed main}
threads_list=${THREADS:-1 $(nproc)}
sentences=${SENTENCES:-50}
[ -x /usr/bin/time ] || { echo "translate.sh: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }

if [ -n "${WORK:-}" ]; then
	tmp=$WORK
	mkdir -p "$tmp"
else
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
fi
if [ -n "${GPTG:-}" ]; then
	gptg=$GPTG
else
	[ -x "$tmp/gptg" ] || go build -o "$tmp/gptg" ./cmd/gptg
	gptg=$tmp/gptg
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gptg: ${GPTG:-this tree}; reference: $("$python" -c 'import torch; print("PyTorch", torch.__version__)') (jemalloc, threads pinned)"

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# run_gptg_train CONFIG STEPS THREADS: prints "tokens/s peakMB"
run_gptg_train() {
	/usr/bin/time -f %M -o "$tmp/rss" "$gptg" train "$1" --set train.max_steps="$2" --set train.eval_every=0 \
		--set train.out="$tmp/run" --threads "$3" --quiet --force >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	local tps
	tps=$(tail -1 "$tmp/run/metrics.jsonl" | sed -n 's/.*"tokens_per_s":\([0-9.e+]*\).*/\1/p')
	echo "$tps $(awk '{printf "%.0f", $1 / 1024}' "$tmp/rss")"
}

# run_ref_train DIR STEPS THREADS: prints "tokens/s peakMB"
run_ref_train() {
	/usr/bin/time -f %M -o "$tmp/rss" "$python" bench/transref.py train "$1" --max-steps "$2" --threads "$3" --no-bleu \
		>"$tmp/ref.out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	local tps
	tps=$(grep '"final"' "$tmp/ref.out" | sed -n 's/.*"tokens_per_sec": \([0-9.e+]*\).*/\1/p')
	echo "$tps $(awk '{printf "%.0f", $1 / 1024}' "$tmp/rss")"
}

for part in $parts; do
	case $part in
	train)
		for setting in $settings; do
			case $setting in
			seed) config=configs/translate/en-es-seed.toml steps=${STEPS_SEED:-200} ;;
			main) config=configs/translate/en-es.toml steps=${STEPS_MAIN:-30} ;;
			*) echo "translate.sh: unknown setting $setting (seed, main)" >&2; exit 2 ;;
			esac
			data=$tmp/data-$setting
			[ -f "$data/batches.tsv" ] || "$gptg" data pairs "$config" --set train.max_steps="$steps" --out "$data" >/dev/null
			for t in $threads_list; do
				: >"$tmp/ratios"
				: >"$tmp/rss-ratios"
				for i in $(seq "$pairs"); do
					if [ $((i % 2)) = 1 ]; then
						g=$(run_gptg_train "$config" "$steps" "$t")
						r=$(run_ref_train "$data" "$steps" "$t")
					else
						r=$(run_ref_train "$data" "$steps" "$t")
						g=$(run_gptg_train "$config" "$steps" "$t")
					fi
					set -- $g $r
					q=$(ratio "$1" "$3")
					echo "$q" >>"$tmp/ratios"
					echo "$(ratio "$2" "$4")" >>"$tmp/rss-ratios"
					printf 'train %s threads %s pair %s: gptg %.0f tok/s %s MB, reference %.0f tok/s %s MB: %s×\n' \
						"$setting" "$t" "$i" "$1" "$2" "$3" "$4" "$q"
				done
				echo "RESULT train $setting threads $t: median speed ratio $(median <"$tmp/ratios")×, median RSS ratio (gptg/ref) $(median <"$tmp/rss-ratios") over $pairs pairs ($steps steps each)"
			done
		done
		;;
	translate)
		config=configs/translate/en-es-seed.toml
		data=$tmp/data-seed-full
		[ -f "$data/batches.tsv" ] || "$gptg" data pairs "$config" --out "$data" >/dev/null
		run=${MODEL:-$tmp/model-seed}
		if [ ! -f "$run/model.safetensors" ]; then
			echo "training a model to translate with ($config, 1,200 steps) ..."
			"$gptg" train "$config" --set train.out="$run" --quiet --force >/dev/null
		fi
		cut -f4 "$data/test.tsv" | head -n "$sentences" >"$tmp/sentences.txt"
		n=$(wc -l <"$tmp/sentences.txt")
		[ -x "$tmp/translate.test" ] || go test -c -o "$tmp/translate.test" ./translate
		for t in $threads_list; do
			: >"$tmp/ratios"
			: >"$tmp/warm-ratios"
			for i in $(seq "$pairs"); do
				# cold: the whole gptg process (start-up, one graph per source
				# length) against the reference's loop alone
				gt() {
					local s e
					s=$(date +%s.%N)
					/usr/bin/time -f %M -o "$tmp/rss-g" "$gptg" translate "$run" --threads "$t" <"$tmp/sentences.txt" >"$tmp/gptg.txt"
					e=$(date +%s.%N)
					gsps=$(awk -v n="$n" -v s="$s" -v e="$e" 'BEGIN {printf "%.2f", n / (e - s)}')
					# warm: translate.BenchmarkGreedy times passes after one that builds the graphs
					gwarm=$(cd translate && GPTG_BENCH_MODEL="$run/model.safetensors" GPTG_BENCH_SENTENCES="$tmp/sentences.txt" \
						GPTG_BENCH_THREADS="$t" "$tmp/translate.test" -test.run XXX -test.bench Greedy -test.benchtime 3x |
						sed -n 's/.* \([0-9.]*\) sentences\/s.*/\1/p')
				}
				rt() {
					/usr/bin/time -f %M -o "$tmp/rss-r" "$python" bench/transref.py translate "$data" --model "$run/model.safetensors" \
						--threads "$t" <"$tmp/sentences.txt" >"$tmp/ref.txt" 2>"$tmp/ref.err"
					rsps=$(sed -n 's/.*"sentences_per_sec": \([0-9.e+]*\).*/\1/p' "$tmp/ref.err")
					"$python" bench/transref.py translate "$data" --model "$run/model.safetensors" --warm \
						--threads "$t" <"$tmp/sentences.txt" >/dev/null 2>"$tmp/ref.err"
					rwarm=$(sed -n 's/.*"sentences_per_sec": \([0-9.e+]*\).*/\1/p' "$tmp/ref.err")
				}
				if [ $((i % 2)) = 1 ]; then gt; rt; else rt; gt; fi
				q=$(ratio "$gsps" "$rsps")
				w=$(ratio "$gwarm" "$rwarm")
				echo "$q" >>"$tmp/ratios"
				echo "$w" >>"$tmp/warm-ratios"
				same=$(paste -d '\n' "$tmp/gptg.txt" "$tmp/ref.txt" | awk 'NR % 2 {a = $0; next} $0 == a {n++} END {print n + 0}')
				printf 'translate threads %s pair %s: warm gptg %s, reference %.2f sentences/s: %s×; cold (gptg process incl. start-up) %s vs %.2f: %s×; peak RSS gptg %s MB, reference %s MB; %s of %s translations equal\n' \
					"$t" "$i" "$gwarm" "$rwarm" "$w" "$gsps" "$rsps" "$q" "$(awk '{printf "%.0f", $1 / 1024}' "$tmp/rss-g")" \
					"$(awk '{printf "%.0f", $1 / 1024}' "$tmp/rss-r")" "$same" "$n"
			done
			echo "RESULT translate threads $t: median speed ratio warm $(median <"$tmp/warm-ratios")×, cold $(median <"$tmp/ratios")× over $pairs pairs ($n sentences, greedy, batch 1)"
		done
		;;
	*) echo "translate.sh: unknown part $part (train, translate)" >&2; exit 2 ;;
	esac
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
