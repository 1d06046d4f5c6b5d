#!/usr/bin/python3
"""Golden vectors for gptg's encoder-decoder from PyTorch's own torch.nn.Transformer.

The Transformer core (encoder and decoder stacks, their final LayerNorms,
masks) is nn.Transformer itself; around it sit gptg's embeddings and output
layer, written out below:

  src = src_tok[src_ids] * sqrt(C) + pos[0..S)      (the paper's scaling, section 3.4)
  tgt = tgt_tok[dec_in]  * sqrt(C) + pos[0..T)
  y   = nn.Transformer(src, tgt, tgt_mask=causal, src_key_padding_mask=src==PAD,
                       memory_key_padding_mask=src==PAD)
  logits = y @ out.weight^T + out.bias              (untied)
         = y @ tgt_tok.weight^T                     (tied: decoder input embedding = output layer)
  loss = F.cross_entropy(logits, dec_tgt, ignore_index=PAD, label_smoothing=eps),
         the mean over non-PAD targets

pos is the sinusoidal table of the paper (constant) or a learned table per
side (src_pos.weight, tgt_pos.weight). No tgt_key_padding_mask: PAD only ends
dec_in, and the causal mask already keeps a real position from seeing a later
PAD. Dropout 0; train mode so no fast path trims the padded memory.

Parameters are stored in gptg's names and layouts (nn.Linear's [out, in];
the packed in_proj split into q, k, v). Run: /usr/bin/python3 mkgolden.py
(writes the JSON files beside this script).
"""
import json, math, os, sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import torch, torch.nn as nn, torch.nn.functional as F

PAD, SOS, EOS = 0, 1, 2


def sinusoidal(n, C):
    """The paper's PE(pos, 2i) = sin(pos/10000^(2i/C)), PE(pos, 2i+1) = cos(same)."""
    pe = torch.zeros(n, C, dtype=torch.float64)
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, C, 2, dtype=torch.float64)
    div = torch.pow(torch.tensor(10000.0, dtype=torch.float64), i2 / C)
    pe[:, 0::2] = torch.sin(pos / div)
    pe[:, 1::2] = torch.cos(pos / div)
    return pe


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


class Seq2Seq(nn.Module):
    def __init__(self, m):
        super().__init__()
        C = m["embedding"]
        self.m = m
        self.src_tok = nn.Embedding(m["src_vocab"], C)
        self.tgt_tok = nn.Embedding(m["tgt_vocab"], C)
        if m["positions"] == "learned":
            self.src_pos = nn.Embedding(m["max_len"], C)
            self.tgt_pos = nn.Embedding(m["max_len"], C)
        act = {"relu": F.relu, "gelu": gelu_tanh, "gelu_exact": F.gelu}[m["activation"]]
        self.core = nn.Transformer(d_model=C, nhead=m["heads"], num_encoder_layers=m["encoder_blocks"],
                                   num_decoder_layers=m["decoder_blocks"], dim_feedforward=m["ff_hidden"],
                                   dropout=0.0, activation=act, batch_first=True,
                                   norm_first=m["norm"] == "pre")
        self.core.encoder.enable_nested_tensor = False
        if not m["tie_embeddings"]:
            self.out = nn.Linear(C, m["tgt_vocab"])

    def embed(self, ids, tok, pos):
        C = self.m["embedding"]
        T = ids.shape[1]
        p = pos.weight[:T] if self.m["positions"] == "learned" else sinusoidal(T, C)
        return tok(ids) * math.sqrt(C) + p

    def forward(self, src, dec_in):
        T = dec_in.shape[1]
        pad = src == PAD
        causal = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)
        y = self.core(self.embed(src, self.src_tok, getattr(self, "src_pos", None)),
                      self.embed(dec_in, self.tgt_tok, getattr(self, "tgt_pos", None)),
                      tgt_mask=causal, src_key_padding_mask=pad, memory_key_padding_mask=pad)
        if self.m["tie_embeddings"]:
            return y @ self.tgt_tok.weight.T
        return self.out(y)


def loss_fn(logits, tgt, eps):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1),
                           ignore_index=PAD, label_smoothing=eps)


def loss_by_hand(logits, tgt, eps):
    """The same loss written out, to check F.cross_entropy's reduction:
    per target (1-eps)*(-log p[t]) + eps*mean_v(-log p[v]), averaged over non-PAD."""
    logp = F.log_softmax(logits.reshape(-1, logits.shape[-1]), dim=-1)
    t = tgt.reshape(-1)
    keep = (t != PAD).double()
    nll = -logp.gather(1, t[:, None])[:, 0]
    smooth = -logp.mean(dim=1)
    per = (1 - eps) * nll + eps * smooth
    return (per * keep).sum() / keep.sum()


