"""Issue #24's fresh round of session 11 (lane audit3): every command under a
process memory limit, and new variants of the other three classes.

Memory probes ("audit3 mem: ...") run gptg on inputs big enough to matter —
a 50M-parameter GPT model and an 80M-parameter translation model trained
with the binary, a 600 MB nanoGPT checkpoint, a 200 MB corpus, 2M pairs, a
260 MB metrics.jsonl — under ulimit -v (KiB of address space) and a cgroup
memory limit (bytes), each at a limit well below, near and well above what
the command needs. What counts as right: exit 0, or one line that names a
limit (exit 1 or 2); never the runtime's "fatal error: out of memory" trace
or the kernel's OOM kill; and under a generous limit, exit 0 (valid work
refused is wrong too). The large fixtures are made once per run of
probe.py, in the work folder beside the probes' (big/), and hard-linked into
each probe's folder (GPTG_PROBE_BIG=DIR keeps them in DIR across runs).

Run inside a sandbox (cgroup probes are then "not run": the cgroup fs is
read-only there):
    /work/sandbox DIR python3 testdata/hostile/probe.py BIN --only audit3
For the cgroup probes too, as root, with each gptg command in the sandbox:
    python3 testdata/hostile/probe.py /var/tmp/gptg --only 'audit3 mem' --sandbox '/work/sandbox {dir}'
"""

import os
import shutil
import subprocess

MiB = 1 << 20
GiB = 1 << 30

# The large fixtures, by name: what makes them (in big/, the folder beside
# the probes' work/p). Each is made on first use.
BIG_GPT = """[data]
path = "builtin:tinyshakespeare"
[model]
context = 256
embedding = 768
blocks = 7
heads = 12
residual = true
norm = "pre"
[train]
max_steps = 1
batch = 1
eval_batches = 1
checkpoint_every = 1000000
out = "runs/big"
"""

BIG_TR = """[data]
format = "pairs"
path = "builtin:bible-en-es"
tokenizer = "word"
min_count = 2
max_source = 24
max_target = 32
[model]
arch = "encoder-decoder"
embedding = 512
heads = 8
encoder_blocks = 6
decoder_blocks = 6
ff_hidden = 4096
norm = "post"
positions = "sinusoidal"
activation = "relu"
[train]
max_steps = 1
batch = 2
eval_batches = 1
out = "runs/bigtr"
"""

SMALL_PAIRS_CFG = """[data]
format = "pairs"
path = "bigpairs.tsv"
max_source = 12
max_target = 12
[model]
arch = "encoder-decoder"
embedding = 8
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 16
[train]
batch = 8
max_steps = 2
eval_batches = 1
out = "o/bp"
"""

SMALL_CORPUS_CFG = """[data]
path = "bigcorpus.txt"
[model]
context = 16
embedding = 16
blocks = 1
heads = 2
[train]
batch = 4
max_steps = 2
eval_batches = 1
out = "o/bc"
"""

MKCKPT = r"""
import sys, torch
torch.manual_seed(0)
L, H, C, T, V = 7, 12, 768, 256, 55
sd = {'transformer.wte.weight': torch.randn(V, C) * 0.02, 'transformer.wpe.weight': torch.randn(T, C) * 0.02}
for i in range(L):
    p = 'transformer.h.%d.' % i
    sd[p+'ln_1.weight'] = torch.ones(C); sd[p+'ln_1.bias'] = torch.zeros(C)
    sd[p+'attn.bias'] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
    sd[p+'attn.c_attn.weight'] = torch.randn(3*C, C) * 0.02; sd[p+'attn.c_attn.bias'] = torch.zeros(3*C)
    sd[p+'attn.c_proj.weight'] = torch.randn(C, C) * 0.02; sd[p+'attn.c_proj.bias'] = torch.zeros(C)
    sd[p+'ln_2.weight'] = torch.ones(C); sd[p+'ln_2.bias'] = torch.zeros(C)
    sd[p+'mlp.c_fc.weight'] = torch.randn(4*C, C) * 0.02; sd[p+'mlp.c_fc.bias'] = torch.zeros(4*C)
    sd[p+'mlp.c_proj.weight'] = torch.randn(C, 4*C) * 0.02; sd[p+'mlp.c_proj.bias'] = torch.zeros(C)
sd['transformer.ln_f.weight'] = torch.ones(C); sd['transformer.ln_f.bias'] = torch.zeros(C)
sd['lm_head.weight'] = sd['transformer.wte.weight']
params = [v for k, v in sd.items() if not k.endswith('attn.bias') and k != 'lm_head.weight']
state = {i: {'step': torch.tensor(20.), 'exp_avg': torch.zeros_like(p), 'exp_avg_sq': torch.zeros_like(p)} for i, p in enumerate(params)}
pg = dict(weight_decay=0.1, lr=1e-3, betas=(0.9, 0.99), eps=1e-8, amsgrad=False, foreach=None, maximize=False,
          capturable=False, params=list(range(len(params))))
ma = dict(n_layer=L, n_head=H, n_embd=C, block_size=T, bias=True, vocab_size=V, dropout=0.0)
torch.save({'model': sd, 'optimizer': {'state': state, 'param_groups': [pg]}, 'model_args': ma, 'iter_num': 20,
            'best_val_loss': torch.tensor(3.9), 'config': dict(ma, dataset='shakespeare_char')}, sys.argv[1])
"""


