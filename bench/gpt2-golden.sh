#!/usr/bin/env bash
# bench/gpt2-golden.sh: gptg's GPT-2 against an independent PyTorch GPT-2
# at a full shape, with random weights in Hugging Face's file layout.
#
#   bench/gpt2-golden.sh [SHAPE [TOKENS [DTYPE]]]   defaults: gpt2 1024 F32
#
# mkgpt2.py writes the folder (SHAPE: gpt2, distilgpt2, gpt2-medium, ...;
# DTYPE: F32, F16, BF16), gpt2ref.py computes the logits and every
# block's attention weights over TOKENS random ids in float64, and
# bench/gpt2golden imports the folder with gptg's importer and compares
# gptg's float32 forward pass at every position: relative error
# ‖gptg − ref‖/‖ref‖ per position's logits and per head's row of weights,
# at most 1e-5. The logits through sampling's key/value cache, one token
# at a time, and through sampling's own path (the first half of the tokens
# as a prompt, prefilled in one run, the rest appended on two threads) are
# checked the same way.
#
# Work files go to ${GPT2_GOLDEN_DIR:-/tmp/gpt2-golden} and are removed at
# the end (about 2.5 GB at 124M: the folder, the reference's outputs).
set -euo pipefail
shape=${1:-gpt2}
tokens=${2:-1024}
dtype=${3:-F32}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${GPT2_GOLDEN_DIR:-/tmp/gpt2-golden}
py=/usr/bin/python3
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
$py "$root/bench/mkgpt2.py" "$work/$shape" --shape "$shape" --dtype "$dtype" --seed 7
vocab=$($py -c "import json; print(json.load(open('$work/$shape/config.json'))['vocab_size'])")
$py -c "import random; random.seed(11); print(' '.join(str(random.randrange($vocab)) for _ in range($tokens)))" > "$work/ids.txt"
$py "$root/bench/gpt2ref.py" forward "$work/$shape" --ids "$work/ids.txt" --out "$work/ref.safetensors" --store float32
cd "$root" && go run ./bench/gpt2golden "$work/$shape" "$work/ref.safetensors" "$work/ids.txt"
