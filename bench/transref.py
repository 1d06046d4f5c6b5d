#!/usr/bin/env python3
"""PyTorch reference for gptg's translation model (the encoder-decoder of
"Attention is all you need"): same model, same data and batches, same recipe.

It trains on what `gptg data pairs CONFIG --out DIR` writes: the split
(train.tsv, test.tsv), the vocabularies (src.vocab, tgt.vocab), the resolved
config (config.toml) and gptg's batches step by step (batches.tsv), so both
tools see the same pairs in the same order. The model is torch.nn.Transformer
(post- or pre-norm, ReLU or GELU) between gptg's embeddings (token table
times sqrt(d) plus sinusoidal or learned positions) and output layer (tied to
the decoder's input embedding or not), initialised as gptg initialises it,
with dropout where gptg puts it (the embedding sums and each sub-layer's
output; nn.Transformer's extra dropouts on the attention weights and the
feed-forward's hidden layer are turned off), label-smoothed cross-entropy
averaged over non-PAD targets, AdamW with the config's betas, eps and weight
decay, the noam schedule, gradient clipping by global norm.

  transref.py train DIR [--threads N] [--max-steps N] [--no-bleu]
                        [--init MODEL] [--log-every N]
        trains; one JSON line per evaluation ({"step", "test_loss", ...}),
        then {"final": true, "test_loss", "bleu", "tokens_per_sec", ...};
        --init starts from a gptg model file's weights (gptg train --init
        the same file: both trainers then start alike), --log-every N adds
        {"step", "lr", "loss", "grad_norm"} rows to compare step by step
  transref.py translate DIR --model model.safetensors [--threads N] < lines
        greedy translation, batch 1, of each stdin line with a gptg model
        file, recomputing the decoder over the whole prefix at every word
        (no key/value cache); translations on stdout, timing on stderr
  transref.py check [--gptg BIN]
        checks that this file computes what gptg computes: loss and every
        gradient on the golden cases of testdata/translate (torch's float64,
        <= 1e-9 relative), the noam schedule against a short gptg run's
        metrics.jsonl, and a greedy translation of gptg's model equal to
        `gptg translate`'s

Needs Debian's python3-torch and python3-nltk (BLEU: NLTK's corpus_bleu on 13a
tokens, as bleu/testdata/mkexpected.py scores them); run with /usr/bin/python3.
--threads N (default 1) pins PyTorch's, OpenMP's and OpenBLAS's pools; jemalloc
is preloaded where Debian's libjemalloc2 is installed (TRANSREF_MALLOC=glibc
keeps the default allocator): bench/torchref.py, as for bench/gptref.py.
"""
import os, sys

import torchref  # bench/torchref.py: every thread pool pinned to --threads, jemalloc

torchref.tune("TRANSREF")

import argparse, json, math, re, resource, struct, subprocess, tempfile, time, tomllib, unicodedata
import torch, torch.nn as nn, torch.nn.functional as F

PAD, SOS, EOS, UNK = 0, 1, 2, 3
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------- data