def _corpus(path, h):
    with open(h.TINY) as f:
        t = f.read()
    with open(path, "w") as f:
        while f.tell() < 200 * MiB:
            f.write(t)


def _pairs(path, h):
    import random
    rnd = random.Random(1)
    a = ["a%d" % i for i in range(3000)]
    b = ["b%d" % i for i in range(3000)]
    with open(path, "w") as f:
        for _ in range(2_000_000):
            n = rnd.randint(3, 12)
            f.write(" ".join(rnd.choice(a) for _ in range(n)) + "\t" + " ".join(rnd.choice(b) for _ in range(n)) + "\n")


def _metrics(path, h):
    import json
    import math
    with open(path, "w") as f:
        for i in range(1, 1_650_001):
            r = {"step": i, "epoch": i / 1e6, "lr": 1e-3, "loss": 4 - math.log1p(i) / 10, "grad_norm": 1.0,
                 "tokens_per_s": 1000.0, "elapsed_s": i * 0.01, "heap_mb": 2.0, "rss_mb": 28.7}
            if i % 1000 == 0:
                r["test_loss"] = r["loss"] + 0.1
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


def _train(h, big, cfg, text):
    with open(os.path.join(big, cfg), "w") as f:
        f.write(text)
    r = h.run_bin(["train", cfg, "--quiet"], big, timeout=1800)
    if r.returncode != 0:
        raise h.NotRun("could not train the fixture %s: %s" % (cfg, r.stderr.strip()[:300]))


def _ensure(h, big, name):
    """Makes the large fixture name in big/ once."""
    p = os.path.join(big, name)
    if os.path.exists(p):
        return
    os.makedirs(big, exist_ok=True)
    if name == "runs/big":
        _train(h, big, "big.toml", BIG_GPT)
    elif name in ("big.toml", "bc.toml", "bp.toml"):
        with open(p, "w") as f:
            f.write({"big.toml": BIG_GPT, "bc.toml": SMALL_CORPUS_CFG, "bp.toml": SMALL_PAIRS_CFG}[name])
    elif name == "small.txt":
        # the big model's characters (tinyshakespeare's), then a little text
        r = h.run_bin(["data", "export", "tinyshakespeare", "--out", "ts.txt"], big)
        if r.returncode != 0:
            raise h.NotRun("data export: " + r.stderr.strip()[:300])
        with open(os.path.join(big, "ts.txt")) as f:
            t = f.read()
        with open(p, "w") as f:
            f.write("".join(sorted(set(t))) + t[:6000])
    elif name == "runs/bigtr":
        _train(h, big, "bigtr.toml", BIG_TR)
    elif name == "bigckpt.pt":
        if not os.path.exists("/usr/bin/python3") or subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode:
            raise h.NotRun("a large nanoGPT checkpoint needs PyTorch (/usr/bin/python3 with torch)")
        subprocess.run(["/usr/bin/python3", "-c", MKCKPT, p + ".tmp"], check=True, capture_output=True, timeout=600)
        os.rename(p + ".tmp", p)
    elif name == "runs/bigm":
        os.makedirs(p + ".tmp")
        for f in ("config.toml", "model.safetensors"):
            shutil.copy(os.path.join(os.path.dirname(big), "fixtures", "runs/c", f), os.path.join(p + ".tmp", f))
        _metrics(os.path.join(p + ".tmp", "metrics.jsonl"), h)
        os.rename(p + ".tmp", p)
    else:
        {"bigcorpus.txt": _corpus, "bigpairs.tsv": _pairs}[name](p + ".tmp", h)
        os.rename(p + ".tmp", p)


