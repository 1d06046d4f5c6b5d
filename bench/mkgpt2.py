#!/usr/bin/env python3
"""mkgpt2.py: a GPT-2 with random weights, in a Hugging Face model folder.

    bench/mkgpt2.py OUT_DIR [--shape gpt2|gpt2-medium|gpt2-large|gpt2-xl|distilgpt2]
                    [--layers L --heads H --embd C --ctx T --vocab V]
                    [--dtype F32|F16|BF16] [--layout hub|save_pretrained]
                    [--masked-bias] [--lm-head] [--std S] [--seed N]

No GPT-2 weights reach the machines gptg is tested on, so its import and
its forward pass are checked against files made here: the same names,
shapes, dtypes and file layout as Hugging Face's, random values.

The two layouts are the two a user meets:
  hub              the files the Hub serves for gpt2 (converted from the
                   original release): keys without a prefix (wte.weight,
                   h.0.attn.c_attn.weight, ...), the causal-mask buffer
                   h.N.attn.bias saved as a (1, 1, n_positions,
                   n_positions) lower triangle of ones in the weights'
                   dtype, no lm_head.weight (tied to wte). --masked-bias
                   adds the h.N.attn.masked_bias scalar (-1e4) that files
                   converted by older versions carry.
  save_pretrained  what GPT2LMHeadModel.save_pretrained writes today: keys
                   prefixed transformer., no buffers (registered with
                   persistent=False), lm_head.weight left out as a tied
                   copy of transformer.wte.weight (--lm-head keeps it).
Conv1D weights are (in, out), as in the library: c_attn (C, 3C), c_proj
(C, C), mlp.c_fc (C, 4C), mlp.c_proj (4C, C).

The safetensors file is written here with plain Python (the safetensors
package is not installed): 8-byte little-endian header length, a compact
JSON header ({"__metadata__": {"format": "pt"}} first) padded with spaces
to a multiple of 8 bytes, then the tensors back to back, ordered as the
library orders them (by dtype, then name).

Weights are normal(0, std) with std 0.02 (GPT-2's init) unless --std;
LayerNorm gains 1 + normal(0, 0.1) and every bias normal(0, 0.02), so that
no part of the forward pass is left untested by a zero or a one. The
weights are drawn in float64 and rounded once to the file's dtype.
"""
import argparse
import json
import os
import struct

import torch

SHAPES = {  # n_layer, n_head, n_embd, n_positions, vocab_size
    "gpt2": (12, 12, 768, 1024, 50257),
    "gpt2-medium": (24, 16, 1024, 1024, 50257),
    "gpt2-large": (36, 20, 1280, 1024, 50257),
    "gpt2-xl": (48, 25, 1600, 1024, 50257),
    "distilgpt2": (6, 12, 768, 1024, 50257),
}

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
# The safetensors library writes larger dtypes first.
DTYPE_RANK = {"F64": 0, "F32": 1, "BF16": 2, "F16": 3, "BOOL": 4}


def config_json(L, H, C, T, V):
    """config.json as the Hub's gpt2 has it, with this shape."""
    return {
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1,
        "bos_token_id": 50256,
        "embd_pdrop": 0.1,
        "eos_token_id": 50256,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": T,
        "n_embd": C,
        "n_head": H,
        "n_layer": L,
        "n_positions": T,
        "resid_pdrop": 0.1,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "vocab_size": V,
    }


def weights(L, C, T, V, std, gen, dt):
    """GPT2LMHeadModel's parameters by their names without prefix, drawn in
    float64 and rounded to dt one tensor at a time (gpt2-xl's 1.5 billion
    would take 12 GB in float64 at once)."""
    def normal(*shape, s=std):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * s).to(dt)

    def gain():
        return (1 + torch.randn(C, generator=gen, dtype=torch.float64) * 0.1).to(dt)

    w = {"wte.weight": normal(V, C), "wpe.weight": normal(T, C)}
    for i in range(L):
        h = f"h.{i}."
        w[h + "ln_1.weight"], w[h + "ln_1.bias"] = gain(), normal(C, s=0.02)
        w[h + "attn.c_attn.weight"], w[h + "attn.c_attn.bias"] = normal(C, 3 * C), normal(3 * C, s=0.02)
        w[h + "attn.c_proj.weight"], w[h + "attn.c_proj.bias"] = normal(C, C), normal(C, s=0.02)
        w[h + "ln_2.weight"], w[h + "ln_2.bias"] = gain(), normal(C, s=0.02)
        w[h + "mlp.c_fc.weight"], w[h + "mlp.c_fc.bias"] = normal(C, 4 * C), normal(4 * C, s=0.02)
        w[h + "mlp.c_proj.weight"], w[h + "mlp.c_proj.bias"] = normal(4 * C, C), normal(C, s=0.02)
    w["ln_f.weight"], w["ln_f.bias"] = gain(), normal(C, s=0.02)
    return w


def dtype_name(t):
    return {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
            torch.bfloat16: "BF16", torch.bool: "BOOL"}[t.dtype]


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()  # little-endian on x86 and ARM


def save_safetensors(tensors, path):
    names = sorted(tensors, key=lambda n: (DTYPE_RANK[dtype_name(tensors[n])], n))
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for n in names:
        t = tensors[n]
        size = t.numel() * t.element_size()
        header[n] = {"dtype": dtype_name(t), "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for n in names:
            f.write(tensor_bytes(tensors[n]))
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--shape", choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--embd", type=int)
    ap.add_argument("--ctx", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="F32")
    ap.add_argument("--layout", choices=["hub", "save_pretrained"], default="hub")
    ap.add_argument("--masked-bias", action="store_true")
    ap.add_argument("--lm-head", action="store_true")
    ap.add_argument("--std", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    L, H, C, T, V = SHAPES[a.shape or "gpt2"]
    L, H, C, T, V = a.layers or L, a.heads or H, a.embd or C, a.ctx or T, a.vocab or V

    gen = torch.Generator().manual_seed(a.seed)
    dt = DTYPES[a.dtype]
    w = weights(L, C, T, V, a.std, gen, dt)
    if a.layout == "hub":
        mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T).to(dt)
        for i in range(L):
            w[f"h.{i}.attn.bias"] = mask
            if a.masked_bias:
                w[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4).to(dt)
        if a.lm_head:
            w["lm_head.weight"] = w["wte.weight"]
    else:
        w = {"transformer." + n: t for n, t in w.items()}
        if a.lm_head:
            w["lm_head.weight"] = w["transformer.wte.weight"]

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config_json(L, H, C, T, V), f, indent=2)
        f.write("\n")
    save_safetensors(w, os.path.join(a.out, "model.safetensors"))
    params = sum(t.numel() for n, t in w.items() if not n.endswith((".attn.bias", "masked_bias", "lm_head.weight")))
    print(f"{a.out}: {L} layers, {H} heads, embd {C}, ctx {T}, vocab {V}, {params:,} parameters, {a.dtype}, {a.layout} layout")


if __name__ == "__main__":
    main()
