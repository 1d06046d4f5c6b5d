"""Golden files made by Karpathy's nanoGPT itself (github.com/karpathy/nanoGPT), for gptg's tests.

    /usr/bin/python3 testdata/nanogpt/make.py --nanogpt PATH [--out testdata/nanogpt]

PATH is a checkout of nanoGPT (its model.py, train.py and data/shakespeare_char/prepare.py are
used as they are; nothing of it is copied here). It writes:

  golden/*.json   nanoGPT's GPT (model.py) in float64 with dropout 0: inputs, parameters, logits,
                  loss, every gradient, attention weights and a 4-step AdamW trajectory with the
                  optimizer configure_optimizers() builds (weight decay on the >= 2-dimensional
                  parameters only), in the layout and with the comparison rule of the reference's
                  golden files (../shared/README.md). Tensors carry gptg's names: c_attn is cut
                  into q, k, v. Cases: tie/bias combinations (see CASES).
  ckpt.pt, meta.pkl
                  a tiny model trained for 20 iterations by nanoGPT's own train.py on
                  testdata/tiny.txt (prepared by its own prepare.py), as train.py saves it;
  ckpt-compiled.pt
                  the same state_dict with the "_orig_mod." prefix of a torch.compile'd model and
                  without the attn.bias mask buffers (PyTorch >= 2 does not have them);
  import.json     what gptg must get from the imported model: nanoGPT's float32 logits on the
                  first test window and its test loss over gptg's test windows of tiny.txt
                  (split 0.9, stride context/2, whole batches of 4, mean of the batch means).

With --eval CKPT it writes nothing and prints the test loss of a nanoGPT checkpoint over gptg's
test windows of --corpus (what `gptg import nanogpt` + `gptg eval --batch 4` must print):

    /usr/bin/python3 testdata/nanogpt/make.py --nanogpt PATH --eval out/ckpt.pt \
        --meta data/shakespeare_char/meta.pkl --corpus ../shared/data/tinyshakespeare.txt

The learning rate of the golden trajectory follows gptg's (and the reference's) schedule,
lr_at below, not train.py's get_lr: what is checked is model.py and the optimizer.
"""
import argparse, json, math, os, pickle, shutil, subprocess, sys, tempfile

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name, seed, tie, bias. nanoGPT always ties lm_head to wte; the untied case unties it after
# construction (lm_head never has a bias in nanoGPT, and gptg's untied output layer has one when
# bias is on, so the untied case is bias=False).
CASES = [("tied_bias", 11, True, True), ("tied_nobias", 12, True, False), ("untied_nobias", 13, False, False)]
SIZES = dict(vocab=11, context=6, embedding=12, blocks=2, heads=2, batch=3)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def gptg_spec(cfg, tie):
    return dict(vocab=cfg.vocab_size, context=cfg.block_size, embedding=cfg.n_embd, blocks=cfg.n_layer,
                heads=cfg.n_head, qkv=True, mask=True, out_proj=True, residual=True, norm="pre",
                activation="gelu_exact", ff_mult=4, tie_embeddings=tie, bias=cfg.bias, final_norm=True,
                init="gpt2", dropout=cfg.dropout)


def gptg_tensors(named, C):
    """nanoGPT's names -> gptg's, c_attn cut into q, k, v; lm_head dropped when it is wte."""
    out = {}
    for k, v in named.items():
        k = k.replace("_orig_mod.", "")
        if k.endswith("attn.bias") and "c_attn" not in k:
            continue  # the causal-mask buffer
        if k == "lm_head.weight":
            if named.get("transformer.wte.weight") is not None and v.data_ptr() == named["transformer.wte.weight"].data_ptr():
                continue
            out["out.weight"] = v
            continue
        k = k.replace("transformer.wte", "tok").replace("transformer.wpe", "pos").replace("transformer.ln_f", "final_norm")
        k = k.replace("transformer.h.", "blocks.").replace(".ln_1", ".norm1").replace(".ln_2", ".norm2")
        k = k.replace(".attn.c_proj", ".att.o").replace(".mlp.c_fc", ".ff.up").replace(".mlp.c_proj", ".ff.down")
        if ".attn.c_attn." in k:
            for j, part in enumerate("qkv"):
                out[k.replace("attn.c_attn", "att." + part)] = v[j * C:(j + 1) * C]
            continue
        out[k] = v
    return out


def lr_at(step, lr, total, warmup, min_lr):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * p))