def _link(src, dst):
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy(src, dst)


def big(h, *names):
    """A setup that hard-links the large fixtures names (files or run
    folders) from big/ into the probe's folder, making them first."""
    def setup(d):
        bigdir = os.environ.get("GPTG_PROBE_BIG") or os.path.join(os.path.dirname(d), "big")
        for name in names:
            _ensure(h, bigdir, name)
            src, dst = os.path.join(bigdir, name), os.path.join(d, name)
            if os.path.isdir(src):
                os.makedirs(dst, exist_ok=True)
                for f in os.listdir(src):
                    if not f.startswith("."):
                        _link(os.path.join(src, f), os.path.join(dst, f))
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                _link(src, dst)
        os.makedirs(os.path.join(d, "o"), exist_ok=True)
    return setup


def names_a_limit(must_pass):
    """The memory probes' rule: exit 0, or a refusal whose one line names
    the memory limit; under a generous limit (must_pass), exit 0."""
    def check(d, code, out, err):
        if code == 0:
            return None
        if must_pass:
            return "refused under a generous limit: %s" % err.strip()[:300]
        low = err.lower()
        if not any(w in low for w in ("ulimit", "cgroup", "memory")):
            return "the refusal names no memory limit: %s" % err.strip()[:300]
    return check


SERVE_BIG = r"""
$G serve runs --addr 127.0.0.1:0 > o/sv.out 2> o/sv.err &
SP=$!
for i in $(seq 600); do P=$(grep -ho '127.0.0.1:[0-9]*' o/sv.out o/sv.err 2>/dev/null | head -1); [ -n "$P" ] && break; sleep 0.1; done
[ -n "$P" ] || { echo "serve did not start: $(head -c 300 o/sv.err)" >&2; exit 1; }
st(){ curl -s -m 300 -o o/body -w '%{http_code}' "$@"; }
A=$(st -X POST -H 'Content-Type: application/json' -d '{"id":"runs/big","prompt":"F","tokens":3}' http://$P/api/generate)
B=$(st "http://$P/api/attention?id=runs/bigtr&text=in+the+beginning")
C=$(st http://$P/api/runs)
echo "generate $A attention $B runs $C"
kill $SP 2>/dev/null; wait $SP
if [ "$C" != 200 ]; then echo "the server died: $(head -c 300 o/sv.err)" >&2; exit 1; fi
"""


