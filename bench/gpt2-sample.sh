#!/usr/bin/env bash
# bench/gpt2-sample.sh: sampling GPT-2 with gptg against PyTorch, on the same
# random weights in Hugging Face's layout (mkgpt2.py), in pairs.
#
#   bench/gpt2-sample.sh [SHAPE [TOKENS [PAIRS]]]   defaults: gpt2 100 2
#
# For 1 and 2 threads, each pair runs back to back (who goes first
# alternates), so that both see the same load:
#   tokens/s   a 2-token prompt, then TOKENS tokens; the rate after the
#              first token. gptg samples through its key/value cache;
#              PyTorch (bench/gpt2ref.py generate) as nanoGPT's sample.py
#              does, without a cache (the whole window again for every
#              token, the last position's logits only), and with a cache
#              (keys and values of earlier positions kept) for comparison.
#   first      the time to the first token after a 512-token prompt: gptg
#              prefills its cache in one window-graph run; PyTorch runs the
#              prompt's forward pass (the same with or without a cache).
#   peak RSS   of the whole process (/usr/bin/time -v), model load included.
# PyTorch runs with jemalloc preloaded and every thread pool pinned
# (gpt2ref.py sets LD_PRELOAD and OMP/OPENBLAS/MKL_NUM_THREADS and starts
# again). Temperature 1, no top-k: both draw from the whole vocabulary.
#
# Work files go to ${GPT2_SAMPLE_DIR:-/tmp/gpt2-sample}, removed at the end.
set -euo pipefail
shape=${1:-gpt2}
tokens=${2:-100}
pairs=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${GPT2_SAMPLE_DIR:-/tmp/gpt2-sample}
py=/usr/bin/python3
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
cd "$root" && go build -o "$work/gptg" ./cmd/gptg
cd "$work"
$py "$root/bench/mkgpt2.py" "$shape" --shape "$shape" --seed 7 >/dev/null
./gptg import hf "$shape" --out model.safetensors --tokenizer ids >/dev/null  # prompts of exact ids
$py -c "print(' '.join(str(i) for i in range(512)))" >p512.txt

# field NAME: the number after "NAME": in the last JSON line of a file.
field() { grep '^{' "$2" | tail -1 | sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p"; }
rss() { awk '/Maximum resident/ {printf "%.0f", $6/1024}' "$1"; }

gptg_gen() { /usr/bin/time -v ./gptg sample model.safetensors --prompt "0 1" --tokens "$tokens" --threads "$1" --stats >/dev/null 2>"$work/out"; echo "$(field after_first_tokens_per_s out) $(rss out)"; }
gptg_first() { /usr/bin/time -v ./gptg sample model.safetensors --prompt-file p512.txt --tokens 2 --threads "$1" --stats >/dev/null 2>"$work/out"; echo "$(field first_token_s out) $(rss out)"; }
torch_gen() { /usr/bin/time -v $py "$root/bench/gpt2ref.py" generate "$shape" --prompt-len 2 --tokens "$tokens" --threads "$1" $2 >"$work/out" 2>"$work/time"; echo "$(field tokens_per_s out) $(rss time)"; }
torch_first() { /usr/bin/time -v $py "$root/bench/gpt2ref.py" generate "$shape" --prompt-len 512 --tokens 2 --threads "$1" >"$work/out" 2>"$work/time"; echo "$(field first_token_s out) $(rss time)"; }

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $shape, $tokens tokens after a 2-token prompt; first token after 512; RSS in MB"
echo "| threads | gptg tok/s | PyTorch no cache | PyTorch cache | ratio (no cache) | gptg first s | PyTorch first s | ratio | gptg RSS | PyTorch RSS |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for threads in 1 2; do
	for p in $(seq "$pairs"); do
		if (( p % 2 )); then
			read -r g grss < <(gptg_gen "$threads"); read -r gf gfrss < <(gptg_first "$threads")
			read -r t trss < <(torch_gen "$threads" ""); read -r tc _ < <(torch_gen "$threads" --cache); read -r tf tfrss < <(torch_first "$threads")
		else
			read -r t trss < <(torch_gen "$threads" ""); read -r tc _ < <(torch_gen "$threads" --cache); read -r tf tfrss < <(torch_first "$threads")
			read -r g grss < <(gptg_gen "$threads"); read -r gf gfrss < <(gptg_first "$threads")
		fi
		echo "| $threads | $g | $t | $tc | $(awk "BEGIN {printf \"%.2f\", $g/$t}") | $gf | $tf | $(awk "BEGIN {printf \"%.2f\", $tf/$gf}") | $grss / $gfrss | $trss / $tfrss |"
	done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
