"""Every command under a process memory limit (names start "audit3"), and
hangs, writes and wrong results on the same large inputs.

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


def _small_pairs_cfg(h):
    """probe.py's toy translation config over bigpairs.tsv: sentences of up
    to 12 words, two steps."""
    return (h.TR_TOML.replace('"toy.tsv"', '"bigpairs.tsv"').replace("max_source = 4", "max_source = 12")
            .replace("max_target = 4", "max_target = 12").replace("max_steps = 5", "max_steps = 2\neval_batches = 1")
            .replace('"runs/toy"', '"o/bp"'))


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


def _ensure(h, big, name, d):
    """Makes the large fixture name in big/ once (d: the probe's folder)."""
    p = os.path.join(big, name)
    if os.path.exists(p):
        return
    os.makedirs(big, exist_ok=True)
    if os.path.exists(p + ".tmp"):  # left by an interrupted run
        shutil.rmtree(p + ".tmp") if os.path.isdir(p + ".tmp") else os.remove(p + ".tmp")
    if name == "runs/big":
        _train(h, big, "big.toml", BIG_GPT)
    elif name in ("big.toml", "bc.toml", "bp.toml"):
        with open(p, "w") as f:
            f.write({"big.toml": BIG_GPT, "bc.toml": SMALL_CORPUS_CFG, "bp.toml": _small_pairs_cfg(h)}[name])
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
            shutil.copy(os.path.join(d, "runs/c", f), os.path.join(p + ".tmp", f))
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
            _ensure(h, bigdir, name, d)
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


# ------------------------------------------------ answers checked independently

# The reference: /work/shared/reference/gptref.py (../shared beside the
# repository in CI), PyTorch's implementation of the same model, loaded as a
# module; GPTG_REFERENCE names another copy. Without it or without PyTorch
# these probes are "not run".
REF_PY = r"""
import sys, json, importlib.util, os
os.environ["GPTREF_MALLOC"] = "glibc"
argv, sys.argv = sys.argv[1:], ["gptref.py", "--threads", "1"]
spec = importlib.util.spec_from_file_location("gptref", os.environ["GPTREF"])
g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
import torch, torch.nn.functional as F
def load(path):
    tensors, meta = g.load_safetensors(path)
    m = json.loads(meta["model"])
    sw = {k: m[k] for k in g.DEFAULTS if k in m}
    act = sw.get("activation"); sw["activation"] = "gelu"
    V, C = tensors["tok.weight"].shape; T = tensors["pos.weight"].shape[0]
    blocks = len({k.split(".")[1] for k in tensors if k.startswith("blocks.")})
    model = g.GPT(V, T, C, blocks, **sw).double()
    model.load_state_dict({k: v.to(torch.float64) for k, v in tensors.items()})
    if act in ("gelu_exact", "relu"):  # gptref knows gelu (tanh) only
        for mod in model.modules():
            if hasattr(mod, "act"):
                mod.act = F.gelu if act == "gelu_exact" else F.relu
    return model.eval(), json.loads(meta["vocab"])
what = argv[0]
model, vocab = load(argv[1])
if what == "eval":  # MODEL DATA SPLIT STRIDE BATCH: the seed's test loss
    text = open(argv[2], encoding="utf-8").read()
    _, _, (xte, yte) = g.split_data(text, model.context, int(argv[4]) or None, float(argv[3]))
    tl, n = g.test_loss(model, xte, yte, int(argv[5]))
    print("%.6f" % tl)
elif what == "greedy":  # MODEL PROMPT N: the likeliest next token, N times
    stoi = {c: i for i, c in enumerate(vocab)}
    ids = [stoi[c] for c in argv[2]]
    with torch.no_grad():
        for _ in range(int(argv[3])):
            x = torch.tensor([ids[-model.context:]])
            ids.append(int(model(x)[0, -1].argmax()))
    sys.stdout.write("".join(vocab[i] for i in ids))
"""


def reference(h):
    """A setup writing ref.py beside the probe; NotRun without the reference or PyTorch."""
    def setup(d):
        ref = os.environ.get("GPTG_REFERENCE") or os.path.join(os.path.dirname(h.REPO), "shared", "reference", "gptref.py")
        if not os.path.exists(ref):
            ref = "/work/shared/reference/gptref.py"
        if not os.path.exists(ref):
            raise h.NotRun("no gptref.py (GPTG_REFERENCE, or ../shared/reference beside the repository)")
        if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode:
            raise h.NotRun("the reference needs PyTorch (/usr/bin/python3 with torch)")
        with open(os.path.join(d, "ref.py"), "w") as f:
            f.write(REF_PY)
        with open(os.path.join(d, "ref.sh"), "w") as f:
            f.write("GPTREF=%s /usr/bin/python3 ref.py \"$@\"\n" % ref)
        os.makedirs(os.path.join(d, "o"), exist_ok=True)
    return setup


def close_numbers(tol):
    """stdout holds "A B": two numbers that must agree within tol."""
    def check(d, code, out, err):
        try:
            a, b = (float(x) for x in out.split())
        except ValueError:
            return "no two numbers in %r" % out[:300]
        if abs(a - b) > tol:
            return "gptg says %s, the reference %s" % (a, b)
    return check


def same_text(d, code, out, err):
    parts = out.split("\0")
    if len(parts) != 2 or not parts[0] or parts[0] != parts[1]:
        return "gptg and the reference differ: %r" % out[:400]


def answer_probes(h):
    P = h.Probe
    ps = []

    def A(name, *a, **k):
        ps.append(P("audit3: " + name, *a, **k))

    TRAIN = "$G train c.toml --set train.out=o/m --set train.max_steps=40 --set train.lr=0.01 --quiet %s >/dev/null && "
    EVAL = "echo $($G eval o/m --data tiny.txt --batch %d --split %s --stride %d | sed -n 's/^test loss //p') $(sh ref.sh eval o/m/model.safetensors tiny.txt %s %d %d)"
    variants = [
        ("post-norm residual blocks", "--set model.residual=true --set model.norm=post"),
        ("ReLU and four heads", "--set model.activation=relu --set model.heads=4"),
        ("no causal mask", "--set model.mask=false"),
        ("no Q/K/V and no output projection", "--set model.qkv=false --set model.out_proj=false"),
        ("three pre-norm blocks of ff_mult 2", "--set model.ff_mult=2 --set model.blocks=3 --set model.residual=true --set model.norm=pre"),
        ("exact GELU", "--set model.activation=gelu_exact"),
        ("float64", "--set model.dtype=float64"),
    ]
    for name, sets in variants:
        A("eval of a trained model with %s equals PyTorch's loss of the same file" % name, [], 0, setup=reference(h),
          shell=TRAIN % sets + EVAL % (4, "0.9", 4, "0.9", 4, 4), allow=("o", "ref.py", "ref.sh"), check=close_numbers(2e-5), timeout=300)
    for split, stride, batch in (("0.29", 4, 4), ("0.57", 1, 7), ("0.9", 3, 5), ("0.5", 8, 1)):
        A("eval --split %s --stride %d --batch %d equals PyTorch's loss over the same windows" % (split, stride, batch), [], 0,
          setup=reference(h), shell=TRAIN % "" + EVAL % (batch, split, stride, split, stride, batch),
          allow=("o", "ref.py", "ref.sh"), check=close_numbers(2e-5), timeout=300)
    A("the test loss training logged equals PyTorch's loss of the model it wrote", [], 0, setup=reference(h),
      shell=TRAIN % "" + "echo $(python3 -c \"import json; print([json.loads(l) for l in open('o/m/metrics.jsonl') if 'test_loss' in l][-1]['test_loss'])\") "
            "$(sh ref.sh eval o/m/model.safetensors tiny.txt 0.9 4 4)",
      allow=("o", "ref.py", "ref.sh"), check=close_numbers(2e-5), timeout=300)
    for prompt in ("First", "First Citizen:\\nBefore we proceed"):
        A("greedy sample (--temperature 0) from %r equals PyTorch's argmax continuation" % prompt, [], 0, setup=reference(h),
          shell=TRAIN % "" + "$G sample o/m --temperature 0 --tokens 30 --prompt \"$(printf '%s')\" | head -c -1 > o/a; "
                             "sh ref.sh greedy o/m/model.safetensors \"$(printf '%s')\" 30 > o/b; cat o/a; printf '\\0'; cat o/b" % (prompt, prompt),
          allow=("o", "ref.py", "ref.sh"), check=same_text, timeout=300)

    # BLEU recomputed from the pairs eval --show prints (sacreBLEU's 13a
    # tokens, lower-cased, corpus n-gram counts, brevity penalty).
    A("eval's BLEU of a translation run equals BLEU recomputed from the translations it shows", [], 0,
      setup=h.seq(h.write("toy5.tsv", _toy5()), h.write("toy5.toml", h.TR_TOML.replace("toy.tsv", "toy5.tsv").replace("max_source = 4", "max_source = 8")
                                                      .replace("max_target = 4", "max_target = 8").replace('"runs/toy"', '"o/t5"'))),
      shell="$G train toy5.toml --set train.max_steps=500 --set train.lr=0.01 --quiet >/dev/null && $G eval o/t5 --show 1000 > o/e && python3 -c \"$BLEU\" < o/e",
      env={"BLEU": BLEU_PY}, allow=("o",), stdout="SAME", timeout=300)
    A("inspect's parameter total equals the sum of the file's tensor sizes", [], 0,
      shell="$G inspect runs/c > o/i && python3 -c \"$SUM\"", env={"SUM": SUM_PY}, allow=("o",), stdout="SAME",
      setup=lambda d: os.makedirs(os.path.join(d, "o")))
    A("graph's parameter total of a config equals inspect's of the model trained from it", [], 0,
      shell="$G graph words.toml | grep -E '^total' > o/a && $G inspect runs/words | grep -E '^total' > o/b && cmp o/a o/b && echo SAME",
      allow=("o",), stdout="SAME", setup=lambda d: os.makedirs(os.path.join(d, "o")))
    A("data toy --sentences 20000: 20000 lines, every one of the grammar", [], 0,
      shell="$G data toy --out o/t.txt --sentences 20000 --seed 9 >/dev/null && python3 -c \"$GRAMMAR\" < o/t.txt",
      env={"GRAMMAR": GRAMMAR_PY}, allow=("o",), stdout="SAME 20000")
    A("ablate's mean ± sd equal the mean and sample sd of its runs' test losses", [], 0,
      shell="$G ablate c.toml --seeds 3 --out o/ab >/dev/null 2>&1 || exit 3; python3 -c \"$STATS\" o/ab/runs.csv o/ab/summary.csv",
      env={"STATS": STATS_PY}, allow=("o",), stdout="SAME", timeout=180)
    # Outputs over hard links: a second name of an input is the input.
    for cmd, out in ((["attention", "runs/c", "--text", "Fi", "--out", "hl.svg"], "hl.svg"),
                     (["plot", "runs/c", "--out", "hl.png"], "hl.png"),
                     (["graph", "c.toml", "--dot", "hl.dot"], "hl.dot"),
                     (["data", "toy", "--out", "hl.txt", "--sentences", "3"], "hl.txt"),
                     (["import", "nanogpt", "ckpt.pt", "--out", "hl.safetensors"], "hl.safetensors")):
        A("%s --out a hard link of the run's metrics.jsonl is refused, the metrics unharmed" % cmd[0], cmd, 2,
          setup=lambda d, out=out: os.link(os.path.join(d, "runs/c/metrics.jsonl"), os.path.join(d, out)))
    # Two writers of one output at once: the file is one of them, whole.
    for name, a, b in (("data toy --force", "$G data toy --out o/x --sentences 200000 --seed 1 --force", "$G data toy --out o/x --sentences 200000 --seed 2 --force"),
                       ("import --force", "$G import nanogpt ckpt.pt --out o/x --force", "$G import nanogpt ckpt.pt --out o/x --force"),
                       ("graph --dot --force", "$G graph c.toml --dot o/x --force", "$G graph words.toml --dot o/x --force")):
        A("two %s into one file at once: it ends as one of them, whole" % name, [], 0,
          shell="mkdir -p o; %s >/dev/null 2>&1 & %s >/dev/null 2>&1; wait; "
                "%s >/dev/null 2>&1; mv o/x o/one; %s >/dev/null 2>&1; mv o/x o/two; "
                "cmp -s o/x2 o/one 2>/dev/null; ls o/x >/dev/null && { cmp -s o/x o/one || cmp -s o/x o/two; } && echo WHOLE"
                % (a, b, a.replace("o/x", "o/x").replace("--force", "--force"), b) if False else
                "mkdir -p o; (%s >/dev/null 2>&1 & %s >/dev/null 2>&1; wait); cp o/x o/both; rm o/x; "
                "%s >/dev/null 2>&1; mv o/x o/one; %s >/dev/null 2>&1; mv o/x o/two; "
                "if cmp -s o/both o/one || cmp -s o/both o/two; then echo WHOLE; else echo TORN; fi" % (a, b, a, b),
          allow=("o",), stdout="WHOLE", timeout=120)
    # stdin a FIFO whose writer stays (a terminal nobody types into).
    OPEN = "mkfifo o/f && (sleep 30 > o/f 2>/dev/null &) && "
    A("translate --text does not read standard input (kept open, nothing written)", [], 0,
      shell=OPEN + "$G translate runs/toy --text a1 < o/f", timeout=20, allow=("o",), setup=lambda d: os.makedirs(os.path.join(d, "o")))
    A("sample --prompt-file /dev/stdin on a pipe kept open is refused, no hang", [], 2, "named pipe",
      shell=OPEN + "$G sample runs/c --prompt-file /dev/stdin --tokens 3 < o/f", timeout=20, allow=("o",), setup=lambda d: os.makedirs(os.path.join(d, "o")))
    A("data toy of 10M sentences into a pipe closed after one line ends at once (SIGPIPE or 0)", [], 0,
      shell="$G data toy --out - --sentences 10000000 | head -1 >/dev/null; echo ENDED ${PIPESTATUS[0]}", stdout="ENDED", timeout=20)
    A("data toy of 200k sentences into /dev/full: exit 1, one line", [], 1, "no space left",
      shell="$G data toy --out - --sentences 200000 > /dev/full")
    for k, v in (("train.batch", "8"), ("model.dropout", "0.2"), ("train.lr", "0.5"), ("train.grad_accum", "2"), ("data.sampling", "random")):
        A("resume --set %s=%s (not the run's length) is refused" % (k, v),
          ["train", "--resume", "runs/c", "--set", "train.max_steps=6", "--set", "%s=%s" % (k, v)], 2, "--resume changes only")
    A("resume after data.split was edited in the run's config.toml is refused", ["train", "--resume", "runs/c", "--set", "train.max_steps=6"], 2,
      "edited since the run started", setup=lambda d: h.rewrite(os.path.join(d, "runs/c/config.toml"), lambda t: t.replace("split = 0.9", "split = 0.5")),
      allow=("runs/c/config.toml",))
    return ps


def _toy5():
    import random
    r = random.Random(3)
    lines = []
    for _ in range(400):
        a = [r.randrange(9) for _ in range(r.randint(4, 7))]
        lines.append(" ".join("a%d" % x for x in a) + "\t" + " ".join("b%d" % x for x in reversed(a)))
    return "\n".join(lines) + "\n"


BLEU_PY = r"""
import sys, re, math, collections
t = sys.stdin.read()
refs = re.findall(r'^reference: (.*)$', t, re.M)
hyps = re.findall(r'^greedy:    ?(.*)$', t, re.M)
def tok(line):
    line = ' ' + line + ' '
    line = re.sub(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])', r' \1 ', line)
    line = re.sub(r'([^0-9])([\.,])', r'\1 \2 ', line)
    line = re.sub(r'([\.,])([^0-9])', r' \1 \2', line)
    line = re.sub(r'([0-9])(-)', r'\1 \2 ', line)
    return line.split()
m = [0] * 4; tot = [0] * 4; hl = rl = 0
for hy, rf in zip(hyps, refs):
    hy, rf = tok(hy.lower()), tok(rf.lower())
    hl += len(hy); rl += len(rf)
    for n in range(1, 5):
        hc = collections.Counter(tuple(hy[i:i + n]) for i in range(len(hy) - n + 1))
        rc = collections.Counter(tuple(rf[i:i + n]) for i in range(len(rf) - n + 1))
        m[n - 1] += sum(min(c, rc[g]) for g, c in hc.items()); tot[n - 1] += max(len(hy) - n + 1, 0)
bp = 1.0 if hl > rl else math.exp(1 - rl / hl)
bleu = bp * math.exp(sum(math.log(a / b) for a, b in zip(m, tot)) / 4) * 100 if min(m) > 0 else 0.0
got = re.search(r'BLEU = ([0-9.]+) ', t)
ok = hyps and len(hyps) == len(refs) and got and abs(float(got.group(1)) - round(bleu, 2)) < 0.006 and bleu > 1
print('SAME' if ok else 'DIFF %s vs %.2f over %d pairs' % (got and got.group(1), bleu, len(hyps)))
"""

SUM_PY = r"""
import json, struct, re
raw = open('runs/c/model.safetensors', 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
h = json.loads(raw[8:8 + n])
want = 0
for k, v in h.items():
    if k != '__metadata__':
        c = 1
        for x in v['shape']:
            c *= x
        want += c
got = int(re.search(r'^total\s+(\d+)', open('o/i').read(), re.M).group(1))
print('SAME' if got == want else 'DIFF %d vs %d' % (got, want))
"""

GRAMMAR_PY = r"""
import sys
D = {'the', 'a', 'every', 'this', 'my'}; A = {'big', 'small', 'red', 'quiet', 'happy', 'old', 'clever'}
S = {'cat', 'dog', 'bird', 'child', 'teacher', 'farmer'}; V = {'chases', 'sees', 'likes', 'finds', 'follows', 'carries'}
O = {'ball', 'mouse', 'book', 'tree', 'apple', 'hat'}
def phrase(w, i, nouns):
    if i >= len(w) or w[i] not in D: return -1
    i += 1
    if i < len(w) and w[i] in A: i += 1
    return i + 1 if i < len(w) and w[i] in nouns else -1
bad = n = 0
for line in sys.stdin:
    n += 1
    w = line.split()
    i = phrase(w, 0, S)
    ok = i > 0 and i < len(w) and w[i] in V
    j = phrase(w, i + 1, O) if ok else -1
    bad += not (ok and j == len(w) - 1 and w[-1] == '.')
print('SAME %d' % n if not bad else 'DIFF %d of %d lines' % (bad, n))
"""

STATS_PY = r"""
import csv, sys, statistics
runs = [float(r['test_loss']) for r in csv.DictReader(open(sys.argv[1]))]
row = next(csv.DictReader(open(sys.argv[2])))
keys = {k.lower(): k for k in row}
mean = next(float(row[k]) for l, k in keys.items() if 'test' in l and 'mean' in l)
sd = next(float(row[k]) for l, k in keys.items() if 'test' in l and 'sd' in l)
ok = len(runs) == 3 and abs(mean - statistics.mean(runs)) < 1.5e-4 and abs(sd - statistics.stdev(runs)) < 1.5e-4  # both tables round to 4 decimals
print('SAME' if ok else 'DIFF mean %s sd %s vs %s %s (%s; columns %s)' % (mean, sd, statistics.mean(runs), statistics.stdev(runs), runs, list(row)))
"""


def probes(h):
    return memory_probes(h) + answer_probes(h)
