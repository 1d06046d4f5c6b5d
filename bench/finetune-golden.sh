#!/usr/bin/env bash
# bench/finetune-golden.sh: gptg's fine-tuning against PyTorch's at a full
# GPT-2 shape, in float64, for the first steps of
# configs/nanogpt/finetune-shakespeare.toml.
#
#   bench/finetune-golden.sh [SHAPE [STEPS [ACCUM]]]     defaults: gpt2 3 8
#
# mkgpt2.py writes a random-weight Hugging Face folder of SHAPE, gptg
# imports it, `gptg data prepare shakespeare` writes the BPE token files,
# bench/finetunegolden prints the windows gptg's random sampling draws at
# the recipe's seed, and bench/gpt2ref.py finetune trains on them in
# float64 with PyTorch's AdamW (the recipe's batch 4, grad_accum 8,
# context 256, lr 3e-5, weight decay 0.1 on matrices, clip 1). gptg trains
# the recipe with --set model.dtype=float64 from the imported file, and
# finetunegolden compare prints the relative error of each step's loss and
# gradient norm and of seven tensors' updates (tolerance 1e-9). ACCUM
# replaces the recipe's grad_accum of 8 on both sides, for a shorter run.
#
# Work files go to ${FINETUNE_GOLDEN_DIR:-/tmp/finetune-golden} and are
# removed at the end. Memory: about 7 GB for gptg's float64 run, 6 GB for
# the reference's, one after the other.
set -euo pipefail
shape=${1:-gpt2}
steps=${2:-3}
accum=${3:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${FINETUNE_GOLDEN_DIR:-/tmp/finetune-golden}
py=/usr/bin/python3
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
cd "$root" && go build -o "$work/gptg" ./cmd/gptg && go build -o "$work/finetunegolden" ./bench/finetunegolden
cd "$work"
$py "$root/bench/mkgpt2.py" "$shape" --shape "$shape" --dtype F32 --seed 7
./gptg import hf "$shape" --out init.safetensors
./gptg data prepare shakespeare --out data/shakespeare
tokens=$(( $(stat -c %s data/shakespeare/train.bin) / 2 ))
./finetunegolden offsets --seed 1337 --tokens "$tokens" --context 256 --windows $(( 4 * accum )) --steps "$steps" > offsets.txt
/usr/bin/time -f "reference: %e s, peak RSS %M KB" $py "$root/bench/gpt2ref.py" finetune "$shape" \
  --data data/shakespeare/train.bin --offsets offsets.txt --context 256 --batch 4 --accum "$accum" --steps "$steps" \
  --dtype float64 --threads "$(nproc)" --out ref.safetensors
/usr/bin/time -f "gptg: %e s, peak RSS %M KB" ./gptg train "$root/configs/nanogpt/finetune-shakespeare.toml" \
  --init init.safetensors --set model.dtype=float64 --set train.max_memory=12 --set train.max_steps="$steps" --set train.grad_accum="$accum" --set train.out=run \
  --set train.eval_every=0 --set train.eval_batches=1
./finetunegolden compare run init.safetensors ref.safetensors
