#!/usr/bin/env python3
"""gpt2ref.py: GPT-2's forward pass in PyTorch, written from the model's
definition, to check gptg's import and forward pass against.

    bench/gpt2ref.py forward DIR --ids FILE --out FILE [--dtype float64|float32]
                     [--store float64|float32]
    bench/gpt2ref.py generate DIR --prompt-len N --tokens N [--cache]
                     [--threads N] [--temperature T] [--top-k K] [--seed S]
    bench/gpt2ref.py finetune DIR --data train.bin --context T --batch B
                     --accum A --steps N [--offsets FILE] [--lr LR]
                     [--dtype float64|float32] [--threads N] [--out FILE]

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

finetune is nanoGPT's train.py fine-tuning loop (init_from = 'gpt2', as
config/finetune_shakespeare.py) over the folder's weights: the learned
positions cut to the first T (crop_block_size), a batched forward pass
(B, T) with nanoGPT's attention without flash (this PyTorch has no
scaled_dot_product_attention), the mean
cross-entropy, A micro-batches a step each adding the gradient of
loss / A, clip_grad_norm_ to --clip, then torch.optim.AdamW with
configure_optimizers' groups (weight decay on tensors of two or more
dimensions: wte, wpe and the Conv1D weights; none on biases and layer
norms), betas (0.9, 0.99), eps 1e-8, a constant learning rate. The
windows of step s start at line s of --offsets (B·A offsets into --data,
a uint16 token file; gptg's random windows, bench/finetunegolden
offsets); without it, at random offsets (torch.randint, seed 1337).
--out writes a safetensors file of each step's loss and gradient norm
(before clipping) and, named as gptg names them (Conv1D weights
transposed to (out, in), c_attn cut into q, k, v), the final values of
a few tensors: pos.weight, the first 64 rows of tok.weight, blocks.0's
att.q.weight, norm1.bias and att.o.weight, the last block's
ff.down.weight and final_norm.weight. It prints one JSON line a step
(wall and CPU time, loss) and at the end the peak RSS; with float32 and --threads,
pinned and jemalloc preloaded as generate, it is the timing reference.
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


def finetune_tensors(folder, context, dtype):
    """The folder's weights in dtype as leaf tensors to train, wpe cut to
    context rows, the mask buffers left out."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    sd = load_safetensors(os.path.join(folder, "model.safetensors"))
    sd = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in sd.items()}
    w = {}
    for k, v in sd.items():
        if k.endswith((".attn.bias", ".attn.masked_bias")) or k == "lm_head.weight":
            continue
        if k == "wpe.weight":
            v = v[:context]
        w[k] = v.to(dtype).clone().requires_grad_(True)
    return cfg, w


def finetune_loss(cfg, w, idx, targets):
    """GPT2LMHeadModel's mean cross-entropy over a batch of windows."""
    L, H, C = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    F = torch.nn.functional
    B, T = idx.shape

    def ln(x, name):
        return F.layer_norm(x, (C,), w[name + ".weight"], w[name + ".bias"], eps)

    def conv1d(x, name):
        return torch.addmm(w[name + ".bias"], x.reshape(-1, x.shape[-1]), w[name + ".weight"]).view(B, T, -1)

    causal = torch.ones(T, T, dtype=torch.bool).triu(1)
    x = w["wte.weight"][idx] + w["wpe.weight"][:T]
    for i in range(L):
        h = f"h.{i}."
        q, k, v = conv1d(ln(x, h + "ln_1"), h + "attn.c_attn").split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        att = torch.softmax(att.masked_fill(causal[:T, :T], float("-inf")), dim=-1)
        y = att @ v
        x = x + conv1d(y.transpose(1, 2).reshape(B, T, C), h + "attn.c_proj")
        m = F.gelu(conv1d(ln(x, h + "ln_2"), h + "mlp.c_fc"), approximate="tanh")
        x = x + conv1d(m, h + "mlp.c_proj")
    logits = ln(x, "ln_f") @ w["wte.weight"].T
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def gptg_tensors(cfg, w):
    """A few final weights, named and laid out as gptg's."""
    C, L = cfg["n_embd"], cfg["n_layer"]
    c_attn = w["h.0.attn.c_attn.weight"].detach()
    out = {
        "pos.weight": w["wpe.weight"],
        "tok.weight.rows64": w["wte.weight"][:64],
        "blocks.0.att.q.weight": c_attn[:, :C].T,
        "blocks.0.att.o.weight": w["h.0.attn.c_proj.weight"].T,
        "blocks.0.norm1.bias": w["h.0.ln_1.bias"],
        f"blocks.{L - 1}.ff.down.weight": w[f"h.{L - 1}.mlp.c_proj.weight"].T,
        "final_norm.weight": w["ln_f.weight"],
    }
    return {k: v.detach().to(torch.float64).contiguous() for k, v in out.items()}