class Data:
    """What `gptg data pairs CONFIG --out DIR` wrote: config, vocabularies,
    pairs as ids, the shapes and the training batches in gptg's order."""

    def __init__(self, d):
        with open(os.path.join(d, "config.toml"), "rb") as f:
            self.cfg = tomllib.load(f)
        self.src_words = self.read(d, "src.vocab")
        self.tgt_words = self.read(d, "tgt.vocab")
        self.src_id = {w: i for i, w in enumerate(self.src_words)}
        self.tgt_id = {w: i for i, w in enumerate(self.tgt_words)}
        self.train = self.pairs(os.path.join(d, "train.tsv"))
        self.test = self.pairs(os.path.join(d, "test.tsv"))
        self.plans = []
        with open(os.path.join(d, "batches.tsv"), encoding="utf-8") as f:
            head = f.readline().split()
            assert head[:2] == ["#", "shapes"], head
            self.shapes = [tuple(int(x) for x in s.split("×")) for s in head[2:]]
            for line in f:
                step, bucket, idx = line.rstrip("\n").split("\t")
                assert int(step) == len(self.plans) + 1
                self.plans.append((int(bucket), [int(i) for i in idx.split()]))

    @staticmethod
    def read(d, name):
        with open(os.path.join(d, name), encoding="utf-8") as f:
            return f.read().split("\n")[:-1]

    def encode_src(self, words):
        return [self.src_id.get(w, UNK) for w in words]

    def pairs(self, path):
        out = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                _, s, t, stext, ttext = line.rstrip("\n").split("\t")
                out.append(dict(src=self.encode_src(s.split()), tgt=[self.tgt_id.get(w, UNK) for w in t.split()],
                                src_text=stext, tgt_text=ttext))
        return out

    def bucket_of(self, p):
        for k, (S, T) in enumerate(self.shapes):
            if len(p["src"]) + 1 <= S and len(p["tgt"]) + 1 <= T:
                return k
        raise ValueError("a pair fits no shape")

    def in_order(self, ps, B):
        """pairs.Batcher.InOrder: bucket by bucket in the pairs' order, cut into batches of B."""
        buckets = [[] for _ in self.shapes]
        for i, p in enumerate(ps):
            buckets[self.bucket_of(p)].append(i)
        return [(k, idx[i:i + B]) for k, idx in enumerate(buckets) for i in range(0, len(idx), B)]

    def fill(self, ps, plan, B):
        """pairs.Batcher.Fill: src = words, EOS, PAD…; dec_in = SOS, words, PAD…;
        dec_tgt = words, EOS, PAD…; rows past the plan's pairs are filler rows
        (src = [EOS], dec_in = [SOS], no targets)."""
        k, idx = plan
        S, T = self.shapes[k]
        src = torch.zeros(B, S, dtype=torch.long)
        dec_in = torch.zeros(B, T, dtype=torch.long)
        dec_tgt = torch.zeros(B, T, dtype=torch.long)
        dec_in[:, 0] = SOS
        tokens = 0
        for r in range(B):
            if r >= len(idx):
                src[r, 0] = EOS
                continue
            p = ps[idx[r]]
            n, m = len(p["src"]), len(p["tgt"])
            src[r, :n] = torch.tensor(p["src"])
            src[r, n] = EOS
            dec_in[r, 1:m + 1] = torch.tensor(p["tgt"])
            dec_tgt[r, :m] = torch.tensor(p["tgt"])
            dec_tgt[r, m] = EOS
            tokens += m + 1
        return src, dec_in, dec_tgt, tokens

# ---------------------------------------------------------------- model


def sinusoidal(n, C):
    """The paper's PE(pos, 2i) = sin(pos/10000^(2i/C)), PE(pos, 2i+1) = cos(same), in float64."""
    pe = torch.zeros(n, C, dtype=torch.float64)
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    div = torch.pow(torch.tensor(10000.0, dtype=torch.float64), torch.arange(0, C, 2, dtype=torch.float64) / C)
    pe[:, 0::2] = torch.sin(pos / div)
    pe[:, 1::2] = torch.cos(pos / div)
    return pe


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