def ours(m, sd):
    """sd (parameters or gradients, by PyTorch name) in gptg's names: nn.Transformer's
    packed in_proj split into q, k, v."""
    out = {}

    def attn(prefix, src):
        w, b = sd[src + ".in_proj_weight"], sd[src + ".in_proj_bias"]
        C = w.shape[1]
        for i, n in enumerate("qkv"):
            out[f"{prefix}.{n}.weight"] = w[i * C:(i + 1) * C]
            out[f"{prefix}.{n}.bias"] = b[i * C:(i + 1) * C]
        out[prefix + ".o.weight"] = sd[src + ".out_proj.weight"]
        out[prefix + ".o.bias"] = sd[src + ".out_proj.bias"]

    def copy(dst, src):
        for s in ("weight", "bias"):
            out[f"{dst}.{s}"] = sd[f"{src}.{s}"]

    out["src_tok.weight"] = sd["src_tok.weight"]
    if "src_pos.weight" in sd:
        out["src_pos.weight"] = sd["src_pos.weight"]
    out["tgt_tok.weight"] = sd["tgt_tok.weight"]
    if "tgt_pos.weight" in sd:
        out["tgt_pos.weight"] = sd["tgt_pos.weight"]
    for i in range(m["encoder_blocks"]):
        e, p = f"encoder.{i}", f"core.encoder.layers.{i}"
        attn(e + ".att", p + ".self_attn")
        copy(e + ".norm1", p + ".norm1")
        copy(e + ".ff.up", p + ".linear1")
        copy(e + ".ff.down", p + ".linear2")
        copy(e + ".norm2", p + ".norm2")
    copy("encoder.norm", "core.encoder.norm")
    for i in range(m["decoder_blocks"]):
        d, p = f"decoder.{i}", f"core.decoder.layers.{i}"
        attn(d + ".att", p + ".self_attn")
        copy(d + ".norm1", p + ".norm1")
        attn(d + ".cross", p + ".multihead_attn")
        copy(d + ".norm2", p + ".norm2")
        copy(d + ".ff.up", p + ".linear1")
        copy(d + ".ff.down", p + ".linear2")
        copy(d + ".norm3", p + ".norm3")
    copy("decoder.norm", "core.decoder.norm")
    if not m["tie_embeddings"]:
        copy("out", "out")
    return out


def case(name, seed, m, B, src, dec_in, dec_tgt):
    torch.manual_seed(seed)
    model = Seq2Seq(m).double()
    model.train()
    C = m["embedding"]
    with torch.no_grad():  # spread the values so every term matters
        for k, p in model.named_parameters():
            if k.endswith("tok.weight"):
                p.normal_(0, C ** -0.5)  # after the sqrt(C) scale, N(0, 1)
            elif k.endswith("pos.weight"):
                p.normal_(0, 0.5)
            elif "norm" in k and k.endswith("weight"):
                p.uniform_(0.7, 1.3)
            else:
                p.uniform_(-0.5, 0.5)
    src, dec_in, dec_tgt = (torch.tensor(v) for v in (src, dec_in, dec_tgt))
    params = {k: dict(shape=list(v.shape), data=flat(v))
              for k, v in ours(m, dict(model.named_parameters())).items()}
    logits = model(src, dec_in)
    loss = loss_fn(logits, dec_tgt, m["label_smoothing"])
    byhand = loss_by_hand(logits, dec_tgt, m["label_smoothing"])
    assert abs(loss.item() - byhand.item()) <= 1e-12 * abs(byhand.item()), (loss.item(), byhand.item())
    loss.backward()
    grads = {k: flat(v) for k, v in ours(m, {k: p.grad for k, p in model.named_parameters()}).items()}
    total = math.sqrt(sum(v * v for g in grads.values() for v in g))
    zero = sorted(k for k, g in grads.items() if math.sqrt(sum(v * v for v in g)) < 1e-12 * total)
    for k in zero:
        grads[k] = [0.0] * len(grads[k])
    assert set(params) == set(grads)
    return dict(name=name, dtype="float64", model=m, batch=B,
                src=src.tolist(), dec_in=dec_in.tolist(), dec_tgt=dec_tgt.tolist(),
                params=params, logits=dict(shape=list(logits.shape), data=flat(logits)),
                loss=loss.item(), grads=grads, zero_grads=zero,
                compare=("float64: relative error ||a-b||/||b|| <= 1e-9 per tensor; for the tensors in "
                         "zero_grads (zero in exact arithmetic) ||a|| <= 1e-9 * ||all grads|| instead. "
                         "float32: ||a-b|| / max(||b||, 1e-3 * ||all grads||) <= 1e-4 per tensor"),
                made_by="testdata/translate/mkgolden.py, torch " + torch.__version__)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    base = dict(arch="encoder-decoder", src_vocab=11, tgt_vocab=13, max_len=6, embedding=8, heads=2,
                encoder_blocks=2, decoder_blocks=2, ff_hidden=16, norm="post", positions="sinusoidal",
                activation="relu", tie_embeddings=False, label_smoothing=0.1)
    # B=2, source length 5, target length 4, real padding on both sides: the second
    # sentence's source has two PADs, its target (dec_in / dec_tgt) two.
    src = [[5, 6, 7, 8, 2], [9, 4, 2, 0, 0]]
    dec_in = [[1, 5, 6, 7], [1, 8, 0, 0]]
    dec_tgt = [[5, 6, 7, 2], [8, 2, 0, 0]]
    cases = [
        ("post_sinusoidal_untied", 1, {}),
        ("pre_learned_tied", 2, dict(norm="pre", positions="learned", tie_embeddings=True)),
        ("post_learned_tied_gelu", 3, dict(positions="learned", tie_embeddings=True, activation="gelu",
                                           encoder_blocks=1, decoder_blocks=2)),
        ("pre_sinusoidal_untied_nosmooth", 4, dict(norm="pre", label_smoothing=0.0, heads=1,
                                                   encoder_blocks=2, decoder_blocks=1)),
    ]
    for name, seed, sw in cases:
        c = case(name, seed, {**base, **sw}, 2, src, dec_in, dec_tgt)
        with open(os.path.join(here, name + ".json"), "w") as f:
            json.dump(c, f)
        print(name, c["loss"], "zero grads:", c["zero_grads"])


if __name__ == "__main__":
    main()
