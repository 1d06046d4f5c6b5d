#!/usr/bin/env bash
# testdata/gpt2/make.sh: the small GPT-2 folders and the reference's
# logits and attention weights that hf's golden test compares gptg with.
#
#   small-f32/   2 layers, 2 heads, embd 32, ctx 64, vocab 300, F32, the
#                Hub's layout (no key prefix, attn.bias and masked_bias
#                buffers)
#   small-f16/   the same shape, other weights, F16, save_pretrained's
#                layout (transformer. prefix, no buffers)
#   ids.txt      64 token ids
#   */ref.safetensors  bench/gpt2ref.py's logits (64, 300) and attention
#                (2, 64, 64) per block, computed in float64 from the
#                file's weights, stored as float32
#
# Weights are normal(0, 0.2): at this width GPT-2's 0.02 would leave the
# attention nearly uniform, and a wrong mask or head split unseen.
set -euo pipefail
cd "$(dirname "$0")"
py=/usr/bin/python3
common=(--layers 2 --heads 2 --embd 32 --ctx 64 --vocab 300 --std 0.2)
$py ../../bench/mkgpt2.py small-f32 "${common[@]}" --seed 1 --dtype F32 --layout hub --masked-bias
$py ../../bench/mkgpt2.py small-f16 "${common[@]}" --seed 2 --dtype F16 --layout save_pretrained
$py -c "import random; random.seed(3); print(' '.join(str(random.randrange(300)) for _ in range(64)))" > ids.txt
for d in small-f32 small-f16; do
  $py ../../bench/gpt2ref.py forward $d --ids ids.txt --out $d/ref.safetensors --store float32
done