def attention_weights(model, x):
    """Each block's softmax weights, (B, heads, T, T) flattened, as model.py's non-flash path has them."""
    out, h = [], model.transformer.wte(x) + model.transformer.wpe(torch.arange(x.shape[1]))
    for blk in model.transformer.h:
        a = blk.attn
        B, T, C = h.shape
        q, k, _ = a.c_attn(blk.ln_1(h)).split(C, dim=2)
        q = q.view(B, T, a.n_head, C // a.n_head).transpose(1, 2)
        k = k.view(B, T, a.n_head, C // a.n_head).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        s = s.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
        out.append(flat(torch.softmax(s, dim=-1)))
        h = blk(h)
    return out


def golden_case(nanogpt, name, seed, tie, bias, steps=4):
    from model import GPT, GPTConfig
    S = SIZES
    torch.manual_seed(seed)
    cfg = GPTConfig(block_size=S["context"], vocab_size=S["vocab"], n_layer=S["blocks"], n_head=S["heads"],
                    n_embd=S["embedding"], dropout=0.0, bias=bias)
    model = GPT(cfg).double()
    if not tie:
        model.lm_head.weight = torch.nn.Parameter(model.transformer.wte.weight.detach().clone())
    with torch.no_grad():  # spread the values so every term matters, as the reference's golden files do
        for p in model.parameters():
            p.uniform_(-0.5, 0.5)
    x = torch.randint(0, S["vocab"], (S["batch"], S["context"]))
    y = torch.randint(0, S["vocab"], (S["batch"], S["context"]))
    C = S["embedding"]
    params = {k: dict(shape=list(v.shape), data=flat(v))
              for k, v in gptg_tensors(dict(model.named_parameters()), C).items()}
    logits, loss = model(x, y)
    loss.backward()
    named = {k: p.grad for k, p in model.named_parameters()}
    if tie:
        named["lm_head.weight"] = named["transformer.wte.weight"]  # one parameter, dropped by gptg_tensors
    grads = {k: flat(g) for k, g in gptg_tensors(named, C).items()}
    total = math.sqrt(sum(v * v for g in grads.values() for v in g))
    zero = sorted(k for k, g in grads.items() if math.sqrt(sum(v * v for v in g)) < 1e-12 * total)
    for k in zero:
        grads[k] = [0.0] * len(grads[k])
    with torch.no_grad():
        att = attention_weights(model, x)
    model.zero_grad(set_to_none=True)
    sched = dict(lr=0.01, total=steps, warmup=2, min_lr=0.001, weight_decay=0.1, clip=1.0, decay="matrices")
    opt = model.configure_optimizers(sched["weight_decay"], sched["lr"], (0.9, 0.999), "cpu")
    traj = []
    for s in range(steps):
        lr = lr_at(s, sched["lr"], sched["total"], sched["warmup"], sched["min_lr"])
        for g in opt.param_groups:
            g["lr"] = lr
        _, l = model(x, y)
        opt.zero_grad(set_to_none=True)
        l.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), sched["clip"])
        opt.step()
        traj.append(dict(step=s, lr=lr, loss=l.item(), grad_norm=norm.item()))
    after = {k: flat(v) for k, v in gptg_tensors(dict(model.named_parameters()), C).items()}
    return dict(name=name, dtype="float64", source="nanoGPT model.py " + nanogpt_commit(nanogpt),
                model=gptg_spec(cfg, tie), batch=S["batch"], inputs=x.tolist(), targets=y.tolist(),
                params=params, logits=dict(shape=[S["batch"] * S["context"], S["vocab"]], data=flat(logits)),
                loss=loss.item(), grads=grads, zero_grads=zero,
                compare=("float64: relative error ||a-b||/||b|| <= 1e-9 per tensor; for the tensors in "
                         "zero_grads (zero in exact arithmetic) ||a|| <= 1e-9 * ||all grads|| instead. "
                         "float32: ||a-b|| / max(||b||, 1e-3 * ||all grads||) <= 1e-4 per tensor "
                         "(a gradient far smaller than the whole is mostly round-off in float32)"),
                attention_weights=att,
                optimizer=dict(schedule=sched, betas=[0.9, 0.999], eps=1e-8, trajectory=traj,
                               params_after=after))


def nanogpt_commit(path):
    try:
        return subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return "(unknown commit)"


