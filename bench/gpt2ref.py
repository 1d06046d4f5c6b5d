#!/usr/bin/env python3
"""gpt2ref.py: GPT-2's forward pass in PyTorch, written from the model's
definition, to check gptg's import and forward pass against.

    bench/gpt2ref.py forward DIR --ids FILE --out FILE [--dtype float64|float32]
                     [--store float64|float32]
    bench/gpt2ref.py generate DIR --prompt-len N --tokens N [--cache]
                     [--threads N] [--temperature T] [--top-k K] [--seed S]

DIR is a Hugging Face GPT-2 folder (config.json, model.safetensors; see
mkgpt2.py). The weights are read with plain Python (the safetensors
package is not installed here) and go through nothing of gptg's.

The model, as GPT2LMHeadModel computes it (eval mode, no dropout):
  x = wte[ids] + wpe[0..T)
  per block:  a = ln_1(x); q, k, v = split(a @ c_attn.weight + c_attn.bias)
              (Conv1D: x @ W + b with W stored (in, out));
              per head: w = softmax(q kᵀ / √(C/H), causal); y = w v;
              x = x + (heads merged) @ c_proj.weight + c_proj.bias
              m = ln_2(x); x = x + gelu_new(m @ c_fc.weight + c_fc.bias) @ mlp.c_proj.weight + mlp.c_proj.bias
  logits = ln_f(x) @ wteᵀ
with LayerNorm eps = layer_norm_epsilon and gelu_new the tanh
approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).

forward reads the ids (whitespace-separated integers) and writes a
safetensors file of "logits" (T, V) and "attention.i" (H, T, T) per block,
in --dtype (float64 by default: the weights, float32 or narrower in the
file, are widened exactly, so the result is the model's function computed
far more precisely than gptg's float32 — the error measured against it is
gptg's alone); --store float32 rounds the results once when written
(a relative error of at most 6e-8, to halve the file).

generate is nanoGPT's sample.py path for timing: float32, the prompt (ids
0..N-1 mod vocab) fed whole, then one token at a time; without --cache
every token runs the whole window again (nanoGPT's generate: no key/value
cache, logits of the last position only); with --cache the keys and values
of earlier positions are kept. It prints one JSON line: time to the first
token, tokens/s after it, threads.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
          "BF16": torch.bfloat16, "BOOL": torch.bool, "U8": torch.uint8}


def load_safetensors(path):
    """The tensors of a safetensors file, each read from the file into its
    own buffer (no copy of the whole file held)."""
    out = {}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        for name, e in header.items():
            if name == "__metadata__":
                continue
            b, end = e["data_offsets"]
            dt = DTYPES[e["dtype"]]
            raw = bytearray(end - b)
            f.seek(8 + n + b)
            f.readinto(raw)
            if not raw:
                t = torch.empty(0, dtype=dt)
            elif dt == torch.bfloat16:
                t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
            else:
                t = torch.frombuffer(raw, dtype=dt)
            out[name] = t.reshape(e["shape"])
    return out


def save_safetensors(tensors, path):
    names = list(tensors)
    header, offset = {}, 0
    for n in names:
        t = tensors[n]
        size = t.numel() * t.element_size()
        header[n] = {"dtype": {torch.float64: "F64", torch.float32: "F32"}[t.dtype],
                     "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for n in names:
            f.write(tensors[n].contiguous().numpy().tobytes())


class GPT2:
    """GPT2LMHeadModel's forward pass over one sequence, from its weights."""

    def __init__(self, folder, dtype):
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        assert cfg["model_type"] == "gpt2" and cfg.get("activation_function", "gelu_new") == "gelu_new"
        self.L, self.H, self.C = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
        self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        sd = load_safetensors(os.path.join(folder, "model.safetensors"))
        sd = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in sd.items()}
        self.w = {k: v.to(dtype) for k, v in sd.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}

    def ln(self, x, name):
        return torch.nn.functional.layer_norm(x, (self.C,), self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def conv1d(self, x, name):
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]

    @staticmethod
    def gelu_new(x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

    def attend(self, q, k, v, causal):
        """q (H, Tq, D) against k, v (H, Tk, D); the causal mask lets query
        i (the last Tq of Tk positions) see keys 0..Tk-Tq+i."""
        D = q.shape[-1]
        w = q @ k.transpose(-1, -2) / math.sqrt(D)
        if causal:
            Tq, Tk = q.shape[1], k.shape[1]
            allowed = torch.ones(Tq, Tk, dtype=torch.bool).tril(Tk - Tq)
            w = w.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(w, dim=-1)
        return w @ v, w

    def heads(self, x):  # (T, C) -> (H, T, C/H)
        return x.view(x.shape[0], self.H, self.C // self.H).transpose(0, 1)

    def forward(self, ids, past=None, all_logits=True):
        """ids (T,) at positions len(past)..; past: per block (k, v) or None.
        Returns logits (T or 1, V), attention weights per block, new past."""
        start = 0 if past is None else past[0][0].shape[1]
        T = ids.shape[0]
        x = self.w["wte.weight"][ids] + self.w["wpe.weight"][start:start + T]
        atts, present = [], []
        for i in range(self.L):
            h = f"h.{i}."
            q, k, v = self.conv1d(self.ln(x, h + "ln_1"), h + "attn.c_attn").split(self.C, dim=1)
            q, k, v = self.heads(q), self.heads(k), self.heads(v)
            if past is not None:
                k, v = torch.cat([past[i][0], k], dim=1), torch.cat([past[i][1], v], dim=1)
            present.append((k, v))
            y, w = self.attend(q, k, v, causal=True)
            atts.append(w)
            x = x + self.conv1d(y.transpose(0, 1).reshape(T, self.C), h + "attn.c_proj")
            m = self.gelu_new(self.conv1d(self.ln(x, h + "ln_2"), h + "mlp.c_fc"))
            x = x + self.conv1d(m, h + "mlp.c_proj")
        if not all_logits:
            x = x[-1:]
        logits = self.ln(x, "ln_f") @ self.w["wte.weight"].T
        return logits, atts, present


def read_ids(path):
    with open(path) as f:
        return torch.tensor([int(t) for t in f.read().split()], dtype=torch.long)


def cmd_forward(a):
    dtype = {"float64": torch.float64, "float32": torch.float32}[a.dtype]
    model = GPT2(a.folder, dtype)
    ids = read_ids(a.ids)
    with torch.no_grad():
        logits, atts, _ = model.forward(ids)
    store = {"float64": torch.float64, "float32": torch.float32}[a.store]
    out = {"logits": logits.to(store)}
    for i, w in enumerate(atts):
        out[f"attention.{i}"] = w.to(store)
    save_safetensors(out, a.out)
    print(f"{a.out}: logits {tuple(logits.shape)}, {len(atts)} blocks of attention {tuple(atts[0].shape)}, computed in {a.dtype}, stored in {a.store}")


def cmd_generate(a):
    torch.set_num_threads(a.threads)
    model = GPT2(a.folder, torch.float32)
    V = model.w["wte.weight"].shape[0]
    T = model.w["wpe.weight"].shape[0]
    gen = torch.Generator().manual_seed(a.seed)
    ids = torch.arange(a.prompt_len) % V

    def draw(logits):
        logits = logits[-1] / a.temperature
        if a.top_k:
            kth = torch.topk(logits, min(a.top_k, V)).values[-1]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)

    with torch.no_grad():
        t0 = time.perf_counter()
        past = None
        if a.cache:
            logits, _, past = model.forward(ids, all_logits=False)
        else:
            logits, _, _ = model.forward(ids[-T:], all_logits=False)
        nxt = draw(logits)
        first = time.perf_counter() - t0
        ids = torch.cat([ids, nxt])
        t1 = time.perf_counter()
        for _ in range(a.tokens - 1):
            if a.cache and ids.shape[0] <= T:
                logits, _, past = model.forward(ids[-1:], past=past, all_logits=False)
            else:
                logits, _, _ = model.forward(ids[-T:], all_logits=False)
            ids = torch.cat([ids, draw(logits)])
        rest = time.perf_counter() - t1
    print(json.dumps({"prompt": a.prompt_len, "tokens": a.tokens, "cache": a.cache, "threads": a.threads,
                      "first_token_s": round(first, 4),
                      "tokens_per_s": round((a.tokens - 1) / rest, 2) if a.tokens > 1 else None}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("forward")
    f.add_argument("folder")
    f.add_argument("--ids", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    f.add_argument("--store", choices=["float64", "float32"], default="float64")
    g = sub.add_parser("generate")
    g.add_argument("folder")
    g.add_argument("--prompt-len", type=int, default=1)
    g.add_argument("--tokens", type=int, default=50)
    g.add_argument("--cache", action="store_true")
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--top-k", type=int, default=0)
    g.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.cmd == "generate":
        # Pin every pool before the libraries start (OpenMP's, OpenBLAS's
        # read their variable when loaded), and preload jemalloc as
        # PyTorch's CPU tuning guides advise (GPT2REF_MALLOC=glibc: not):
        # set what is missing and start again.
        env = {v: str(a.threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
        if os.environ.get("GPT2REF_MALLOC") != "glibc" and os.path.exists(JEMALLOC):
            env["LD_PRELOAD"] = JEMALLOC
        if any(os.environ.get(k) != v for k, v in env.items()):
            os.environ.update(env)
            os.execv(sys.executable, [sys.executable] + sys.argv)
        cmd_generate(a)
    else:
        cmd_forward(a)


if __name__ == "__main__":
    main()