def peak_rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cmd_finetune(a):
    torch.set_num_threads(a.threads)
    dtype = {"float64": torch.float64, "float32": torch.float32}[a.dtype]
    cfg, w = finetune_tensors(a.folder, a.context, dtype)
    import numpy as np
    data = torch.from_numpy(np.fromfile(a.data, dtype=np.uint16).astype(np.int64))
    T, B, A = a.context, a.batch, a.accum
    offsets = None
    if a.offsets:
        with open(a.offsets) as f:
            offsets = [[int(t) for t in line.split()] for line in f if line.strip()]
    gen = torch.Generator().manual_seed(1337)
    decay = [p for p in w.values() if p.dim() >= 2]
    no_decay = [p for p in w.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    params = list(w.values())
    losses, norms = [], []
    for s in range(a.steps):
        if offsets is not None:
            starts = torch.tensor(offsets[s], dtype=torch.long)
            assert len(starts) == B * A, f"--offsets line {s + 1} has {len(starts)} offsets, want {B * A}"
        else:
            starts = torch.randint(len(data) - T, (B * A,), generator=gen)
        x = torch.stack([data[i:i + T] for i in starts])
        y = torch.stack([data[i + 1:i + 1 + T] for i in starts])
        t0, c0 = time.perf_counter(), time.process_time()
        total = 0.0
        for k in range(A):
            loss = finetune_loss(cfg, w, x[k * B:(k + 1) * B], y[k * B:(k + 1) * B]) / A
            loss.backward()
            total += loss.item()
        norm = torch.nn.utils.clip_grad_norm_(params, a.clip).item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        losses.append(total)
        norms.append(norm)
        print(json.dumps({"step": s + 1, "loss": total, "grad_norm": norm, "step_s": round(dt, 3),
                          "cpu_s": round(cpu, 3), "threads": a.threads, "dtype": a.dtype}), flush=True)
    print(json.dumps({"peak_rss_mb": round(peak_rss_mb(), 1)}), flush=True)
    if a.out:
        out = {"loss": torch.tensor(losses, dtype=torch.float64), "grad_norm": torch.tensor(norms, dtype=torch.float64)}
        out.update(gptg_tensors(cfg, w))
        save_safetensors(out, a.out)


def pin_and_preload(threads):
    """Pins every pool before the libraries start (OpenMP's, OpenBLAS's
    read their variable when loaded), and preloads jemalloc as PyTorch's
    CPU tuning guides advise (GPT2REF_MALLOC=glibc: not): sets what is
    missing and starts again."""
    env = {v: str(threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    if os.environ.get("GPT2REF_MALLOC") != "glibc" and os.path.exists(JEMALLOC):
        env["LD_PRELOAD"] = JEMALLOC
    if any(os.environ.get(k) != v for k, v in env.items()):
        os.environ.update(env)
        os.execv(sys.executable, [sys.executable] + sys.argv)


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
    t = sub.add_parser("finetune")
    t.add_argument("folder")
    t.add_argument("--data", required=True)
    t.add_argument("--offsets")
    t.add_argument("--context", type=int, default=256)
    t.add_argument("--batch", type=int, default=4)
    t.add_argument("--accum", type=int, default=8)
    t.add_argument("--steps", type=int, default=3)
    t.add_argument("--lr", type=float, default=3e-5)
    t.add_argument("--weight-decay", type=float, default=0.1)
    t.add_argument("--beta1", type=float, default=0.9)
    t.add_argument("--beta2", type=float, default=0.99)
    t.add_argument("--eps", type=float, default=1e-8)
    t.add_argument("--clip", type=float, default=1.0)
    t.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--out")
    a = ap.parse_args()
    if a.cmd == "generate":
        pin_and_preload(a.threads)
        cmd_generate(a)
    elif a.cmd == "finetune":
        pin_and_preload(a.threads)
        cmd_finetune(a)
    else:
        cmd_forward(a)


if __name__ == "__main__":
    main()