class Translation(nn.Module):
    """m is the config's [model] table (with src_vocab, tgt_vocab)."""

    def __init__(self, m, src_vocab, tgt_vocab):
        super().__init__()
        C, p = m["embedding"], m["dropout"]
        self.C, self.positions, self.tied = C, m["positions"], m["tie_embeddings"]
        self.src_tok = nn.Embedding(src_vocab, C)
        self.tgt_tok = nn.Embedding(tgt_vocab, C)
        if self.positions == "learned":
            self.src_pos = nn.Embedding(m["context"], C)
            self.tgt_pos = nn.Embedding(m["context"], C)
        else:
            self.register_buffer("pe", sinusoidal(m["context"], C).float(), persistent=False)
        act = "relu" if m["activation"] == "relu" else gelu_tanh
        self.core = nn.Transformer(d_model=C, nhead=m["heads"], num_encoder_layers=m["encoder_blocks"],
                                   num_decoder_layers=m["decoder_blocks"], dim_feedforward=m["ff_hidden"],
                                   dropout=p, activation=act, batch_first=True, norm_first=m["norm"] == "pre")
        # Evaluation must see the padded memory whole (pytorch-notes.md).
        self.core.encoder.enable_nested_tensor = False
        # gptg's dropout is the paper's: on the embedding sums and on each
        # sub-layer's output (nn.Transformer's dropout1/2/3). nn.Transformer
        # also drops attention weights and the feed-forward's hidden layer.
        for layer in list(self.core.encoder.layers) + list(self.core.decoder.layers):
            layer.dropout = nn.Identity()
            layer.self_attn.dropout = 0.0
            if hasattr(layer, "multihead_attn"):
                layer.multihead_attn.dropout = 0.0
        self.drop = nn.Dropout(p)
        if not self.tied:
            self.out = nn.Linear(C, tgt_vocab)
        self.init_like_gptg()

    def init_like_gptg(self):
        """graph/translate.go's initialisation: token tables N(0, 1/C), learned
        positions N(0, 1), every matrix Xavier-uniform over its own (in, out)
        — q, k and v each (C, C), not the packed (3C, C) —, biases 0, LayerNorm 1/0."""
        C = self.C
        with torch.no_grad():
            for name, t in self.named_parameters():
                if name.endswith("tok.weight"):
                    t.normal_(0, C ** -0.5)
                elif name.endswith("pos.weight"):
                    t.normal_(0, 1)
                elif "norm" in name:
                    t.fill_(1.0 if name.endswith("weight") else 0.0)
                elif name.endswith("in_proj_weight"):
                    for i in range(3):
                        nn.init.xavier_uniform_(t[i * C:(i + 1) * C])
                elif t.dim() == 2:
                    nn.init.xavier_uniform_(t)
                else:
                    t.zero_()

    def embed(self, ids, tok, pos):
        T = ids.shape[1]
        p = pos.weight[:T] if self.positions == "learned" else self.pe[:T]
        return self.drop(tok(ids) * math.sqrt(self.C) + p)

    def encode(self, src):
        pad = src == PAD
        return self.core.encoder(self.embed(src, self.src_tok, getattr(self, "src_pos", None)),
                                 src_key_padding_mask=pad), pad

    def decode(self, memory, pad, dec_in):
        T = dec_in.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf"), dtype=memory.dtype), diagonal=1)
        y = self.core.decoder(self.embed(dec_in, self.tgt_tok, getattr(self, "tgt_pos", None)), memory,
                              tgt_mask=causal, memory_key_padding_mask=pad)
        return y @ self.tgt_tok.weight.T if self.tied else self.out(y)

    def forward(self, src, dec_in):
        memory, pad = self.encode(src)
        return self.decode(memory, pad, dec_in)


