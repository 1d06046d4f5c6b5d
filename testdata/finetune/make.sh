#!/usr/bin/env bash
# testdata/finetune/make.sh: the float64 golden of the first 3 steps of
# fine-tuning (configs/nanogpt/finetune-shakespeare.toml's settings) that
# cmd/gptg's TestFinetuneGolden compares gptg with.
#
#   small/            a GPT-2 of 2 layers, 2 heads, embedding 16, 64
#                     positions and GPT-2's 50,257 tokens, random
#                     normal(0, 0.2) weights, F16, save_pretrained's layout
#   train.bin         4,096 random token ids below 1,000 (uint16), val.bin 512
#   offsets.txt       the windows gptg's data.sampling = "random" draws at
#                     train.seed 1337, context 32, batch 4 × grad_accum 8
#                     (bench/finetunegolden offsets)
#   ref.safetensors   bench/gpt2ref.py finetune: PyTorch's AdamW in float64
#                     from small/, positions cut to 32, 3 steps on those
#                     windows: each step's loss and gradient norm, and the
#                     final values of a few tensors
set -euo pipefail
cd "$(dirname "$0")"
py=/usr/bin/python3
$py ../../bench/mkgpt2.py small --layers 2 --heads 2 --embd 16 --ctx 64 --vocab 50257 --std 0.2 \
  --seed 4 --dtype F16 --layout save_pretrained
$py -c "
import random, struct
random.seed(5)
for name, n in (('train.bin', 4096), ('val.bin', 512)):
    open(name, 'wb').write(struct.pack('<%dH' % n, *(random.randrange(1000) for _ in range(n))))
"
(cd ../.. && go run ./bench/finetunegolden offsets --seed 1337 --tokens 4096 --context 32 --windows 32 --steps 3) > offsets.txt
$py ../../bench/gpt2ref.py finetune small --data train.bin --offsets offsets.txt --context 32 --batch 4 \
  --accum 8 --steps 3 --lr 3e-5 --dtype float64 --out ref.safetensors
