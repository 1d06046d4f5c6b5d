"""A nanoGPT checkpoint of GPT-2's padded vocabulary, for gptg's import test.

    /usr/bin/python3 testdata/nanogpt/gpt2/make.py

nanoGPT trains GPT-2 from scratch (its openwebtext recipe) with vocab_size
50,304, GPT-2's 50,257 padded to a multiple of 64, and no meta.pkl: its
sample.py encodes with tiktoken's GPT-2. This writes such a checkpoint as
train.py saves one ({"model": state_dict, "model_args", "iter_num",
"best_val_loss", "config"}; the optimizer's state left out), of a tiny
shape (1 block, 1 head, embedding 4, block_size 8, bias), with random
weights and the names and layouts of nanoGPT's model.py (nn.Linear
weights (out, in); lm_head.weight the same tensor as transformer.wte.weight),
and expected.json: the logits of the last position of ids 0..7 that
nanoGPT's GPT computes (float64, exact GELU), at ids 0..9, 50247..50256
and the 47 padded ones 50257..50303.
"""
import json, math, os
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
V, T, C = 50304, 8, 4
g = torch.Generator().manual_seed(5)


def normal(*shape, s=0.5):
    return torch.randn(*shape, generator=g, dtype=torch.float64) * s


sd = {"transformer.wte.weight": normal(V, C), "transformer.wpe.weight": normal(T, C)}
h = "transformer.h.0."
for name, shape in [("ln_1", None), ("attn.c_attn", (3 * C, C)), ("attn.c_proj", (C, C)),
                    ("ln_2", None), ("mlp.c_fc", (4 * C, C)), ("mlp.c_proj", (C, 4 * C))]:
    if shape is None:
        sd[h + name + ".weight"], sd[h + name + ".bias"] = 1 + normal(C, s=0.1), normal(C, s=0.1)
    else:
        sd[h + name + ".weight"], sd[h + name + ".bias"] = normal(*shape), normal(shape[0], s=0.1)
sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"] = 1 + normal(C, s=0.1), normal(C, s=0.1)


def forward(w, ids):
    ln = lambda x, n: torch.nn.functional.layer_norm(x, (C,), w[n + ".weight"], w[n + ".bias"], 1e-5)
    lin = lambda x, n: x @ w[n + ".weight"].T + w[n + ".bias"]
    n = len(ids)
    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:n]
    q, k, v = lin(ln(x, h + "ln_1"), h + "attn.c_attn").split(C, dim=1)
    att = (q @ k.T) / math.sqrt(C)
    att = att.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
    x = x + lin(att @ v, h + "attn.c_proj")
    m = lin(ln(x, h + "ln_2"), h + "mlp.c_fc")
    x = x + lin(0.5 * m * (1 + torch.erf(m / math.sqrt(2))), h + "mlp.c_proj")
    return ln(x, "transformer.ln_f") @ w["transformer.wte.weight"].T


model = {k: v.float() for k, v in sd.items()}
model["lm_head.weight"] = model["transformer.wte.weight"]  # tied: one storage
ckpt = {"model": model, "iter_num": 0, "best_val_loss": 1e9, "config": {"dataset": "openwebtext"},
        "model_args": dict(n_layer=1, n_head=1, n_embd=C, block_size=T, bias=True, vocab_size=V, dropout=0.0)}
torch.save(ckpt, os.path.join(HERE, "ckpt.pt"))

w = {k: v.double() for k, v in model.items()}  # the file's float32 values, widened
logits = forward(w, torch.arange(T))[-1]
at = list(range(10)) + list(range(50247, V))
with open(os.path.join(HERE, "expected.json"), "w") as f:
    json.dump({"ids": list(range(T)), "at": at, "logits": [logits[i].item() for i in at]}, f)
    f.write("\n")