def loss_fn(logits, dec_tgt, eps):
    """Label-smoothed cross-entropy averaged over the non-PAD targets."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), dec_tgt.reshape(-1),
                           ignore_index=PAD, label_smoothing=eps)


def gptg_names(model):
    """The model's parameters by gptg's names (nn.Transformer's packed
    in_proj split into q, k, v: views, so loading into them loads the model)."""
    sd = dict(model.named_parameters())
    out = {}

    def attn(prefix, src):
        w, b = sd[src + ".in_proj_weight"], sd[src + ".in_proj_bias"]
        C = w.shape[1]
        for i, n in enumerate("qkv"):
            out[f"{prefix}.{n}.weight"] = (src + ".in_proj_weight", slice(i * C, (i + 1) * C))
            out[f"{prefix}.{n}.bias"] = (src + ".in_proj_bias", slice(i * C, (i + 1) * C))
        copy(prefix + ".o", src + ".out_proj")

    def copy(dst, src):
        for s in ("weight", "bias"):
            out[f"{dst}.{s}"] = (f"{src}.{s}", slice(None))

    for side in ("src", "tgt"):
        out[side + "_tok.weight"] = (side + "_tok.weight", slice(None))
        if side + "_pos.weight" in sd:
            out[side + "_pos.weight"] = (side + "_pos.weight", slice(None))
    for i in range(len(model.core.encoder.layers)):
        e, p = f"encoder.{i}", f"core.encoder.layers.{i}"
        attn(e + ".att", p + ".self_attn")
        copy(e + ".norm1", p + ".norm1")
        copy(e + ".ff.up", p + ".linear1")
        copy(e + ".ff.down", p + ".linear2")
        copy(e + ".norm2", p + ".norm2")
    copy("encoder.norm", "core.encoder.norm")
    for i in range(len(model.core.decoder.layers)):
        d, p = f"decoder.{i}", f"core.decoder.layers.{i}"
        attn(d + ".att", p + ".self_attn")
        copy(d + ".norm1", p + ".norm1")
        attn(d + ".cross", p + ".multihead_attn")
        copy(d + ".norm2", p + ".norm2")
        copy(d + ".ff.up", p + ".linear1")
        copy(d + ".ff.down", p + ".linear2")
        copy(d + ".norm3", p + ".norm3")
    copy("decoder.norm", "core.decoder.norm")
    if not model.tied:
        copy("out", "out")
    return out


def load_params(model, tensors):
    """Loads tensors (gptg's names) into model; every parameter must be given."""
    names = gptg_names(model)
    if set(names) != set(tensors):
        raise ValueError(f"parameters differ: missing {sorted(set(names) - set(tensors))}, "
                         f"unexpected {sorted(set(tensors) - set(names))}")
    sd = dict(model.named_parameters())
    with torch.no_grad():
        for n, (p, sl) in names.items():
            dst = sd[p][sl]
            src = torch.as_tensor(tensors[n], dtype=dst.dtype)
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(f"{n}: shape {tuple(src.shape)}, the model's {tuple(dst.shape)}")
            dst.copy_(src)


def grads_by_gptg_name(model):
    sd = dict(model.named_parameters())
    return {n: sd[p].grad[sl] for n, (p, sl) in gptg_names(model).items()}

# ---------------------------------------------------------------- recipe


def noam(step, dim, warmup):
    """train.Schedule's noam: d^-0.5 * min(n^-0.5, n * warmup^-1.5), n = step + 1."""
    n = step + 1
    return dim ** -0.5 * min(n ** -0.5, n * warmup ** -1.5)


def test_loss(model, data, B, eps):
    """train.TranslationLoss: each test batch's mean loss weighted by its targets."""
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for plan in data.in_order(data.test, B):
            src, dec_in, dec_tgt, tokens = data.fill(data.test, plan, B)
            total += loss_fn(model(src, dec_in), dec_tgt, eps).item() * tokens
            n += tokens
    return total / n


def greedy(model, src, T, block=(PAD, SOS)):
    """Greedy decoding of a batch of padded sources without a key/value cache:
    the encoder once, then the decoder over the whole prefix for each word.
    As translate.GreedyBatch: never PAD or SOS, a row ends at EOS or after T
    words. Returns each row's ids without EOS."""
    rows = src.shape[0]
    with torch.no_grad():
        memory, pad = model.encode(src)
        dec_in = torch.full((rows, 1), SOS, dtype=torch.long)
        out = [[] for _ in range(rows)]
        done = [False] * rows
        for step in range(T):
            logits = model.decode(memory, pad, dec_in)[:, -1]
            logits[:, list(block)] = float("-inf")
            ids = logits.argmax(-1)
            for r in range(rows):
                if done[r]:
                    continue
                i = int(ids[r])
                if i == EOS or step == T - 1:
                    done[r] = True
                    if i != EOS:
                        out[r].append(i)
                else:
                    out[r].append(i)
            if all(done):
                break
            dec_in = torch.cat([dec_in, ids[:, None]], 1)
    return out

# ---------------------------------------------------------------- BLEU


def word_rune(c):
    """pairs.isWordRune: a letter, a decimal digit or a combining mark."""
    cat = unicodedata.category(c)
    return cat[0] in "LM" or cat == "Nd"


def is_word(w):
    return bool(w) and word_rune(w[0])


CONTRACTION = {"t", "s", "re", "ve", "ll", "d", "m"}
CLOSING = set(".,;:!?)]}»”’%")
OPENING = set("¿¡([{«“‘")


def detokenize(words):
    """pairs.Detokenize: a space between words, none before closing or after
    opening punctuation; an apostrophe before a contraction's ending joins."""
    out, no_space = [], True
    for i, w in enumerate(words):
        in_word = w in ("'", "’") and 0 < i < len(words) - 1 and is_word(words[i - 1]) and words[i + 1] in CONTRACTION
        if not no_space and w not in CLOSING and not in_word:
            out.append(" ")
        out.append(w)
        no_space = w in OPENING or in_word
    return "".join(out)


RULES_13A = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tok13a(line):
    """WMT's mteval-v13a tokenisation as sacrebleu applies it (bleu/testdata/mkexpected.py's)."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = " " + line + " "
    for rx, repl in RULES_13A:
        line = rx.sub(repl, line)
    return line.split()


def corpus_bleu(hyps, refs):
    """gptg eval's BLEU: lower-cased 13a tokens, NLTK's corpus_bleu (4-grams, uniform)."""
    import warnings
    from nltk.translate.bleu_score import corpus_bleu as nltk_bleu
    warnings.filterwarnings("ignore", module="nltk")  # "0 counts of 4-gram overlaps": BLEU is then 0, as gptg's
    return nltk_bleu([[tok13a(r.lower())] for r in refs], [tok13a(h.lower()) for h in hyps])


def test_bleu(model, data, B):
    model.eval()
    T = data.cfg["data"]["max_target"] + 1
    if data.cfg["model"]["positions"] == "learned":
        T = min(T, data.cfg["model"]["context"])
    hyps, refs = [], []
    for plan in data.in_order(data.test, B):
        src = data.fill(data.test, plan, B)[0]
        for r, ids in zip(plan[1], greedy(model, src, T)):
            hyps.append(detokenize([data.tgt_words[i] for i in ids]))
            refs.append(data.test[r]["tgt_text"])
    return corpus_bleu(hyps, refs), hyps

# ---------------------------------------------------------------- commands


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(data):
    m = dict(data.cfg["model"])
    return Translation(m, len(data.src_words), len(data.tgt_words))


def cmd_train(a):
    data = Data(a.dir)
    cfg, t = data.cfg, data.cfg["train"]
    torch.manual_seed(t["seed"])
    torch.set_num_threads(a.threads)
    model = build(data)
    if cfg["model"]["dtype"] == "float64":
        model = model.double()
        if cfg["model"]["positions"] == "sinusoidal":  # not the float32 table widened
            model.pe = sinusoidal(cfg["model"]["context"], cfg["model"]["embedding"])
    if a.init:
        tensors, _ = torchref.load_safetensors(a.init)
        load_params(model, tensors)
    opt = torch.optim.AdamW(model.parameters(), lr=0.0, betas=(t["beta1"], t["beta2"]), eps=t["eps"],
                            weight_decay=t["weight_decay"], foreach=True)
    B, eps = t["batch"], cfg["model"]["label_smoothing"]
    plans = data.plans[:a.max_steps] if a.max_steps else data.plans
    total = len(plans)
    train_secs, tokens, loss_sum, loss_n = 0.0, 0, 0.0, 0
    for step, plan in enumerate(plans):
        src, dec_in, dec_tgt, n = data.fill(data.train, plan, B)
        start = time.perf_counter()
        model.train()
        lr = noam(step, cfg["model"]["embedding"], t["warmup"]) if t["schedule"] == "noam" else None
        if lr is None:
            raise SystemExit("transref.py: only train.schedule = \"noam\" is implemented")
        for g in opt.param_groups:
            g["lr"] = lr
        loss = loss_fn(model(src, dec_in), dec_tgt, eps)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = nn.utils.clip_grad_norm_(model.parameters(), t["clip"] if t["clip"] > 0 else math.inf)
        opt.step()
        train_secs += time.perf_counter() - start
        tokens += n
        loss_sum, loss_n = loss_sum + loss.item(), loss_n + 1
        done = step + 1
        if a.log_every and done % a.log_every == 0:
            print(json.dumps(dict(step=done, lr=lr, loss=loss.item(), grad_norm=float(gnorm))), flush=True)
        if done == total or (t["eval_every"] > 0 and done % t["eval_every"] == 0):
            row = dict(step=done, lr=lr, train_loss=loss_sum / loss_n, test_loss=test_loss(model, data, B, eps),
                       tokens_per_sec=tokens / train_secs)
            loss_sum, loss_n = 0.0, 0
            print(json.dumps(row), flush=True)
    final = dict(final=True, steps=total, test_loss=row["test_loss"], tokens_per_sec=tokens / train_secs,
                 train_secs=train_secs, threads=a.threads, torch=torch.__version__)
    if not a.no_bleu:
        b, hyps = test_bleu(model, data, B)
        final["bleu"] = 100 * b  # as gptg eval prints it
        # BLEU's length ratio (gptg eval's "ratio ="): hypothesis over reference 13a tokens
        refs = [p["tgt_text"] for plan in data.in_order(data.test, B) for p in (data.test[r] for r in plan[1])]
        final["bleu_ratio"] = sum(len(tok13a(h.lower())) for h in hyps) / sum(len(tok13a(r.lower())) for r in refs)
    final["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(final), flush=True)


def tokenize(s):
    """pairs.Tokenize: lower-cased runs of letters, digits and marks; any other
    non-space character is a word of its own."""
    words, cur = [], ""
    for c in s:
        if word_rune(c):
            cur += c
            continue
        if cur:
            words.append(cur.lower())
            cur = ""
        if not c.isspace():
            words.append(c.lower())
    if cur:
        words.append(cur.lower())
    return words


def cmd_translate(a):
    torch.set_num_threads(a.threads)
    data = Data(a.dir)
    tensors, meta = torchref.load_safetensors(a.model)
    model = build(data)
    load_params(model, tensors)
    model.eval()
    T = data.cfg["data"]["max_target"] + 1
    lines = [l.rstrip("\n") for l in sys.stdin if l.strip()]

    def run():
        out = []
        for line in lines:
            src = torch.tensor([data.encode_src(tokenize(line)) + [EOS]])
            ids = greedy(model, src, T)[0]
            out.append(detokenize([data.tgt_words[i] for i in ids]))
        return out

    if a.warm:
        run()  # PyTorch's first calls are slower: time a second pass
    start = time.perf_counter()
    out = run()
    secs = time.perf_counter() - start
    sys.stdout.write("".join(l + "\n" for l in out))
    print(json.dumps(dict(sentences=len(lines), secs=secs, sentences_per_sec=len(lines) / secs,
                          threads=a.threads, peak_rss_mb=peak_rss_mb())), file=sys.stderr)

# ---------------------------------------------------------------- check


def check_golden():
    """Loss, logits and every gradient of the golden cases (torch.nn.Transformer
    in float64, testdata/translate/mkgolden.py) with this file's model."""
    worst = 0.0
    gdir = os.path.join(ROOT, "testdata", "translate")
    names = sorted(f for f in os.listdir(gdir) if f.endswith(".json"))
    assert names, "no golden files in " + gdir
    for name in names:
        with open(os.path.join(gdir, name)) as f:
            g = json.load(f)
        m = dict(g["model"], dropout=0.0, context=g["model"]["max_len"])
        model = Translation(m, m["src_vocab"], m["tgt_vocab"]).double()
        if m["positions"] == "sinusoidal":
            model.pe = sinusoidal(m["context"], m["embedding"])
        load_params(model, {k: torch.tensor(v["data"], dtype=torch.float64).reshape(v["shape"])
                            for k, v in g["params"].items()})
        model.train()
        src, dec_in, dec_tgt = (torch.tensor(g[k]) for k in ("src", "dec_in", "dec_tgt"))
        logits = model(src, dec_in)
        loss = loss_fn(logits, dec_tgt, m["label_smoothing"])
        loss.backward()
        errs = {"loss": abs(loss.item() - g["loss"]) / abs(g["loss"]),
                "logits": rel(logits, g["logits"]["data"])}
        grads = grads_by_gptg_name(model)
        gnorm = math.sqrt(sum(float((t ** 2).sum()) for t in grads.values()))
        for k, t in grads.items():
            if k in g["zero_grads"]:
                errs[k] = float(t.norm()) / gnorm
            else:
                errs[k] = rel(t, g["grads"][k])
        bad = {k: e for k, e in errs.items() if not e <= 1e-9}
        if bad:
            raise SystemExit(f"check: {name}: relative error above 1e-9: {bad}")
        worst = max(worst, max(errs.values()))
        print(f"check: {name}: loss {loss.item():.12f}, logits and {len(grads)} gradients within 1e-9 "
              f"(largest {max(errs.values()):.1e})")
    return worst


def rel(t, want):
    w = torch.tensor(want, dtype=torch.float64)
    return float((t.detach().reshape(-1) - w).norm() / w.norm())


def check_with_gptg(gptg):
    """A short gptg run of the seed config: its lr column equals noam(), and
    greedy translations of its model by this file equal `gptg translate`'s."""
    cfg = os.path.join(ROOT, "configs", "translate", "en-es-seed.toml")
    with tempfile.TemporaryDirectory() as tmp:
        d, run = os.path.join(tmp, "data"), os.path.join(tmp, "run")
        sets = ["--set", "train.max_steps=400", "--set", "train.log_every=1", "--set", "train.eval_every=0",
                "--set", "train.out=" + run]
        subprocess.run([gptg, "data", "pairs", cfg, "--out", d] + sets, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([gptg, "train", cfg, "--threads", "1"] + sets, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        data = Data(d)
        rows = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl")) if l.strip()]
        rows = [r for r in rows if "lr" in r and "step" in r]
        assert len(data.plans) == 400 and len(rows) == 400, (len(data.plans), len(rows))
        for r in rows:
            want = noam(r["step"] - 1, data.cfg["model"]["embedding"], data.cfg["train"]["warmup"])
            if abs(r["lr"] - want) > 1e-12 * want:
                raise SystemExit(f"check: step {r['step']}: gptg's lr {r['lr']!r}, noam() {want!r}")
        print(f"check: noam schedule equals gptg's lr at all {len(rows)} steps of a run")
        # The same model file translates the same way (float32: a near tie
        # may break differently, so all but one sentence must agree).
        srcs = [p["src_text"] for p in data.test[:20]]
        got = subprocess.run([gptg, "translate", run, "--threads", "1"], input="".join(s + "\n" for s in srcs),
                             check=True, capture_output=True, text=True).stdout.splitlines()
        ref = subprocess.run([sys.executable, __file__, "translate", d, "--model", os.path.join(run, "model.safetensors")],
                             input="".join(s + "\n" for s in srcs), check=True, capture_output=True,
                             text=True).stdout.splitlines()
        same = sum(x == y for x, y in zip(got, ref))
        if len(got) != len(srcs) or same < len(srcs) - 1:
            raise SystemExit(f"check: greedy translations differ: {same} of {len(srcs)} equal\n" +
                             "\n".join(f"gptg: {x}\nref:  {y}" for x, y in zip(got, ref) if x != y))
        print(f"check: greedy translations of gptg's model file: {same} of {len(srcs)} equal to gptg translate's")
        # gptg eval's BLEU of that model equals this file's BLEU of the same model.
        ev = subprocess.run([gptg, "eval", os.path.join(run, "model.safetensors"), "--threads", "1"],
                            check=True, capture_output=True, text=True).stdout
        tensors, _ = torchref.load_safetensors(os.path.join(run, "model.safetensors"))
        model = build(data)
        load_params(model, tensors)
        b, _ = test_bleu(model, data, data.cfg["train"]["batch"])
        tl = test_loss(model, data, data.cfg["train"]["batch"], data.cfg["model"]["label_smoothing"])
        mb = re.search(r"BLEU[ =]*([0-9.]+)", ev)
        ml = re.search(r"test loss ([0-9.]+)", ev)
        print(f"check: the same model: test loss {tl:.6f} (gptg eval {ml.group(1) if ml else '?'}), "
              f"BLEU {100 * b:.2f} (gptg eval: {mb.group(1) if mb else ev.strip().splitlines()[-1]})")
        if not ml or abs(float(ml.group(1)) - tl) > 1e-4 * tl:
            raise SystemExit("check: test loss differs from gptg eval's")
        # float32 near-ties may turn a word or two of 458 greedy translations.
        if not mb or abs(float(mb.group(1)) - 100 * b) > 0.1:
            raise SystemExit("check: BLEU differs from gptg eval's by more than 0.1")


def cmd_check(a):
    torch.set_num_threads(1)
    check_golden()
    if a.gptg:
        check_with_gptg(a.gptg)
    print("check: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("train")
    p.add_argument("dir", help="a folder written by gptg data pairs CONFIG --out DIR")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0, help="stop after N of batches.tsv's steps")
    p.add_argument("--no-bleu", action="store_true", help="skip translating the test split")
    p.add_argument("--init", help="start from this gptg model file's weights (as gptg train --init)")
    p.add_argument("--log-every", type=int, default=0,
                   help="also print {step, lr, loss, grad_norm} every N steps (gptg's metrics.jsonl rows)")
    p.set_defaults(f=cmd_train)
    p = sub.add_parser("translate")
    p.add_argument("dir")
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warm", action="store_true", help="translate every line once before the timed pass")
    p.set_defaults(f=cmd_translate)
    p = sub.add_parser("check")
    p.add_argument("--gptg", help="a gptg binary: also compare the schedule and translations with a short run")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(f=cmd_check)
    a = ap.parse_args()
    a.f(a)


if __name__ == "__main__":
    main()