def gptg_windows(ids, context, split=0.9):
    """gptg's test windows: the last 1-split of the tokens, windows of context+1 at stride context/2."""
    ids = torch.tensor(ids)
    test = ids[int(len(ids) * split):]
    stride = context // 2
    n = max(0, (len(test) - context - 1 + stride - 1) // stride)
    idx = (torch.arange(n) * stride)[:, None] + torch.arange(context + 1)[None, :]
    w = test[idx]
    return w[:, :-1].contiguous(), w[:, 1:].contiguous()


def make_checkpoint(nanogpt, out, corpus):
    """Run nanoGPT's prepare.py and train.py in a scratch copy of the checkout."""
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "nanogpt")
        shutil.copytree(nanogpt, work, ignore=shutil.ignore_patterns(".git"))
        data = os.path.join(work, "data", "shakespeare_char")
        shutil.copy(corpus, os.path.join(data, "input.txt"))
        subprocess.run([sys.executable, "prepare.py"], cwd=data, check=True, stdout=subprocess.DEVNULL)
        run = os.path.join(tmp, "out")
        subprocess.run([sys.executable, "train.py", "config/train_shakespeare_char.py", "--device=cpu",
                        "--compile=False", "--dtype=float32", "--eval_iters=2", "--log_interval=10",
                        "--block_size=16", "--batch_size=4", "--n_layer=2", "--n_head=2", "--n_embd=16",
                        "--max_iters=20", "--lr_decay_iters=20", "--warmup_iters=2", "--eval_interval=10",
                        "--dropout=0.0", "--bias=True", f"--out_dir={run}"],
                       cwd=work, check=True, stdout=subprocess.DEVNULL)
        shutil.copy(os.path.join(run, "ckpt.pt"), os.path.join(out, "ckpt.pt"))
        shutil.copy(os.path.join(data, "meta.pkl"), os.path.join(out, "meta.pkl"))

    ck = torch.load(os.path.join(out, "ckpt.pt"), map_location="cpu")
    sd = ck["model"]
    # A torch.compile'd model's keys, and no mask buffers (PyTorch >= 2 uses flash attention).
    compiled = dict(ck)
    compiled["model"] = {"_orig_mod." + k: v for k, v in sd.items() if not k.endswith(".attn.bias")}
    torch.save(compiled, os.path.join(out, "ckpt-compiled.pt"))

    from model import GPT, GPTConfig
    model = GPT(GPTConfig(**ck["model_args"]))
    model.load_state_dict(sd)
    model.eval()
    meta = pickle.load(open(os.path.join(out, "meta.pkl"), "rb"))
    text = open(corpus, encoding="utf-8").read()
    ids = [meta["stoi"][c] for c in text]
    T = ck["model_args"]["block_size"]
    xte, yte = gptg_windows(ids, T)
    batch, tot, n = 4, 0.0, 0
    with torch.no_grad():
        for i in range(0, len(xte) - batch + 1, batch):
            _, l = model(xte[i:i + batch], yte[i:i + batch])
            tot, n = tot + l.item(), n + 1
        logits, _ = model(xte[:1], yte[:1])  # with targets nanoGPT returns every position's logits
    json.dump(dict(source="nanoGPT train.py " + nanogpt_commit(nanogpt), corpus="testdata/tiny.txt",
                   model_args=ck["model_args"], iter_num=ck["iter_num"],
                   window=xte[0].tolist(), logits=dict(shape=[T, len(meta["itos"])], data=flat(logits)),
                   test_loss=tot / n, test_batches=n, batch=batch),
              open(os.path.join(out, "import.json"), "w"))
    print("checkpoint: iter", ck["iter_num"], "test loss", tot / n, "over", n, "batches")


def test_loss(ckpt_path, meta_path, corpus, batch=4):
    """A checkpoint's mean batch loss over gptg's test windows of corpus (whole batches of batch)."""
    from model import GPT, GPTConfig
    ck = torch.load(ckpt_path, map_location="cpu")
    sd = {k.replace("_orig_mod.", ""): v for k, v in ck["model"].items()}
    model = GPT(GPTConfig(**ck["model_args"]))
    model.load_state_dict(sd, strict=False)  # PyTorch >= 2 checkpoints lack the attn.bias buffers
    model.eval()
    meta = pickle.load(open(meta_path, "rb"))
    ids = [meta["stoi"][c] for c in open(corpus, encoding="utf-8").read()]
    xte, yte = gptg_windows(ids, ck["model_args"]["block_size"])
    tot, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(xte) - batch + 1, batch):
            _, l = model(xte[i:i + batch], yte[i:i + batch])
            tot, n = tot + l.item(), n + 1
    return tot / n, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nanogpt", required=True, help="a checkout of github.com/karpathy/nanoGPT")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--corpus", default=os.path.join(ROOT, "testdata", "tiny.txt"))
    ap.add_argument("--eval", metavar="CKPT", help="only print CKPT's test loss over gptg's windows of --corpus")
    ap.add_argument("--meta", help="meta.pkl for --eval")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.nanogpt))
    torch.set_num_threads(1)
    if a.eval:
        loss, n = test_loss(a.eval, a.meta, a.corpus)
        print(json.dumps(dict(test_loss=round(loss, 6), test_batches=n)))
        return
    os.makedirs(os.path.join(a.out, "golden"), exist_ok=True)
    for name, seed, tie, bias in CASES:
        case = golden_case(a.nanogpt, name, seed, tie, bias)
        with open(os.path.join(a.out, "golden", name + ".json"), "w") as f:
            json.dump(case, f)
        print(name, case["loss"])
    make_checkpoint(os.path.abspath(a.nanogpt), a.out, a.corpus)


if __name__ == "__main__":
    main()
