"""How noisy is nanoGPT's 20-batch loss estimate (eval_iters=20)?

    /usr/bin/python3 bench/nanogpt-se.py NANOGPT_DIR [CKPT]

Loads a checkpoint of nanoGPT's CPU recipe (default
NANOGPT_DIR/out-shakespeare-char/ckpt.pt) with nanoGPT's own model.py,
computes the test loss of 400 random batches of 12 windows of 64 tokens
(get_batch's sampling), and prints the per-batch standard deviation and the
standard error of a mean of 20 batches (README, "nanoGPT's CPU recipe").
"""
import os
import sys

import numpy as np
import torch

nano = sys.argv[1]
ckpt = sys.argv[2] if len(sys.argv) > 2 else os.path.join(nano, "out-shakespeare-char", "ckpt.pt")
sys.path.insert(0, nano)
from model import GPT, GPTConfig  # noqa: E402  (nanoGPT's model.py)

torch.set_num_threads(1)
ck = torch.load(ckpt, map_location="cpu")
m = GPT(GPTConfig(**ck["model_args"]))
m.load_state_dict({k.replace("_orig_mod.", ""): v for k, v in ck["model"].items()})
m.eval()
data = np.memmap(os.path.join(nano, "data", "shakespeare_char", "val.bin"), dtype=np.uint16, mode="r")
g = torch.Generator().manual_seed(0)
losses = []
with torch.no_grad():
    for _ in range(400):
        ix = torch.randint(len(data) - 64, (12,), generator=g)
        x = torch.stack([torch.from_numpy(data[i : i + 64].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1 : i + 65].astype(np.int64)) for i in ix])
        _, loss = m(x, y)
        losses.append(loss.item())
l = np.array(losses)
sd = l.std(ddof=1)
print(f"per-batch mean {l.mean():.4f} sd {sd:.4f}; standard error of a 20-batch mean {sd / np.sqrt(20):.4f}")