def memory_probes(h):
    P = h.Probe
    ps = []

    def M(name, args, fixtures, limits, shell=None, timeout=600, must=()):
        """One probe per limit: ("v", KiB) for ulimit -v, ("cg", bytes)."""
        for kind, n in limits:
            lim = "ulimit -v %d KiB" % n if kind == "v" else "cgroup %d MiB" % (n // MiB)
            generous = (kind, n) in must
            ps.append(P("audit3 mem: %s under %s%s" % (name, lim, " (generous: must run)" if generous else ""),
                        args, (0,) if generous else (0, 1, 2), setup=big(h, *fixtures), allow=("o", "runs"),
                        timeout=timeout, max_mb=1 << 20, shell=shell, check=names_a_limit(generous),
                        ulimit_v=n if kind == "v" else None, cgroup=n if kind == "cg" else None))

    G8 = ("v", 8_000_000)
    M("sample of a 50M-parameter model", ["sample", "runs/big", "--tokens", "3", "--prompt", "F"], ["runs/big"],
      [("v", 2_200_000), ("v", 2_700_000), G8, ("cg", 700 * MiB), ("cg", 1000 * MiB), ("cg", 3 * GiB)], must=(G8, ("cg", 3 * GiB)))
    M("eval of a 50M-parameter model", ["eval", "runs/big/model.safetensors", "--data", "small.txt"], ["runs/big", "small.txt"],
      [("v", 2_500_000), ("cg", 600 * MiB), ("cg", 3 * GiB)], must=(("cg", 3 * GiB),))
    M("attention of a 50M-parameter model", ["attention", "runs/big", "--text", "First"], ["runs/big"],
      [("v", 2_700_000), ("cg", 900 * MiB), ("cg", 3 * GiB)], must=(("cg", 3 * GiB),))
    M("inspect of a 50M-parameter model", ["inspect", "runs/big"], ["runs/big"],
      [("v", 1_800_000), ("cg", 150 * MiB), ("cg", 500 * MiB)])
    M("translate with an 80M-parameter model", ["translate", "runs/bigtr", "--text", "in the beginning"], ["runs/bigtr"],
      [("v", 2_200_000), ("v", 2_700_000), ("cg", 700 * MiB), ("cg", 1000 * MiB), ("cg", 4 * GiB)], must=(("cg", 4 * GiB),))
    M("attention of an 80M-parameter translation model", ["attention", "runs/bigtr", "--text", "in the beginning"], ["runs/bigtr"],
      [("v", 2_700_000), ("cg", 1200 * MiB)])
    M("inspect of an 80M-parameter translation model", ["inspect", "runs/bigtr"], ["runs/bigtr"], [("cg", 300 * MiB)])
    M("import of a 600 MB nanoGPT checkpoint", ["import", "nanogpt", "bigckpt.pt", "--out", "o/x.safetensors"], ["bigckpt.pt"],
      [("v", 1_900_000), ("v", 2_400_000), ("cg", 300 * MiB), ("cg", 600 * MiB), ("cg", 3 * GiB)], must=(("cg", 3 * GiB),))
    M("train a 50M-parameter model", ["train", "big.toml", "--set", "train.out=o/t", "--quiet"], ["big.toml"],
      [("v", 2_500_000), ("cg", 1000 * MiB), ("cg", 4 * GiB)], must=(("cg", 4 * GiB),))
    M("train on a 200 MB corpus", ["train", "bc.toml", "--quiet"], ["bigcorpus.txt", "bc.toml"],
      [("v", 1_900_000), ("cg", 250 * MiB), ("cg", 3 * GiB)], must=(("cg", 3 * GiB),))
    M("train on 2M pairs", ["train", "bp.toml", "--quiet"], ["bigpairs.tsv", "bp.toml"],
      [("v", 1_850_000), ("cg", 200 * MiB)])
    M("data pairs of 2M pairs", ["data", "pairs", "bp.toml"], ["bigpairs.tsv", "bp.toml"], [("v", 1_850_000), ("cg", 200 * MiB)])
    M("plot of a 260 MB metrics.jsonl", ["plot", "runs/bigm", "--out", "o/l.png"], ["runs/bigm"],
      [("v", 2_000_000), ("cg", 400 * MiB), ("cg", 3 * GiB)], must=(("cg", 3 * GiB),))
    M("serve: generate with a 50M model and attention of an 80M one", [], ["runs/big", "runs/bigtr"],
      [("v", 2_700_000), ("cg", 900 * MiB), ("cg", 1500 * MiB)], shell=SERVE_BIG,
      must=(("v", 2_700_000), ("cg", 900 * MiB), ("cg", 1500 * MiB)))  # the server lives; a request may get 507
    M("graph of a 50M-parameter config", ["graph", "big.toml", "--dot", "o/g.dot"], ["big.toml"], [("cg", 150 * MiB), ("v", 1_800_000)])
    M("data toy of 10M sentences", ["data", "toy", "--out", "o/t.txt", "--sentences", "10000000"], [], [("cg", 80 * MiB)])
    M("ablate of two seeds", ["ablate", "c.toml", "--seeds", "2", "--out", "o/ab"], [], [("cg", 40 * MiB), ("v", 1_700_000)])
    M("sweep, run and collect locally", [], [], [("cg", 40 * MiB), ("v", 1_700_000)],
      shell="printf 'configs=[\"../c.toml\"]\\nseeds=2\\nout=\"sw\"\\n[set]\\n\"train.lr\"=[0.001,0.002]\\n' > o/s.toml && "
            "$G sweep o/s.toml --out o/sw >/dev/null && $G sweep run o/sw --jobs 2 >/dev/null && $G sweep collect o/sw >/dev/null")
    return ps


def probes(h):
    return memory_probes(h)
