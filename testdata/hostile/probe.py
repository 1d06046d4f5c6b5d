#!/usr/bin/env python3
"""Hostile-input probes of the gptg binary.

    python3 testdata/hostile/probe.py GPTG_BINARY [--only SUBSTRING] [--list] [--keep] [--sandbox CMD]

  --only TEXT    run only the probes whose name contains TEXT
  --list         print the probes (name, arguments, expected exit) and stop
  --keep         keep the work folder (fixtures and the last probe's copy)
  --sandbox CMD  run every gptg command (fixtures included) inside CMD, a
                 command line in which {dir} stands for the probe's folder,
                 e.g. --sandbox '/work/sandbox {dir}' or --sandbox 'bwrap
                 --ro-bind / / --tmpfs /tmp --dev /dev --proc /proc --bind
                 {dir} {dir} --chdir {dir}'. For the memory probes under a
                 cgroup limit: this script must then run where it can make
                 cgroups (root, a writable cgroup fs), outside the sandbox,
                 and each gptg command still runs inside it. The binary must
                 lie outside /tmp (a sandbox's /tmp is its own). Only the
                 memory probes run then (the others' setups run gptg
                 themselves): run those with this script inside a sandbox.

The core probes are in this file; testdata/hostile/probes_*.py add more by
surface (cli, modelfiles, runs, serve, memory limits, crosschecks), each
with probes(h) returning a list of h.Probe (h is this module) and
optionally serve_probes(h, fixtures, work) returning [(name, why-or-None)];
every such file is loaded.

Each probe runs the binary in a fresh copy of a fixture folder (a tiny
language-model run, a word-level run, a translation run, nanoGPT files) and
checks what every bad input must get (BRIEF: "one clear line naming the
problem and a non-zero exit, never a panic trace; no partial or corrupted
file is left behind"):

  - the expected exit code (2 for bad usage, config, flags or a model of the
    wrong kind; 1 for failures at run time and damaged files);
  - when it fails: exactly one line on stderr, starting "gptg ", no panic
    or runtime trace, and the expected fragment of the message;
  - no hang (a time limit per probe) and a bounded peak RSS;
  - no write outside what the probe names: every file of the probe folder
    is snapshotted before and compared after, and only the paths the probe
    allows may appear or change.

It prints one line per probe (ok / WRONG: why) and the totals. It needs only
python3; the fixtures are trained with the binary itself (seconds).

Memory probes run gptg under a process limit: ulimit -v (works anywhere), or
a cgroup memory limit (v1 memory.limit_in_bytes or v2 memory.max of a child
cgroup this script makes; the kernel's OOM kill is a finding). Where no
cgroup can be made (not root, a read-only cgroup fs, e.g. inside bwrap), the
cgroup probes are reported "not run", never "ok". Their large fixtures (a
50M-parameter model, an 80M-parameter translation model, ...) are made on
first use, once per run of this script.

Run it in a throwaway machine or container: against a binary from before
round five, four probes write where the bugs they test lead — into / (a
train.out, ablate --out and data pairs --out that are links to /, or / itself).
Round five's binary refuses all four. With bubblewrap, everything outside a
private /tmp read-only (a "read-only file system" in a probe's output is then
a write outside the probe's folder):

    bwrap --ro-bind / / --tmpfs /tmp --dev /dev --proc /proc --unshare-pid \
        --die-with-parent python3 testdata/hostile/probe.py /path/to/gptg
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import urllib.error
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = None

# ---------------------------------------------------------------- fixtures

TINY = os.path.join(REPO, "testdata", "tiny.txt")

GPT_TOML = """[data]
path = "tiny.txt"
[model]
context = 8
embedding = 8
blocks = 1
heads = 2
[train]
batch = 4
max_steps = 3
out = "runs/c"
"""

WORD_TXT = " ".join(["the cat sees the dog . the dog sees a cat ."] * 80) + "\n"
WORD_TOML = """[data]
path = "words.txt"
tokenizer = "word"
[model]
context = 8
embedding = 8
blocks = 1
heads = 2
[train]
batch = 4
max_steps = 3
out = "runs/words"
"""


def toy_tsv():
    lines = []
    for i in range(200):
        lines.append("a%d a%d a%d\tb%d b%d b%d" % (i % 7, (i // 7) % 7, i % 5, i % 5, (i // 7) % 7, i % 7))
    return "\n".join(lines) + "\n"


TR_TOML = """[data]
format = "pairs"
path = "toy.tsv"
max_source = 4
max_target = 4

[model]
arch = "encoder-decoder"
embedding = 8
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 16
norm = "pre"
positions = "learned"

[train]
batch = 8
max_steps = 5
out = "runs/toy"
"""


def make_fixtures(root):
    os.makedirs(root, exist_ok=True)
    shutil.copy(TINY, os.path.join(root, "tiny.txt"))
    files = {"c.toml": GPT_TOML, "words.txt": WORD_TXT, "words.toml": WORD_TOML,
             "toy.tsv": toy_tsv(), "toy.toml": TR_TOML}
    for name, text in files.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    for cfg in ("c.toml", "words.toml", "toy.toml"):
        r = run_bin(["train", cfg, "--quiet"], root, timeout=300)
        if r.returncode != 0:
            sys.exit("fixture %s: %s" % (cfg, r.stderr))
    for name in ("ckpt.pt", "meta.pkl"):
        shutil.copy(os.path.join(REPO, "testdata", "nanogpt", name), os.path.join(root, name))


# ------------------------------------------------------- safetensors tools

def st_read(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return header, raw[8 + n:]


def st_write(path, header, data):
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def st_edit(src, dst, fn):
    """Rewrites model file src as dst after fn(header, data) -> (header, data)."""
    def setup(d):
        header, data = st_read(os.path.join(d, src))
        header, data = fn(header, data)
        st_write(os.path.join(d, dst), header, data)
    return setup


def meta_edit(src, dst, key, fn):
    """A model file whose metadata key is replaced by fn(old value)."""
    def edit(header, data):
        header["__metadata__"][key] = fn(header["__metadata__"].get(key))
        return header, data
    return st_edit(src, dst, edit)


def vocab_edit(src, dst, key, fn):
    """A model file whose JSON word list under key is replaced by fn(list)."""
    return meta_edit(src, dst, key, lambda v: json.dumps(fn(json.loads(v)), ensure_ascii=False))


def raw_meta_edit(src, dst, fn):
    """A model file whose raw header bytes are replaced by fn(bytes)."""
    def setup(d):
        with open(os.path.join(d, src), "rb") as f:
            raw = f.read()
        n = struct.unpack("<Q", raw[:8])[0]
        h = fn(raw[8:8 + n])
        with open(os.path.join(d, dst), "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + raw[8 + n:])
    return setup


def write(name, text, mode="w"):
    def setup(d):
        p = os.path.join(d, name)
        os.makedirs(os.path.dirname(p) or d, exist_ok=True)
        with open(p, mode) as f:
            f.write(text)
    return setup


def rewrite(path, fn):
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(fn(text))


def pkl_meta(fn):
    """meta.pkl replaced by fn(its dict)."""
    import pickle

    def setup(d):
        p = os.path.join(d, "meta.pkl")
        with open(p, "rb") as f:
            m = pickle.load(f)
        with open(p, "wb") as f:
            f.write(pickle.dumps(fn(m), protocol=2))
    return setup


def seq(*fns):
    def setup(d):
        for f in fns:
            f(d)
    return setup


# ------------------------------------------------------------- the runner

class Probe:
    def __init__(self, name, args, code, msg=None, setup=None, allow=(), timeout=60, max_mb=1500,
                 stdin=None, check=None, stdout=None, env=None, during=None, shell=None,
                 ulimit_v=None, cgroup=None):
        # shell: a bash script run instead of the binary with args, $G the
        # binary (for ulimits, closed or broken pipes, a removed folder).
        # ulimit_v: KiB of address space (ulimit -v) the command runs under;
        # cgroup: bytes of a cgroup memory limit it runs under (see above).
        self.name, self.args, self.code, self.msg, self.shell = name, args, code, msg, shell
        self.setup, self.allow, self.timeout, self.max_mb = setup, allow, timeout, max_mb
        self.stdin, self.check, self.stdout, self.env, self.during = stdin, check, stdout, env, during
        self.ulimit_v, self.cgroup = ulimit_v, cgroup


SANDBOX = None  # --sandbox's command line, {dir} the probe's folder
RSS_FILE = ".probe-rss"  # /usr/bin/time's figure (in the probe's folder under --sandbox)


class NotRun(Exception):
    """A probe that cannot run here (no cgroup can be made, ...): reported
    as not run, neither ok nor wrong."""


def sandboxed(cmd, d):
    """cmd inside --sandbox's command for folder d (cmd as it is without)."""
    if not SANDBOX:
        return cmd
    import shlex
    return [a.replace("{dir}", d) for a in shlex.split(SANDBOX)] + cmd


def run_bin(args, cwd, timeout=600):
    """Runs the binary with args in cwd (inside --sandbox's command, if given)."""
    return subprocess.run(sandboxed([BIN] + args, cwd), cwd=cwd, capture_output=True, text=True, timeout=timeout)


class MemoryCgroup:
    """A child memory cgroup of this process's own, limited to limit bytes
    (cgroup v1's memory controller, or v2 with memory enabled); NotRun
    where none can be made."""

    def __init__(self, limit):
        with open("/proc/self/cgroup") as f:
            lines = [l.rstrip("\n").split(":", 2) for l in f]
        v1 = [l[2] for l in lines if "memory" in l[1].split(",")]
        v2 = [l[2] for l in lines if l[0] == "0" and l[1] == ""]
        name = "gptg-probe-%d-%d" % (os.getpid(), time.monotonic_ns())
        self.dir = None
        try:
            if v1 and os.path.isdir("/sys/fs/cgroup/memory"):
                self.v2, self.dir = False, os.path.join("/sys/fs/cgroup/memory" + v1[0], name)
                os.mkdir(self.dir)
                with open(os.path.join(self.dir, "memory.limit_in_bytes"), "w") as f:
                    f.write(str(limit))
                try:  # no swap either, where swap accounting is on
                    with open(os.path.join(self.dir, "memory.memsw.limit_in_bytes"), "w") as f:
                        f.write(str(limit))
                except OSError:
                    pass
            elif v2:
                parent = "/sys/fs/cgroup" + v2[0]
                with open(os.path.join(parent, "cgroup.subtree_control")) as f:
                    if "memory" not in f.read().split():
                        raise NotRun("the cgroup %s does not hand the memory controller to its children" % parent)
                self.v2, self.dir = True, os.path.join(parent, name)
                os.mkdir(self.dir)
                for k in ("memory.max", "memory.swap.max"):
                    try:
                        with open(os.path.join(self.dir, k), "w") as f:
                            f.write(str(limit) if k == "memory.max" else "0")
                    except OSError:
                        if k == "memory.max":
                            raise
            else:
                raise NotRun("no memory cgroup controller")
        except OSError as e:
            self.close()
            raise NotRun("cannot make a memory cgroup here (%s)" % e.strerror)

    def join(self):
        """For preexec_fn: moves the calling (child) process into the cgroup."""
        with open(os.path.join(self.dir, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def oom_kills(self):
        path = os.path.join(self.dir, "memory.events" if self.v2 else "memory.oom_control")
        try:
            with open(path) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == "oom_kill":
                        return int(v)
        except OSError:
            pass
        return 0

    def close(self):
        if self.dir:
            for _ in range(50):
                try:
                    os.rmdir(self.dir)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
            self.dir = None


def snapshot(d):
    snap = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, d)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            if os.path.isdir(p) and not os.path.islink(p):
                snap[rel] = ("dir",)
                continue
            h = None
            if os.path.isfile(p) and not os.path.islink(p) and st.st_size < 50 << 20:
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
            snap[rel] = (st.st_mode, st.st_size, h, os.readlink(p) if os.path.islink(p) else None)
    return snap


def allowed(rel, allow):
    for a in allow:
        if rel == a or rel.startswith(a.rstrip("/") + "/"):
            return True
    return False


def unmount_under(d):
    with open("/proc/mounts") as f:
        mounts = [l.split()[1] for l in f]
    for m in sorted(mounts, reverse=True):
        if m.startswith(os.path.abspath(d) + "/"):
            subprocess.run(["umount", m])


def run_probe(p, fixtures, work):
    if SANDBOX and not (p.ulimit_v or p.cgroup):
        raise NotRun("with --sandbox only the memory probes run (the others' setups run gptg themselves): run the others with this script inside a sandbox")
    if p.cgroup:
        MemoryCgroup(p.cgroup).close()  # NotRun before any setup where no cgroup can be made
    d = os.path.join(work, "p")
    if os.path.exists(d):
        unmount_under(d)
        subprocess.run(["chmod", "-R", "u+rwx", d])
        shutil.rmtree(d)
    shutil.copytree(fixtures, d, symlinks=True)
    if p.setup:
        p.setup(d)
    before = snapshot(d)
    env = dict(os.environ, HOME=d, TMPDIR=d)
    env.pop("GPTG_MAX_MEMORY", None)
    if p.env:
        env.update(p.env)
    args = p.args(d) if callable(p.args) else p.args
    # The peak RSS comes from /usr/bin/time, the gptg process's own parent:
    # a child that Python starts by vfork counts Python's pages as its own
    # until it execs, so wait4's figure would be Python's.
    # Under --sandbox it runs inside the sandbox: bwrap's own rusage does
    # not count the processes of its pid namespace (/usr/bin/time outside
    # saw 3 MB for a 700 MB gptg), and only the probe's folder is writable
    # there, so the figure goes to a file in it, left out of the snapshot.
    rss_file = os.path.join(d if SANDBOX else work, RSS_FILE)
    if os.path.exists(rss_file):
        os.remove(rss_file)
    wrap = ["/usr/bin/time", "-q", "-f", "%M", "-o", rss_file] if os.path.exists("/usr/bin/time") and not p.during else []
    env["G"] = BIN
    cmd = ["bash", "-c", p.shell] if p.shell else [BIN] + args
    if p.ulimit_v:
        cmd = ["bash", "-c", 'ulimit -v %d && exec "$@"' % p.ulimit_v, "ulimit"] + cmd
    cg = MemoryCgroup(p.cgroup) if p.cgroup else None
    try:
        proc = subprocess.Popen(sandboxed(wrap + cmd, d) if SANDBOX else wrap + cmd, cwd=d, stdin=subprocess.PIPE if p.stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
                                preexec_fn=cg.join if cg else None)
    except BaseException:
        if cg:
            cg.close()
        raise
    bufs = {}

    def drain(name, f):
        bufs[name] = f.read()
    readers = [threading.Thread(target=drain, args=(n, f)) for n, f in (("out", proc.stdout), ("err", proc.stderr))]
    for t in readers:
        t.start()
    if p.stdin is not None:
        try:
            proc.stdin.write(p.stdin.encode() if isinstance(p.stdin, str) else p.stdin)
            proc.stdin.close()
        except BrokenPipeError:
            pass
    deadline = time.time() + p.timeout
    if p.during:
        p.during(d, proc)
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.time() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            if cg:
                cg.close()
            return "hang: still running after %d s" % p.timeout
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join()
    out, err = bufs["out"], bufs["err"]
    rss_mb = ru.ru_maxrss / 1024
    if wrap:
        try:
            with open(rss_file) as f:
                rss_mb = int(f.read().split()[-1]) / 1024
        except (OSError, ValueError, IndexError):
            pass
        if SANDBOX and os.path.exists(rss_file):
            os.remove(rss_file)
    code = proc.returncode
    err = err.decode("utf-8", "replace")
    out_s = out.decode("utf-8", "replace")
    problems = []
    if cg:
        if cg.oom_kills():
            problems.append("the kernel's OOM killer killed it (cgroup limit %d bytes; exit %d)" % (p.cgroup, code))
        cg.close()
    if rss_mb > p.max_mb:
        problems.append("peak RSS %.0f MB, over the bound of %d MB" % (rss_mb, p.max_mb))
    if "panic" in err or "goroutine " in err or "fatal error" in err:
        problems.append("a trace on stderr: " + err[:300].replace("\n", " | "))
    want = (0, 1, 130) if p.code is None else p.code if isinstance(p.code, tuple) else (p.code,)
    if code not in want and not (p.code is None and code < 0):
        problems.append("exit %d, want %s (stderr: %s)" % (code, p.code, err.strip()[:300].replace("\n", " | ")))
    if code > 0:
        lines = err.rstrip("\n").split("\n")
        if len(lines) != 1 or not err.startswith("gptg"):
            problems.append("stderr is %d lines, want one 'gptg …' line: %s" % (len(lines), err[:300].replace("\n", " | ")))
    if p.msg and p.msg not in err:
        problems.append("stderr lacks %r: %s" % (p.msg, err.strip()[:300]))
    if p.stdout is not None and p.stdout not in out_s:
        problems.append("stdout lacks %r: %s" % (p.stdout, out_s[:200]))
    after = snapshot(d)
    for rel in sorted(set(before) | set(after)):
        if rel.endswith(".gptg.lock") and rel in before and rel in after:
            continue  # the lock records its holder: the lock's own write
        if before.get(rel) != after.get(rel) and not allowed(rel, p.allow):
            what = "appeared" if rel not in before else ("vanished" if rel not in after else "changed")
            problems.append("%s %s" % (rel, what))
    if p.check:
        c = p.check(d, code, out_s, err)
        if c:
            problems.append(c)
    return "; ".join(problems) or None


# ------------------------------------------------------------- the probes

GPT = "runs/c"
GPTM = "runs/c/model.safetensors"
WRD = "runs/words"
TR = "runs/toy"
TRM = "runs/toy/model.safetensors"


def mkfifo(name):
    def setup(d):
        os.mkfifo(os.path.join(d, name))
    return setup


def symlink(target, name):
    def setup(d):
        p = os.path.join(d, name)
        os.makedirs(os.path.dirname(p) or d, exist_ok=True)
        os.symlink(target, p)
    return setup


def mkdir(name):
    def setup(d):
        os.makedirs(os.path.join(d, name), exist_ok=True)
    return setup


def unchanged(*paths):
    """A check that paths still exist (the probe's snapshot catches edits)."""
    def check(d, code, out, err):
        for p in paths:
            if not os.path.lexists(os.path.join(d, p)):
                return "%s is gone" % p
    return check


def exit_code_probes():
    """Every command given the wrong kind of thing, a missing path or a bad
    flag value: exit 2 and one line (task 1a)."""
    ps = []
    model_cmds = {  # command → extra args; what it needs
        "sample": (["--tokens", "3"], "gpt"),
        "attention": (["--text", "Fi"], "any"),
        "inspect": ([], "any"),
        "translate": (["--text", "a1"], "tr"),
    }
    things = {
        "a config": "c.toml",
        "a corpus": "tiny.txt",
        "a pairs corpus": "toy.tsv",
        "a folder without a model": "runs",
        "a missing path": "nope",
        "/dev/null": "/dev/null",
        "a nanoGPT checkpoint": "ckpt.pt",
    }
    for cmd, (extra, needs) in model_cmds.items():
        for what, arg in things.items():
            ps.append(Probe("exit codes: %s given %s" % (cmd, what), [cmd, arg] + extra, 2))
        if needs == "gpt":
            ps.append(Probe("exit codes: %s given a translation run" % cmd, [cmd, TR] + extra, 2, "translation model"))
        if needs == "tr":
            ps.append(Probe("exit codes: %s given a language-model run" % cmd, [cmd, GPT] + extra, 2, "language model"))
            ps.append(Probe("exit codes: %s given a word-level run" % cmd, [cmd, WRD] + extra, 2, "language model"))
    for what, arg in things.items():
        if what == "a config":
            continue
        ps.append(Probe("exit codes: eval given %s" % what, ["eval", arg, "--data", "tiny.txt"], 2))
        ps.append(Probe("exit codes: train --init %s" % what, ["train", "c.toml", "--set", "train.out=runs/new", "--init", arg], 2))
    ps += [
        Probe("exit codes: train --init a translation run into a language model", ["train", "c.toml", "--set", "train.out=runs/new", "--init", TR], 2, "translation model"),
        Probe("exit codes: train --init a language model into a translation config", ["train", "toy.toml", "--set", "train.out=runs/new", "--init", GPT], 2),
        Probe("exit codes: train --force --init a translation run keeps the old run", ["train", "c.toml", "--force", "--init", TR], 2, "translation model",
              check=unchanged("runs/c/model.safetensors", "runs/c/metrics.jsonl")),
        Probe("exit codes: train --force --init another model's run keeps the old run", ["train", "c.toml", "--force", "--init", WRD], 2,
              check=unchanged("runs/c/model.safetensors", "runs/c/metrics.jsonl")),
        Probe("exit codes: train a model file as its config", ["train", GPTM], 2, "model"),
        Probe("exit codes: graph a model file as its config", ["graph", GPTM], 2, "model"),
        Probe("exit codes: graph a run folder", ["graph", GPT], 2),
        Probe("exit codes: train a folder", ["train", "runs"], 2),
        Probe("exit codes: train --resume a file", ["train", "--resume", "c.toml"], 2),
        Probe("exit codes: train --resume a missing folder", ["train", "--resume", "runs/nope"], 2),
        Probe("exit codes: train --resume a folder that is no run", ["train", "--resume", "runs"], 2),
        Probe("exit codes: ablate --out a file", ["ablate", "c.toml", "--out", "tiny.txt"], 2, "tiny.txt"),
        Probe("exit codes: ablate --out the config", ["ablate", "c.toml", "--out", "c.toml"], 2),
        Probe("exit codes: ablate a model file", ["ablate", GPTM], 2),
        Probe("exit codes: ablate a folder", ["ablate", "runs"], 2),
        Probe("exit codes: ablate --seeds x", ["ablate", "c.toml", "--seeds", "x"], 2),
        Probe("exit codes: ablate --jobs 0", ["ablate", "c.toml", "--jobs", "0"], 2),
        Probe("exit codes: ablate --jobs -1", ["ablate", "c.toml", "--jobs", "-1"], 2),
        Probe("exit codes: ablate --base missing", ["ablate", "c.toml", "--base", "nope.toml", "--out", "ab"], 2),
        Probe("exit codes: plot a model file", ["plot", GPTM], 2),
        Probe("exit codes: plot a corpus", ["plot", "tiny.txt"], 2),
        Probe("exit codes: plot a missing folder", ["plot", "nope"], 2),
        Probe("exit codes: plot a folder that is no run", ["plot", "runs"], 2),
        Probe("exit codes: plot --out a folder", ["plot", GPT, "--out", "runs"], 2),
        Probe("exit codes: serve a model file", ["serve", GPTM], 2),
        Probe("exit codes: serve --addr nonsense", ["serve", "runs", "--addr", "nope:nope"], 2),
        Probe("exit codes: serve --max-tokens -1", ["serve", "runs", "--max-tokens", "-1"], 2),
        Probe("exit codes: serve --time-limit -1s", ["serve", "runs", "--time-limit", "-1s"], 2),
        Probe("exit codes: serve --model-memory NaN", ["serve", "runs", "--model-memory", "NaN"], 2),
        Probe("exit codes: sweep a model file", ["sweep", GPTM], 2),
        Probe("exit codes: sweep run a file", ["sweep", "run", "c.toml"], 2),
        Probe("exit codes: sweep collect a missing folder", ["sweep", "collect", "nope"], 2),
        Probe("exit codes: import nanogpt a gptg model", ["import", "nanogpt", GPTM, "--meta", "meta.pkl", "--out", "x.safetensors"], 2),
        Probe("exit codes: import nanogpt --meta a gptg model", ["import", "nanogpt", "ckpt.pt", "--meta", GPTM, "--out", "x.safetensors"], 2),
        Probe("exit codes: import nanogpt a missing checkpoint", ["import", "nanogpt", "nope.pt", "--meta", "meta.pkl", "--out", "x.safetensors"], 2),
        Probe("exit codes: import nanogpt a folder", ["import", "nanogpt", "runs", "--meta", "meta.pkl", "--out", "x.safetensors"], 2),
        Probe("exit codes: data pairs a language-model config", ["data", "pairs", "c.toml", "--out", "d"], 2),
        Probe("exit codes: data pairs a model file", ["data", "pairs", TRM, "--out", "d"], 2),
        Probe("exit codes: data toy --sentences -1", ["data", "toy", "--out", "t.txt", "--sentences", "-1"], 2),
        Probe("exit codes: data toy --sentences 1e12", ["data", "toy", "--out", "t.txt", "--sentences", "1000000000000"], 2),
        Probe("exit codes: data nosuch", ["data", "nosuch"], 2),
        Probe("exit codes: eval a translation run --show -5", ["eval", TR, "--show", "-5"], 2),
        Probe("exit codes: translate --beam 65", ["translate", TR, "--text", "a1", "--beam", "65"], 2),
        Probe("exit codes: translate --alpha NaN", ["translate", TR, "--text", "a1", "--alpha", "NaN"], 2),
        Probe("exit codes: translate two models", ["translate", TR, TR, "--text", "a1"], 2),
        Probe("exit codes: attention --target on a language model", ["attention", GPT, "--text", "Fi", "--target", "x"], 2),
        Probe("exit codes: inspect --vocab --frob", ["inspect", GPT, "--frob"], 2),
        Probe("exit codes: sample --seed -1", ["sample", GPT, "--seed", "-1", "--tokens", "2"], 2),
        Probe("exit codes: sample --top-k 1e9", ["sample", GPT, "--top-k", "1000000000000", "--tokens", "2"], 0),
        Probe("exit codes: version --frob", ["version", "--frob"], 2),
    ]
    return ps


def tokenizer_probes():
    """Damaged tokenizer metadata in model files (task 1b): one line, exit 1,
    never a silently wrong translation."""
    T = "t.safetensors"
    ps = []
    for side in ("src_vocab", "tgt_vocab"):
        cases = [
            ("a word twice", lambda w: w + [w[5]], "twice"),
            ("the specials swapped", lambda w: [w[1], w[0]] + w[2:], None),
            ("no specials", lambda w: w[4:], None),
            ("one word fewer than the embedding rows", lambda w: w[:-1], None),
            ("one word more than the embedding rows", lambda w: w + ["zz"], None),
            ("an upper-case word the tokenizer never makes", lambda w: w[:4] + ["A1"] + w[5:], "A1"),
            ("a word with a space", lambda w: w[:4] + ["a1 a2"] + w[5:], None),
            ("an empty word", lambda w: w[:4] + [""] + w[5:], None),
            ("a word of two tokens", lambda w: w[:4] + ["a1."] + w[5:], None),
            ("a control character", lambda w: w[:4] + ["a\u0007"] + w[5:], None),
            ("a million words", lambda w: w + ["w%d" % i for i in range(1000000)], None),
        ]
        for what, fn, msg in cases:
            ps.append(Probe("tokenizer: %s with %s, translate" % (side, what), ["translate", T, "--text", "a1 a2"], 1, msg,
                            setup=vocab_edit(TRM, T, side, fn), allow=()))
        ps.append(Probe("tokenizer: %s not a list" % side, ["translate", T, "--text", "a1"], 1, None,
                        setup=meta_edit(TRM, T, side, lambda v: '{"a":1}')))
        ps.append(Probe("tokenizer: %s missing" % side, ["translate", T, "--text", "a1"], 1, None,
                        setup=meta_edit(TRM, T, side, lambda v: None)))
        ps.append(Probe("tokenizer: %s holding invalid UTF-8" % side, ["translate", T, "--text", "a1"], 1, "UTF-8",
                        setup=raw_meta_edit(TRM, T, (lambda side: lambda h: h.replace(b'a1\\"' if side == "src_vocab" else b'b1\\"', b'\xff\xfe\\"', 1))(side))))
        ps.append(Probe("tokenizer: %s eval" % side, ["eval", "runs/toy/t.safetensors"], 1, "twice",
                        setup=vocab_edit(TRM, "runs/toy/t.safetensors", side, lambda w: w + [w[5]])))
    ps += [
        Probe("tokenizer: translation model with tokenizer char", ["translate", T, "--text", "a1"], 1, "tokenizer",
              setup=meta_edit(TRM, T, "tokenizer", lambda v: "char")),
        Probe("tokenizer: translation model with tokenizer bpe", ["translate", T, "--text", "a1"], 1, "tokenizer",
              setup=meta_edit(TRM, T, "tokenizer", lambda v: "bpe")),
        Probe("tokenizer: max_source past the model's positions", ["translate", T, "--text", " ".join(["a1"] * 40)], 1, "max_source",
              setup=meta_edit(TRM, T, "max_source", lambda v: "100")),
        Probe("tokenizer: max_target past the model's positions", ["translate", T, "--text", "a1 a2"], 1, "max_target",
              setup=meta_edit(TRM, T, "max_target", lambda v: "100")),
        Probe("tokenizer: max_source 1e18", ["translate", T, "--text", "a1"], 1, None,
              setup=meta_edit(TRM, T, "max_source", lambda v: "1000000000000000000")),
        Probe("tokenizer: max_target -1", ["translate", T, "--text", "a1"], 1, None,
              setup=meta_edit(TRM, T, "max_target", lambda v: "-1")),
        Probe("tokenizer: translation model with a block past its metadata's count", ["translate", T, "--text", "a1"], 1, "encoder block 1",
              setup=st_edit(TRM, T, lambda h, data: (dict(h, **{"encoder.1.att.q.weight": {"dtype": "F32", "shape": [8, 8], "data_offsets": [len(data), len(data) + 256]}}), data + b"\0" * 256))),
        Probe("tokenizer: inspect a translation model with a word twice", ["inspect", T], 1, "twice",
              setup=vocab_edit(TRM, T, "tgt_vocab", lambda w: w + [w[4]])),
        Probe("tokenizer: attention on a translation model with an upper-case word", ["attention", T, "--text", "a1"], 1, "A1",
              setup=vocab_edit(TRM, T, "src_vocab", lambda w: w[:4] + ["A1"] + w[5:])),
        # Language models' vocabularies.
        Probe("tokenizer: char model with a token twice", ["sample", "m.safetensors", "--tokens", "3"], 1, "twice",
              setup=vocab_edit(GPTM, "m.safetensors", "vocab", lambda w: w[:-1] + [w[0]])),
        Probe("tokenizer: char model with a two-character token", ["sample", "m.safetensors", "--tokens", "3"], 1, None,
              setup=vocab_edit(GPTM, "m.safetensors", "vocab", lambda w: w[:-1] + ["ab"])),
        Probe("tokenizer: char model with an empty token", ["sample", "m.safetensors", "--tokens", "3"], 1, None,
              setup=vocab_edit(GPTM, "m.safetensors", "vocab", lambda w: w[:-1] + [""])),
        Probe("tokenizer: char model with invalid UTF-8", ["sample", "m.safetensors", "--tokens", "3"], 1, "UTF-8",
              setup=raw_meta_edit(GPTM, "m.safetensors", lambda h: h.replace(b'\\"a\\"', b'\\"\xff\\"', 1))),
        Probe("tokenizer: unknown tokenizer kind", ["sample", "m.safetensors", "--tokens", "3"], 1, "tokenizer",
              setup=meta_edit(GPTM, "m.safetensors", "tokenizer", lambda v: "bpe")),
        Probe("tokenizer: word model with a word twice", ["sample", "m.safetensors", "--tokens", "3"], 1, "twice",
              setup=vocab_edit("runs/words/model.safetensors", "m.safetensors", "vocab", lambda w: w[:-1] + [w[0]])),
        Probe("tokenizer: word model with a word holding a space", ["sample", "m.safetensors", "--tokens", "3"], 1, None,
              setup=vocab_edit("runs/words/model.safetensors", "m.safetensors", "vocab", lambda w: w[:-1] + ["a b"])),
        Probe("tokenizer: word model with an empty word", ["sample", "m.safetensors", "--tokens", "3"], 1, None,
              setup=vocab_edit("runs/words/model.safetensors", "m.safetensors", "vocab", lambda w: w[:-1] + [""])),
    ]
    return ps


def cfg(text, name="x.toml"):
    return write(name, text)


TRB = TR_TOML.replace('out = "runs/toy"', 'out = "runs/t2"')


def config_probes():
    G = "[data]\npath = \"tiny.txt\"\n"
    ps = [
        Probe("config: extends a chain of 200 files", ["graph", "e0.toml"], 2, "extends",
              setup=lambda d: [open(os.path.join(d, "e%d.toml" % i), "w").write('extends = "e%d.toml"\n' % (i + 1)) for i in range(200)]
              and open(os.path.join(d, "e200.toml"), "w").write(G)),
        Probe("config: extends itself", ["graph", "x.toml"], 2, "cycle", setup=cfg('extends = "x.toml"\n')),
        Probe("config: extends a named pipe", ["graph", "x.toml"], 2, "named pipe", setup=seq(cfg('extends = "f.toml"\n'), mkfifo("f.toml"))),
        Probe("config: extends /dev/zero", ["graph", "x.toml"], 2, None, setup=cfg('extends = "/dev/zero"\n')),
        Probe("config: extends a folder", ["graph", "x.toml"], 2, None, setup=cfg('extends = "runs"\n')),
        Probe("config: extends a model file", ["graph", "x.toml"], 2, None, setup=cfg('extends = "%s"\n' % GPTM)),
        Probe("config: extends the empty string", ["graph", "x.toml"], 2, None, setup=cfg('extends = ""\n' + G)),
        Probe("config: extends a number", ["graph", "x.toml"], 2, None, setup=cfg('extends = 5\n' + G)),
        Probe("config: extends a list", ["graph", "x.toml"], 2, None, setup=cfg('extends = ["c.toml"]\n' + G)),
        Probe("config: extends a missing file", ["graph", "x.toml"], 2, "nope.toml", setup=cfg('extends = "nope.toml"\n' + G)),
        Probe("config: extends a run's config, then train into that run", ["train", "x.toml"], 1, None,
              setup=cfg('extends = "runs/c/config.toml"\n')),
        Probe("config: extends a translation config from a language model one", ["graph", "x.toml"], 2, None,
              setup=cfg('extends = "toy.toml"\n[data]\nformat = "text"\npath="tiny.txt"\n')),
        Probe("config: a BOM before the first key", ["graph", "x.toml"], 0, None, setup=write("x.toml", "\ufeff" + G)),
        Probe("config: CRLF line ends", ["graph", "x.toml"], 0, None, setup=write("x.toml", G.replace("\n", "\r\n"))),
        Probe("config: UTF-16", ["graph", "x.toml"], 2, None, setup=write("x.toml", G.encode("utf-16"), "wb")),
        Probe("config: 10 MB of comments", ["graph", "x.toml"], 2, None, setup=write("x.toml", G + ("#" * 1000 + "\n") * 10000)),
        Probe("config: one string of 10 MB", ["graph", "x.toml"], 2, None, setup=write("x.toml", 'extends = "' + "a" * 10000000 + '"\n')),
        Probe("config: a key twice", ["graph", "x.toml"], 2, None, setup=cfg(G + "[model]\nheads = 2\nheads = 4\n")),
        Probe("config: a table twice", ["graph", "x.toml"], 2, None, setup=cfg(G + "[model]\nheads = 2\n[model]\nblocks = 2\n")),
        Probe("config: split = nan", ["graph", "x.toml"], 2, "data.split", setup=cfg(G + "split = nan\n")),
        Probe("config: lr = inf", ["graph", "x.toml"], 2, "train.lr", setup=cfg(G + "[train]\nlr = inf\n")),
        Probe("config: lr = -1", ["graph", "x.toml"], 2, "train.lr", setup=cfg(G + "[train]\nlr = -1.0\n")),
        Probe("config: weight_decay = nan", ["graph", "x.toml"], 2, "weight_decay", setup=cfg(G + "[train]\nweight_decay = nan\n")),
        Probe("config: beta2 = 1", ["graph", "x.toml"], 2, "beta2", setup=cfg(G + "[train]\nbeta2 = 1.0\n")),
        Probe("config: eps = 0", ["graph", "x.toml"], 2, "eps", setup=cfg(G + "[train]\neps = 0.0\n")),
        Probe("config: clip = nan", ["graph", "x.toml"], 2, "clip", setup=cfg(G + "[train]\nclip = nan\n")),
        Probe("config: dropout = 1", ["graph", "x.toml"], 2, "dropout", setup=cfg(G + "[model]\ndropout = 1.0\n")),
        Probe("config: max_steps = 2^63-1 (a cap, epochs bound the run)", ["graph", "x.toml"], 0, None, setup=cfg(G + "[train]\nmax_steps = 9223372036854775807\n")),
        Probe("config: an integer past int64", ["graph", "x.toml"], 2, None, setup=cfg(G + "[train]\nmax_steps = 99999999999999999999\n")),
        Probe("config: batch = -1", ["graph", "x.toml"], 2, "train.batch", setup=cfg(G + "[train]\nbatch = -1\n")),
        Probe("config: grad_accum = 1e9", ["graph", "x.toml"], 2, "grad_accum", setup=cfg(G + "[train]\ngrad_accum = 1000000000\n")),
        Probe("config: log_every = 0", ["graph", "x.toml"], 2, "log_every", setup=cfg(G + "[train]\nlog_every = 0\n")),
        Probe("config: checkpoint_every = -1", ["graph", "x.toml"], 2, "checkpoint_every", setup=cfg(G + "[train]\ncheckpoint_every = -1\n")),
        Probe("config: seed = -1 (any integer seeds)", ["graph", "x.toml"], 0, None, setup=cfg(G + "[train]\nseed = -1\n")),
        Probe("config: a unicode bare key (not TOML)", ["graph", "x.toml"], 2, "line 4", setup=cfg(G + "[model]\nhéads = 2\n")),
        Probe("config: a key with an escape sequence", ["graph", "x.toml"], 2, "unknown", setup=cfg(G + '[model]\n"\\u001b[2J" = 2\n')),
        Probe("config: sample.prompt of 1 MB", ["graph", "x.toml"], 2, None, setup=cfg(G + '[sample]\nprompt = "' + "a" * 1000000 + '"\n')),
        Probe("config: sample.tokens = -1", ["graph", "x.toml"], 2, "sample.tokens", setup=cfg(G + "[sample]\ntokens = -1\n")),
        Probe("config: sample.temperature = nan", ["graph", "x.toml"], 2, "temperature", setup=cfg(G + "[sample]\ntemperature = nan\n")),
        Probe("config: data.sha256 not hex", ["train", "x.toml"], 2, "sha256", setup=cfg(G + 'sha256 = "zz"\n[train]\nout="runs/x"\n')),
        Probe("config: data.url file://", ["train", "x.toml"], 2, "url", setup=cfg('[data]\npath = "new.txt"\nurl = "file:///etc/passwd"\n[train]\nout="runs/x"\n')),
        Probe("config: data.size = -1", ["graph", "x.toml"], 2, "size", setup=cfg(G + "size = -1\n")),
        Probe("config: data.path a folder", ["train", "x.toml"], 1, None, setup=cfg('[data]\npath = "runs"\n[train]\nout="runs/x"\n')),
        Probe("config: data.path a symlink loop", ["train", "x.toml"], 1, None,
              setup=seq(cfg('[data]\npath = "loop"\n[train]\nout="runs/x"\n'), symlink("loop", "loop"))),
        Probe("config: data.path the config itself", ["train", "x.toml", "--set", "train.max_steps=1"], 1, None,
              setup=cfg('[data]\npath = "x.toml"\n[train]\nout="runs/x"\nbatch=1\n'), allow=("runs/x",)),
        Probe("config: train.out is the corpus file", ["train", "x.toml"], 2, None, setup=cfg(G + '[train]\nout = "tiny.txt"\n')),
        Probe("config: train.out is a symlink to /", ["train", "x.toml"], 2, None, setup=seq(cfg(G + '[train]\nout = "root"\n'), symlink("/", "root"))),
        Probe("config: train.out is /dev", ["train", "x.toml"], 2, None, setup=cfg(G + '[train]\nout = "/dev"\n')),
        Probe("config: train.out with .. escaping", ["train", "x.toml", "--set", "train.max_steps=1"], 0, None,
              setup=cfg(G + '[train]\nout = "runs/../runs2"\nbatch=1\n'), allow=("runs2",)),
        Probe("config: train.out empty means runs/<config name>", ["train", "x.toml", "--quiet"], 0, None, setup=cfg(G + '[train]\nout = ""\nmax_steps = 1\nbatch = 1\n'), allow=("runs/x",)),
        # Translation configs.
        Probe("translation config: max_source 0", ["graph", "x.toml"], 2, "max_source", setup=cfg(TRB + "", "x.toml") if False else write("x.toml", TRB.replace("max_source = 4", "max_source = 0"))),
        Probe("translation config: max_source 1e9", ["graph", "x.toml"], 2, "max_source", setup=write("x.toml", TRB.replace("max_source = 4", "max_source = 1000000000"))),
        Probe("translation config: max_target -3", ["graph", "x.toml"], 2, "max_target", setup=write("x.toml", TRB.replace("max_target = 4", "max_target = -3"))),
        Probe("translation config: encoder_blocks 0 (= model.blocks)", ["graph", "x.toml"], 0, None, setup=write("x.toml", TRB.replace("encoder_blocks = 1", "encoder_blocks = 0"))),
        Probe("translation config: ff_hidden 1e9", ["train", "x.toml"], 2, None, setup=write("x.toml", TRB.replace("ff_hidden = 16", "ff_hidden = 1000000000"))),
        Probe("translation config: positions bogus", ["graph", "x.toml"], 2, "positions", setup=write("x.toml", TRB.replace('"learned"', '"bogus"'))),
        Probe("translation config: label_smoothing 1", ["graph", "x.toml"], 2, "label_smoothing", setup=write("x.toml", TRB + "") if False else write("x.toml", TRB.replace("[train]", "label_smoothing = 1.0\n[train]", 1).replace("[model]\n", "[model]\n", 1))),
        Probe("translation config: label_smoothing nan", ["graph", "x.toml"], 2, "label_smoothing", setup=write("x.toml", TRB.replace('positions = "learned"', 'positions = "learned"\nlabel_smoothing = nan'))),
        Probe("translation config: min_count 0", ["graph", "x.toml"], 2, "min_count", setup=write("x.toml", TRB.replace("max_target = 4", "max_target = 4\nmin_count = 0"))),
        Probe("translation config: min_count 1e9 (specials only, said in the log)", ["train", "x.toml", "--quiet"], 0, None, allow=("runs/t2",), setup=write("x.toml", TRB.replace("max_target = 4", "max_target = 4\nmin_count = 1000000000"))),
        Probe("translation config: buckets 0", ["graph", "x.toml"], 2, "buckets", setup=write("x.toml", TRB.replace("max_target = 4", "max_target = 4\nbuckets = 0"))),
        Probe("translation config: buckets 1e6", ["graph", "x.toml"], 2, "buckets", setup=write("x.toml", TRB.replace("max_target = 4", "max_target = 4\nbuckets = 1000000"))),
        Probe("translation config: min_source past max_source", ["graph", "x.toml"], 2, "allowed: 9..", setup=write("x.toml", TRB.replace("max_target = 4", "max_target = 4\nmin_source = 9"))),
        Probe("translation config: tokenizer char", ["graph", "x.toml"], 2, "tokenizer", setup=write("x.toml", TRB.replace("max_target = 4", 'max_target = 4\ntokenizer = "char"'))),
        Probe("translation config: decoder-only arch on pairs", ["graph", "x.toml"], 2, None, setup=write("x.toml", TRB.replace('arch = "encoder-decoder"', 'arch = "gpt"'))),
        Probe("translation config: arch unknown", ["graph", "x.toml"], 2, "arch", setup=write("x.toml", TRB.replace('arch = "encoder-decoder"', 'arch = "t5"'))),
        Probe("translation config: sampling key on pairs", ["graph", "x.toml"], 2, None, setup=write("x.toml", TRB.replace("max_target = 4", 'max_target = 4\nsampling = "random"'))),
        Probe("translation config: mask false", ["graph", "x.toml"], 2, "mask", setup=write("x.toml", TRB.replace('positions = "learned"', 'positions = "learned"\nmask = false'))),
    ]
    return ps


def tsv_probes():
    def pairs(text, extra="", mode="w"):
        return seq(write("p.tsv", text, mode), write("x.toml", TRB.replace('"toy.tsv"', '"p.tsv"') + extra))
    good = toy_tsv()
    ps = [
        Probe("pairs: CRLF line ends", ["train", "x.toml", "--quiet"], 0, None, setup=pairs(good.replace("\n", "\r\n")), allow=("runs/t2",),
              check=lambda d, c, o, e: None if "\\r" not in open(os.path.join(d, "runs/t2/model.safetensors"), "rb").read(20000).decode("latin1") else "a word keeps its \\r"),
        Probe("pairs: a BOM", ["train", "x.toml", "--quiet"], 0, None, setup=pairs("\ufeff" + good), allow=("runs/t2",),
              check=lambda d, c, o, e: None if "\\ufeff" not in open(os.path.join(d, "runs/t2/model.safetensors"), "rb").read(20000).decode("latin1") else "the BOM is a word"),
        Probe("pairs: UTF-16", ["train", "x.toml"], 2, None, setup=pairs(good.encode("utf-16"), mode="wb")),
        Probe("pairs: empty file", ["train", "x.toml"], 2, None, setup=pairs("")),
        Probe("pairs: only blank lines", ["train", "x.toml"], 2, None, setup=pairs("\n\n\n")),
        Probe("pairs: one pair", ["train", "x.toml"], 2, None, setup=pairs("a\tb\n")),
        Probe("pairs: a line of 20 MB", ["train", "x.toml"], 2, None, setup=pairs(good + "a " * 10000000 + "\tb\n"), max_mb=1500),
        Probe("pairs: a line of 1M tabs", ["train", "x.toml"], 2, "longer than", setup=pairs(good + "a" + "\t" * 1000000 + "b\n")),
        Probe("pairs: whitespace-only source", ["train", "x.toml"], 2, "source", setup=pairs(good + "   \tb1\n")),
        Probe("pairs: punctuation only", ["train", "x.toml", "--quiet"], 0, None, setup=pairs(good + "...\t!!!\n"), allow=("runs/t2",)),
        Probe("pairs: a NUL", ["train", "x.toml"], 2, "NUL", setup=pairs(good + "a\x00\tb\n")),
        Probe("pairs: a named pipe", ["train", "x.toml"], 2, "named pipe", setup=seq(write("x.toml", TRB.replace('"toy.tsv"', '"p.tsv"')), mkfifo("p.tsv"))),
        Probe("pairs: /dev/zero", ["train", "x.toml"], 2, None, setup=write("x.toml", TRB.replace('"toy.tsv"', '"/dev/zero"'))),
        Probe("pairs: /proc/self/status", ["train", "x.toml"], 2, None, setup=write("x.toml", TRB.replace('"toy.tsv"', '"/proc/self/status"'))),
        Probe("pairs: every pair longer than max_source", ["train", "x.toml"], 2, None, setup=pairs("".join("a b c d e f g\tb\n" for _ in range(200)))),
        Probe("pairs: data pairs on a pipe", ["data", "pairs", "x.toml", "--out", "d"], 2, "named pipe",
              setup=seq(write("x.toml", TRB.replace('"toy.tsv"', '"p.tsv"')), mkfifo("p.tsv"))),
        Probe("pairs: eval after the test pairs were edited", ["eval", TR], (1, 2), None,
              setup=write("toy.tsv", toy_tsv().replace("a1", "a9"))),
        Probe("pairs: eval after the corpus was replaced by another of the same vocabulary (needs the recorded corpus hash)", ["eval", TR], 2, None,
              setup=write("toy.tsv", "\n".join(reversed(toy_tsv().strip().split("\n"))) + "\n")),
    ]
    return ps


def first_tensor(h):
    return sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][0])


def tset(name, field, value):
    def edit(h, data):
        k = first_tensor(h)[0] if name is None else name
        h[k][field] = value
        return h, data
    return edit


def safetensors_probes():
    M = "m.safetensors"
    def S(what, fn, code=1, msg=None, cmd=("sample", M, "--tokens", "3"), max_mb=1500):
        return Probe("safetensors: " + what, list(cmd), code, msg, setup=st_edit(GPTM, M, fn), max_mb=max_mb)

    def overlap(h, data):
        a, b = first_tensor(h)[:2]
        n = h[b]["data_offsets"][1] - h[b]["data_offsets"][0]
        h[b]["data_offsets"] = [h[a]["data_offsets"][0], h[a]["data_offsets"][0] + n]
        return h, data

    def gap(h, data):
        for k in h:
            if k != "__metadata__":
                h[k]["data_offsets"] = [o + 8 for o in h[k]["data_offsets"]]
        return h, b"\0" * 8 + data

    def trailing(h, data):
        return h, data + b"\0" * 64

    def many(h, data):
        for i in range(200000):
            h["x%d" % i] = {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
        return h, data

    def meta_num(h, data):
        h["__metadata__"]["max"] = 5
        return h, data

    def deep(h, data):
        h["__metadata__"]["model"] = "[" * 100000 + "]" * 100000
        return h, data

    ps = [
        S("two tensors over the same bytes", overlap, msg="overlap"),
        S("offsets reversed", tset(None, "data_offsets", [8, 0])),
        S("a negative offset", tset(None, "data_offsets", [-8, 0])),
        S("an offset of 2^64", tset(None, "data_offsets", [0, 18446744073709551616])),
        S("a fractional offset", tset(None, "data_offsets", [0, 1.5])),
        S("an offset as a string", tset(None, "data_offsets", ["0", "8"])),
        S("three offsets", tset(None, "data_offsets", [0, 8, 16])),
        S("dtype F16", tset(None, "dtype", "F16")),
        S("dtype BF16", tset(None, "dtype", "BF16")),
        S("dtype I64", tset(None, "dtype", "I64")),
        S("dtype bogus", tset(None, "dtype", "Q4")),
        S("a negative dimension", tset(None, "shape", [-1, 8])),
        S("dimensions whose product overflows", tset(None, "shape", [4294967296, 4294967296, 16])),
        S("a dimension of 2^62", tset(None, "shape", [4611686018427387904])),
        S("a scalar shape for a matrix", tset(None, "shape", [])),
        S("a shape as a string", tset(None, "shape", "8,8")),
        S("a gap of unused bytes before the data", gap),
        S("trailing bytes after the data", trailing),
        S("200,000 empty tensors", many, max_mb=1500),
        S("a metadata value that is a number", meta_num),
        S("model metadata nested 100,000 deep", deep),
        Probe("safetensors: header a JSON array", ["inspect", M], 1, None, setup=raw_meta_edit(GPTM, M, lambda h: b"[" + b" " * (len(h) - 2) + b"]")),
        Probe("safetensors: header nested 1M deep", ["inspect", M], 1, None, setup=raw_meta_edit(GPTM, M, lambda h: b"[" * 500000 + b"]" * 500000)),
        Probe("safetensors: a tensor name twice in the header", ["inspect", M], 1, None,
              setup=raw_meta_edit(GPTM, M, lambda h: h.replace(b'"out.bias"', b'"out.weight"', 1))),
        Probe("safetensors: header length 0", ["inspect", M], 1, None, setup=write(M, struct.pack("<Q", 0) + b"x" * 64, "wb")),
        Probe("safetensors: header of invalid UTF-8", ["inspect", M], 1, None,
              setup=raw_meta_edit(GPTM, M, lambda h: h.replace(b'"format"', b'"form\xffat"', 1))),
        Probe("safetensors: a model file of 1.5 GB of zeros (sparse)", ["inspect", M], 1, None,
              setup=lambda d: os.truncate(open(os.path.join(d, M), "wb").name, 1500 << 20), max_mb=300),
        Probe("safetensors: the model file is a symlink loop", ["sample", M], 2, None, setup=symlink(M, M)),
        Probe("safetensors: the model file is unreadable (mode 000; root reads it)", ["inspect", "runs/c"], 0 if os.geteuid() == 0 else 1, None,
              setup=lambda d: os.chmod(os.path.join(d, GPTM), 0), env=None),
        Probe("safetensors: the run folder's model.safetensors is a folder", ["sample", "runs/c"], 2, None,
              setup=lambda d: (os.remove(os.path.join(d, GPTM)), os.mkdir(os.path.join(d, GPTM)))),
        Probe("safetensors: model file truncated in the header", ["inspect", M], 1, None,
              setup=lambda d: open(os.path.join(d, M), "wb").write(open(os.path.join(d, GPTM), "rb").read()[:200])),
        Probe("safetensors: model vocab 0 in metadata", ["sample", M], 1, None,
              setup=meta_edit(GPTM, M, "model", lambda v: v.replace('"vocab":', '"vocab":0,"x":') if False else json.dumps(dict(json.loads(v), vocab=0)))),
        Probe("safetensors: model context 1e9 in metadata", ["sample", M], 1, "context",
              setup=meta_edit(GPTM, M, "model", lambda v: json.dumps(dict(json.loads(v), context=1000000000)))),
        Probe("safetensors: an unknown key in model metadata", ["sample", M], 1, None,
              setup=meta_edit(GPTM, M, "model", lambda v: json.dumps(dict(json.loads(v), turbo=True)))),
        Probe("safetensors: a translation model's model metadata with embedding 1e6", ["translate", M, "--text", "a1"], 1, None,
              setup=meta_edit(TRM, M, "model", lambda v: json.dumps(dict(json.loads(v), embedding=1000000)))),
        Probe("safetensors: a translation model whose heads do not divide embedding", ["translate", M, "--text", "a1"], 1, "heads",
              setup=meta_edit(TRM, M, "model", lambda v: json.dumps(dict(json.loads(v), heads=3)))),
        Probe("safetensors: a translation model with a tensor missing (its bytes left)", ["translate", M, "--text", "a1"], 1, "belong to no tensor",
              setup=st_edit(TRM, M, lambda h, data: ({k: v for k, v in h.items() if k != "src_pos.weight"}, data))),
        Probe("safetensors: a translation model of context 4096 (memory)", ["translate", M, "--text", "a1"], 1, None,
              setup=meta_edit(TRM, M, "model", lambda v: json.dumps(dict(json.loads(v), context=4096)))),
    ]
    return ps


def zip_ckpt(entries, name="ckpt.pt"):
    def setup(d):
        with zipfile.ZipFile(os.path.join(d, name), "w") as z:
            for n, b in entries:
                z.writestr(n, b)
    return setup


def ckpt_entries(d):
    with zipfile.ZipFile(os.path.join(d, "ckpt.pt")) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


def ckpt_edit(fn):
    def setup(d):
        es = fn(ckpt_entries(d))
        os.remove(os.path.join(d, "ckpt.pt"))
        with zipfile.ZipFile(os.path.join(d, "ckpt.pt"), "w") as z:
            for n, b in es:
                z.writestr(n, b)
    return setup


def pkl_edit(fn):
    return ckpt_edit(lambda es: [(n, fn(b) if n.endswith("data.pkl") else b) for n, b in es])


def nanogpt_probes():
    IMP = ["import", "nanogpt", "ckpt.pt", "--out", "x.safetensors"]
    ok_out = ("x.safetensors",)
    import pickle
    ps = [
        Probe("nanogpt: an entry named ../../evil (read, never extracted)", IMP, 0, None, setup=ckpt_edit(lambda es: es + [("../../evil", b"x")]), allow=ok_out),
        Probe("nanogpt: an absolute entry name", IMP, 0, None, setup=ckpt_edit(lambda es: es + [("/tmp/evil", b"x")]), allow=ok_out),
        Probe("nanogpt: a pickle nested 100,000 deep", IMP, 2, None, setup=pkl_edit(lambda b: b"\x80\x02" + b"(" * 100000 + b"t" * 100000 + b".")),
        Probe("nanogpt: a pickle of 100,000 nested lists", IMP, 2, None, setup=pkl_edit(lambda b: b"\x80\x02" + b"]" * 100000 + b"a" * 99999 + b".")),
        Probe("nanogpt: BINGET of an unset memo slot", IMP, 2, None, setup=pkl_edit(lambda b: b"\x80\x02h\x05.")),
        Probe("nanogpt: LONG_BINGET 2^31", IMP, 2, None, setup=pkl_edit(lambda b: b"\x80\x02j\xff\xff\xff\x7f.")),
        Probe("nanogpt: LONG_BINPUT 2^31", IMP, 2, None, setup=pkl_edit(lambda b: b"\x80\x02N r\xff\xff\xff\x7f.".replace(b" ", b""))),
        Probe("nanogpt: a FRAME claiming 2^60 bytes", IMP, 2, None, setup=pkl_edit(lambda b: b"\x80\x04\x95" + struct.pack("<Q", 1 << 60) + b"N.")),
        Probe("nanogpt: protocol 99", IMP, 2, None, setup=pkl_edit(lambda b: b"\x80\x63N.")),
        Probe("nanogpt: an empty data.pkl", IMP, 2, None, setup=pkl_edit(lambda b: b"")),
        Probe("nanogpt: a pickle with no STOP", IMP, 2, None, setup=pkl_edit(lambda b: b[:-1])),
        Probe("nanogpt: a pickle that is an integer", IMP, 2, None, setup=pkl_edit(lambda b: pickle.dumps(5, protocol=2))),
        Probe("nanogpt: a pickle of a dict without model", IMP, 2, None, setup=pkl_edit(lambda b: pickle.dumps({"model_args": {}}, protocol=2))),
        Probe("nanogpt: a 200 MB stored (uncompressed) entry nobody reads", IMP, None, None, max_mb=600, allow=ok_out,
              setup=ckpt_edit(lambda es: es + [("ckpt/data/999", b"\0" * (200 << 20))])),
        Probe("nanogpt: 70,000 entries", IMP, 0, None, allow=ok_out, setup=ckpt_edit(lambda es: es + [("ckpt/x%d" % i, b"") for i in range(70000)])),
        Probe("nanogpt: no data.pkl", IMP, 2, None, setup=ckpt_edit(lambda es: [(n, b) for n, b in es if not n.endswith("data.pkl")])),
        Probe("nanogpt: the checkpoint is a symlink to /dev/zero", IMP, 2, None, setup=lambda d: (os.remove(os.path.join(d, "ckpt.pt")), os.symlink("/dev/zero", os.path.join(d, "ckpt.pt")))),
        Probe("nanogpt: meta.pkl with a character twice in itos", IMP, 2, None,
              setup=pkl_meta(lambda m: dict(m, itos={**m["itos"], 1: m["itos"][0]}))),
        Probe("nanogpt: meta.pkl whose stoi and itos disagree", IMP, 2, None,
              setup=pkl_meta(lambda m: dict(m, stoi={**m["stoi"], m["itos"][0]: 1, m["itos"][1]: 0}))),
        Probe("nanogpt: meta.pkl with itos keys not 0..n-1", IMP, 2, None,
              setup=pkl_meta(lambda m: dict(m, itos={k + 5: v for k, v in m["itos"].items()}))),
        Probe("nanogpt: meta.pkl with vocab_size not its length", IMP, 2, None,
              setup=pkl_meta(lambda m: dict(m, vocab_size=m["vocab_size"] + 1))),
        Probe("nanogpt: meta.pkl a list", IMP, 2, None, setup=lambda d: open(os.path.join(d, "meta.pkl"), "wb").write(pickle.dumps([1, 2], protocol=2))),
        Probe("nanogpt: --out a symlink into another folder", IMP, 2, None, setup=seq(mkdir("other"), symlink("other/x.safetensors", "x.safetensors"))),
        Probe("nanogpt: --out - writes the model to stdout", ["import", "nanogpt", "ckpt.pt", "--out", "-"], 0, None),
        Probe("nanogpt: --out /dev/stdout", ["import", "nanogpt", "ckpt.pt", "--out", "/dev/stdout"], 0, None),
    ]
    return ps


SWEEP = 'configs = ["c.toml"]\nseeds = 1\nout = "sw"\n[set]\n"train.lr" = [0.001, 0.002]\n'


def make_sweep(d):
    with open(os.path.join(d, "s.toml"), "w") as f:
        f.write(SWEEP)
    assert run_bin(["sweep", "s.toml"], d).returncode == 0


def manifest_edit(fn):
    def setup(d):
        make_sweep(d)
        p = os.path.join(d, "sw", "manifest.jsonl")
        rows = [json.loads(l) for l in open(p)]
        with open(p, "w") as f:
            f.write(fn(rows))
    return setup


def rows(rs):
    return "".join(json.dumps(r) + "\n" for r in rs)


def run_folder_probes():
    def metrics(text):
        return write("runs/c/metrics.jsonl", text)
    ps = [
        Probe("run folder: metrics.jsonl a named pipe, plot", ["plot", GPT, "--out", "l.png"], 2, "named pipe",
              setup=lambda d: (os.remove(os.path.join(d, GPT, "metrics.jsonl")), os.mkfifo(os.path.join(d, GPT, "metrics.jsonl")))),
        Probe("run folder: metrics.jsonl a link to /dev/zero, plot", ["plot", GPT, "--out", "l.png"], 2, "character device",
              setup=lambda d: (os.remove(os.path.join(d, GPT, "metrics.jsonl")), os.symlink("/dev/zero", os.path.join(d, GPT, "metrics.jsonl")))),
        Probe("run folder: metrics.jsonl of 300 MB, plot", ["plot", GPT, "--out", "l.png"], 2, "more than the limit", max_mb=1500, timeout=120,
              setup=metrics(('{"step":1,"loss":' + "1" * 1000 + "}\n") * 300000)),
        Probe("run folder: metrics.jsonl with NaN loss, plot", ["plot", GPT, "--out", "l.png"], 1, None,
              setup=metrics('{"step":1,"loss":NaN}\n')),
        Probe("run folder: metrics.jsonl with loss 1e308, plot", ["plot", GPT, "--out", "l.png"], 0, None, allow=("l.png",),
              setup=metrics('{"step":1,"loss":1e308}\n{"step":2,"loss":1}\n')),
        Probe("run folder: metrics.jsonl empty, plot", ["plot", GPT, "--out", "l.png"], 1, None, setup=metrics("")),
        Probe("run folder: metrics.jsonl steps going back, plot draws them", ["plot", GPT, "--out", "l.png"], 0, None, allow=("l.png",),
              setup=metrics('{"step":5,"loss":1}\n{"step":2,"loss":1}\n')),
        Probe("run folder: metrics.jsonl one line of 50 MB, plot", ["plot", GPT, "--out", "l.png"], 1, "longer than", allow=("l.png",),
              setup=metrics('{"step":1,"loss":1,"x":"' + "a" * (50 << 20) + '"}\n')),
        Probe("run folder: resume with checkpoint a link to /dev/zero", ["train", "--resume", GPT, "--set", "train.max_steps=6"], 1, None,
              setup=lambda d: (os.remove(os.path.join(d, GPT, "checkpoint.safetensors")), os.symlink("/dev/zero", os.path.join(d, GPT, "checkpoint.safetensors")))),
        Probe("run folder: resume with config.toml a named pipe", ["train", "--resume", GPT, "--set", "train.max_steps=6"], 2, None,
              setup=lambda d: (os.remove(os.path.join(d, GPT, "config.toml")), os.mkfifo(os.path.join(d, GPT, "config.toml")))),
        Probe("run folder: resume with config.toml missing", ["train", "--resume", GPT, "--set", "train.max_steps=6"], 2, "not a run folder",
              setup=lambda d: os.remove(os.path.join(d, GPT, "config.toml"))),
        Probe("run folder: resume with the checkpoint of another run", ["train", "--resume", GPT, "--set", "train.max_steps=6"], 1, None,
              setup=lambda d: shutil.copy(os.path.join(d, WRD, "checkpoint.safetensors"), os.path.join(d, GPT, "checkpoint.safetensors"))),
        Probe("run folder: lock file naming a live process (pid 1; the lock is flock, not the pid)", ["train", "c.toml", "--force", "--quiet"], 0, None,
              setup=write("runs/c/.gptg.lock", "1\n"), allow=(GPT,)),
        Probe("run folder: lock file of garbage", ["train", "--resume", GPT, "--set", "train.max_steps=6", "--quiet"], 0, None,
              setup=write("runs/c/.gptg.lock", "\xff\xfe garbage"), allow=(GPT,)),
        Probe("run folder: lock file a folder", ["train", "--resume", GPT, "--set", "train.max_steps=6"], 1, None,
              setup=lambda d: (os.remove(os.path.join(d, "runs/c/.gptg.lock")), os.mkdir(os.path.join(d, "runs/c/.gptg.lock")))),
        Probe("run folder: lock file a link to a file outside the run, resume", ["train", "--resume", GPT, "--set", "train.max_steps=6", "--quiet"], 1, "lock file",
              setup=seq(write("outside.txt", "keep me\n"), lambda d: (os.remove(os.path.join(d, "runs/c/.gptg.lock")), os.symlink("../../outside.txt", os.path.join(d, "runs/c/.gptg.lock"))))),
        Probe("run folder: sample with config.toml a link to /dev/zero", ["sample", GPT], 2, None,
              setup=lambda d: (os.remove(os.path.join(d, GPT, "config.toml")), os.symlink("/dev/zero", os.path.join(d, GPT, "config.toml")))),
        Probe("run folder: eval a translation run whose config.toml is gone", ["eval", TR], 2, None,
              setup=lambda d: os.remove(os.path.join(d, TR, "config.toml"))),
        Probe("run folder: eval a translation run whose config is a language model's", ["eval", TR], 2, None,
              setup=lambda d: shutil.copy(os.path.join(d, GPT, "config.toml"), os.path.join(d, TR, "config.toml"))),
        # The run's corpus is found by its content wherever it is (the
        # recorded path first if data.path holds other text), and eval names it.
        Probe("run folder: eval a translation run whose config.toml points at another corpus", ["eval", TR], 0, None,
              stdout="/p/toy.tsv)",
              setup=seq(write("other.tsv", toy_tsv().replace("b", "c")),
                        lambda d: rewrite(os.path.join(d, TR, "config.toml"), lambda t: t.replace('path = "toy.tsv"', 'path = "other.tsv"')))),
        Probe("run folder: eval a translation run with max_source edited in config.toml", ["eval", TR], 2, "length filter",
              setup=lambda d: rewrite(os.path.join(d, TR, "config.toml"), lambda t: t.replace("max_source = 4", "max_source = 2"))),
        Probe("run folder: lock file a named pipe, resume", ["train", "--resume", GPT, "--set", "train.max_steps=6"], 1, "lock file",
              setup=lambda d: (os.remove(os.path.join(d, GPT, ".gptg.lock")), os.mkfifo(os.path.join(d, GPT, ".gptg.lock")))),
        Probe("run folder: lock file a named pipe, train --force", ["train", "c.toml", "--force"], 1, "lock file",
              setup=lambda d: (os.remove(os.path.join(d, GPT, ".gptg.lock")), os.mkfifo(os.path.join(d, GPT, ".gptg.lock")))),
        Probe("run folder: lock file a link to a file outside, train --force", ["train", "c.toml", "--force"], 1, "lock file",
              setup=seq(write("outside.txt", "keep me\n"), lambda d: (os.remove(os.path.join(d, GPT, ".gptg.lock")), os.symlink("../../outside.txt", os.path.join(d, GPT, ".gptg.lock"))))),
        Probe("run folder: ablate reusing a run whose ablate.json is a named pipe", ["ablate", "c.toml", "--out", "ab"], None, None, allow=("ab",), timeout=120,
              setup=lambda d: (run_bin(["ablate", "c.toml", "--out", "ab"], d),
                               os.remove(os.path.join(d, "ab/c/ablate.json")), os.mkfifo(os.path.join(d, "ab/c/ablate.json")))),
        Probe("sweep: manifest.jsonl a named pipe, sweep run", ["sweep", "run", "sw"], 2, "named pipe",
              setup=lambda d: (make_sweep(d), os.remove(os.path.join(d, "sw/manifest.jsonl")), os.mkfifo(os.path.join(d, "sw/manifest.jsonl")))),
        Probe("sweep: manifest.jsonl a named pipe, sweep s.toml again", ["sweep", "s.toml"], 2, None,
              setup=lambda d: (make_sweep(d), os.remove(os.path.join(d, "sw/manifest.jsonl")), os.mkfifo(os.path.join(d, "sw/manifest.jsonl")))),
        Probe("sweep: a failure marker a named pipe, sweep collect", ["sweep", "collect", "sw"], None, None, allow=("sw",),
              setup=lambda d: (make_sweep(d), os.makedirs(os.path.join(d, "sw/failed"), exist_ok=True), os.mkfifo(os.path.join(d, "sw/failed/0.txt")))),
        Probe("translation resume: the corpus was edited", ["train", "--resume", TR, "--set", "train.max_steps=10"], (1, 2), None,
              setup=write("toy.tsv", toy_tsv().replace("a1", "a9"))),
        Probe("translation resume: --set model.heads", ["train", "--resume", TR, "--set", "model.heads=4"], 2, "model.heads"),
        Probe("translation resume: config.toml edited", ["train", "--resume", TR, "--set", "train.max_steps=10"], (1, 2), None,
              setup=lambda d: rewrite(os.path.join(d, TR, "config.toml"), lambda t: t.replace("lr = 0.001", "lr = 0.5"))),
        # Sweep and ablate folders.
        Probe("sweep: a manifest row whose dir leaves the folder", ["sweep", "run", "sw", "--index", "0"], 2, None,
              setup=manifest_edit(lambda rs: rows([dict(rs[0], dir="../../evil")] + rs[1:]))),
        Probe("sweep: a manifest row whose dir is absolute", ["sweep", "run", "sw", "--index", "0"], 2, None,
              setup=manifest_edit(lambda rs: rows([dict(rs[0], dir="/tmp/evil")] + rs[1:]))),
        Probe("sweep: a manifest row whose config is /dev/zero: that run fails, recorded", ["sweep", "run", "sw", "--index", "0"], 1, None, allow=("sw",),
              setup=manifest_edit(lambda rs: rows([dict(rs[0], config="/dev/zero")] + rs[1:]))),
        Probe("sweep: a manifest row with a set of train.out stays in the sweep folder", ["sweep", "run", "sw", "--index", "0"], None, None, allow=("sw",),
              setup=manifest_edit(lambda rs: rows([dict(rs[0], sets=["train.out=evil"])] + rs[1:]))),
        Probe("sweep: a manifest row with a seed of -1 (runs seed -1, as a config may)", ["sweep", "run", "sw", "--index", "0"], 0, None, allow=("sw",),
              setup=manifest_edit(lambda rs: rows([dict(rs[0], seed=-1)] + rs[1:]))),
        Probe("sweep: manifest rows out of order", ["sweep", "run", "sw", "--index", "0"], 2, None,
              setup=manifest_edit(lambda rs: rows(list(reversed(rs))))),
        Probe("sweep: a manifest row twice", ["sweep", "collect", "sw"], 2, None,
              setup=manifest_edit(lambda rs: rows(rs + rs[:1]))),
        Probe("sweep: a manifest line of garbage", ["sweep", "collect", "sw"], 2, None,
              setup=manifest_edit(lambda rs: rows(rs) + "{garbage\n")),
        Probe("sweep: a manifest of 100 MB", ["sweep", "collect", "sw"], 2, None, max_mb=1000,
              setup=manifest_edit(lambda rs: rows(rs) + ('{"index":2,"variant":"' + "v" * 100000 + '"}\n') * 1000)),
        Probe("sweep: run --index -1", ["sweep", "run", "sw", "--index", "-1"], 2, None, setup=make_sweep),
        Probe("sweep: run --index 2^63", ["sweep", "run", "sw", "--index", "9223372036854775808"], 2, None, setup=make_sweep),
        Probe("sweep: run --jobs 0", ["sweep", "run", "sw", "--jobs", "0"], 2, None, setup=make_sweep),
        Probe("sweep: emit slurm --gptg with a newline", ["sweep", "emit", "slurm", "sw", "--gptg", "/bin/gptg\ntouch PWNED"], 2, None, setup=make_sweep),
        Probe("sweep: emit k8s --image with a newline", ["sweep", "emit", "k8s", "sw", "--claim", "work", "--image", "gptg:1\n  command: [rm]"], 2, None, setup=make_sweep),
        Probe("sweep: emit k8s --mount with a quote (YAML-quoted)", ["sweep", "emit", "k8s", "sw", "--claim", "work", "--image", "gptg:1", "--mount", "/w #\"ork: x"], 0, None, setup=make_sweep, allow=("sw/job.yaml",),
              check=lambda d, c, o, e: None if "'/w #\"ork: x'" in open(os.path.join(d, "sw/job.yaml")).read() else "the mount path is not quoted in job.yaml"),
        Probe("sweep: [set] train.out", ["sweep", "s.toml"], 2, "train.out", setup=write("s.toml", SWEEP + '"train.out" = "evil"\n')),
        Probe("ablate: --set train.out", ["ablate", "c.toml", "--out", "ab", "--set", "train.out=evil"], 2, "train.out"),
        Probe("sweep: emit slurm --cpus 0", ["sweep", "emit", "slurm", "sw", "--cpus", "0"], 2, None, setup=make_sweep),
        Probe("sweep: emit slurm --parallel -1", ["sweep", "emit", "slurm", "sw", "--parallel", "-1"], 2, None, setup=make_sweep),
        Probe("sweep: a sweep file whose configs list holds /dev/zero", ["sweep", "s.toml"], 2, None,
              setup=write("s.toml", SWEEP.replace('["c.toml"]', '["/dev/zero"]'))),
        Probe("sweep: a sweep file with set of train.out (absolute)", ["sweep", "s.toml"], 2, "train.out",
              setup=write("s.toml", SWEEP + '"train.out" = "/tmp/evil"\n')),
        Probe("sweep: a sweep file with an empty list", ["sweep", "s.toml"], 2, None,
              setup=write("s.toml", SWEEP.replace("[0.001, 0.002]", "[]"))),
        Probe("sweep: a sweep file with a nested list", ["sweep", "s.toml"], 2, None,
              setup=write("s.toml", SWEEP.replace("[0.001, 0.002]", "[[0.001], [0.002]]"))),
        Probe("sweep: a sweep file whose out is the config's folder", ["sweep", "s.toml"], 2, None,
              setup=write("s.toml", SWEEP.replace('out = "sw"', 'out = "."'))),
        Probe("sweep: a sweep file whose out is a file", ["sweep", "s.toml"], 2, None,
              setup=write("s.toml", SWEEP.replace('out = "sw"', 'out = "tiny.txt"'))),
        Probe("ablate: --out an existing run folder", ["ablate", "c.toml", "--out", GPT], 2, None),
        Probe("ablate: --out /", ["ablate", "c.toml", "--out", "/"], 2, None),
        Probe("ablate: --out empty means the default folder", ["ablate", "c.toml", "--out", ""], 0, None, allow=("runs",), timeout=120),
        Probe("ablate: a translation config beside a language-model config", ["ablate", "c.toml", "toy.toml", "--out", "ab"], 0, None, allow=("ab",), timeout=120),
        Probe("ablate: --out a symlink to /", ["ablate", "c.toml", "--out", "root"], 2, None, setup=symlink("/", "root")),
    ]
    return ps


def output_probes():
    ps = [
        Probe("output: data toy --out a folder", ["data", "toy", "--out", "runs"], 2, None),
        Probe("output: data toy --out a path under a file", ["data", "toy", "--out", "tiny.txt/x.txt"], 2, None),
        Probe("output: data toy --out empty", ["data", "toy", "--out", ""], 2, None),
        Probe("output: data toy --out with a trailing slash", ["data", "toy", "--out", "new/"], 2, None),
        Probe("output: data toy --out /proc/self/mem", ["data", "toy", "--out", "/proc/self/mem"], 2, None),
        Probe("output: data toy --out /dev/stdout writes stdout", ["data", "toy", "--out", "/dev/stdout", "--sentences", "3"], 0, None),
        Probe("output: data toy --out /dev/stderr", ["data", "toy", "--out", "/dev/stderr", "--sentences", "3"], 2, None),
        Probe("output: data toy --out a hard link of the corpus", ["data", "toy", "--out", "hl.txt", "--force"], 0, None, allow=("hl.txt",),
              setup=lambda d: os.link(os.path.join(d, "tiny.txt"), os.path.join(d, "hl.txt"))),
        Probe("output: data toy --out a symlink to a folder", ["data", "toy", "--out", "ln"], 2, None, setup=symlink("runs", "ln")),
        Probe("output: data toy --out a dangling link into /etc", ["data", "toy", "--out", "ln"], 2, None, setup=symlink("/etc/gptg-evil", "ln")),
        Probe("output: data toy --out --force over a symlink to the config (--force: by design)", ["data", "toy", "--out", "ln", "--force"], 0, None, allow=("c.toml",), setup=symlink("c.toml", "ln")),
        Probe("output: attention --out the model file (renamed .png)", ["attention", GPT, "--text", "Fi", "--out", "m.png"], 2, None,
              setup=lambda d: shutil.copy(os.path.join(d, GPTM), os.path.join(d, "m.png"))),
        Probe("output: attention --out a symlink to the model file (--force: by design)", ["attention", GPT, "--text", "Fi", "--out", "m.png", "--force"], 0, None, allow=(GPTM,),
              setup=symlink(GPTM, "m.png")),
        Probe("output: plot --out the run's own metrics (as .png link) (--force: by design)", ["plot", GPT, "--out", "l.png", "--force"], 0, None, allow=("runs/c/metrics.jsonl",),
              setup=symlink("runs/c/metrics.jsonl", "l.png")),
        Probe("output: graph --dot the corpus", ["graph", "c.toml", "--dot", "tiny.txt"], 2, None),
        Probe("output: graph --dot --force the corpus (--force: by design)", ["graph", "c.toml", "--dot", "tiny.txt", "--force"], 0, None, allow=("tiny.txt",)),
        Probe("output: graph --dot a path with a newline", ["graph", "c.toml", "--dot", "a\nb.dot"], 0, None, allow=("a\nb.dot",)),
        Probe("output: import --out into a missing folder", ["import", "nanogpt", "ckpt.pt", "--out", "no/such/x.safetensors"], 1, None),
        Probe("output: import --out --force the checkpoint (--force: by design)", ["import", "nanogpt", "ckpt.pt", "--out", "ckpt.pt", "--force"], 0, None, allow=("ckpt.pt",)),
        Probe("output: import --out --force a hard link of the checkpoint (--force: by design)", ["import", "nanogpt", "ckpt.pt", "--out", "hl.pt", "--force"], 0, None, allow=("hl.pt", "ckpt.pt"),
              setup=lambda d: os.link(os.path.join(d, "ckpt.pt"), os.path.join(d, "hl.pt"))),
        Probe("output: train --cpuprofile a symlink to the config (--force: by design)", ["train", "c.toml", "--cpuprofile", "p.prof", "--force", "--quiet"], 0, None, allow=("c.toml", GPT), setup=symlink("c.toml", "p.prof")),
        Probe("output: data pairs --out the run folder", ["data", "pairs", "toy.toml", "--out", TR], 2, None),
        Probe("output: data pairs --out a symlink to /", ["data", "pairs", "toy.toml", "--out", "root", "--force"], 2, "filesystem root", setup=symlink("/", "root")),
        Probe("output: train.out a symlink to another run (--force: by design)", ["train", "x.toml", "--force", "--quiet"], 0, None, allow=("runs/words",),
              setup=seq(write("x.toml", GPT_TOML.replace('"runs/c"', '"runs/ln"')), symlink("words", "runs/ln")),
              ),
        Probe("output: data export --out /dev/full", ["data", "export", "toy", "--out", "/dev/full"], 2, None),
    ]
    return ps


def flag_probes():
    ps = [
        Probe("flags: --tokens twice, the last wins", ["sample", GPT, "--tokens", "2", "--tokens", "3", "--prompt", "F"], 0, None),
        Probe("flags: a unicode flag name", ["sample", GPT, "--tökens", "3"], 2, None),
        Probe("flags: three dashes", ["sample", GPT, "---tokens", "3"], 2, None),
        Probe("flags: an empty flag name", ["sample", GPT, "--", "--tokens"], 2, None),
        Probe("flags: -- then a flag-like model name", ["sample", "--", "--tokens"], 2, "no such model"),
        Probe("flags: an empty argument as the model", ["sample", ""], 2, None),
        Probe("flags: --set empty", ["graph", "c.toml", "--set", ""], 2, None),
        Probe("flags: --set =x", ["graph", "c.toml", "--set", "=x"], 2, None),
        Probe("flags: --set model.=x", ["graph", "c.toml", "--set", "model.=x"], 2, None),
        Probe("flags: --set .=1", ["graph", "c.toml", "--set", ".=1"], 2, None),
        Probe("flags: --set a.b.c=1", ["graph", "c.toml", "--set", "model.heads.x=1"], 2, None),
        Probe("flags: --set model.heads=2=3", ["graph", "c.toml", "--set", "model.heads=2=3"], 2, None),
        Probe("flags: --set extends=x", ["graph", "c.toml", "--set", "extends=other.toml"], 2, None),
        Probe("flags: --set a table", ["graph", "c.toml", "--set", "model={heads=2}"], 2, None),
        Probe("flags: --set a TOML inline table value", ["graph", "c.toml", "--set", "model.heads={a=1}"], 2, None),
        Probe("flags: --set 10,000 times", ["graph", "c.toml"] + ["--set", "model.heads=2"] * 10000, 0, None),
        Probe("flags: --threads 2^64", ["sample", GPT, "--threads", "18446744073709551616"], 2, None),
        Probe("flags: --seed 2^64", ["sample", GPT, "--seed", "18446744073709551616"], 2, None),
        Probe("flags: --tokens 0x10", ["sample", GPT, "--tokens", "0x10", "--prompt", "F"], 0, None),
        Probe("flags: --temperature 1e-320 (subnormal)", ["sample", GPT, "--temperature", "1e-320", "--tokens", "5", "--prompt", "F"], 0, None),
        Probe("flags: --top-p 1e-300", ["sample", GPT, "--top-p", "1e-300", "--tokens", "5", "--prompt", "F"], 0, None),
        Probe("flags: --top-p NaN", ["sample", GPT, "--top-p", "NaN"], 2, None),
        Probe("flags: --prompt empty", ["sample", GPT, "--prompt", "", "--tokens", "3"], 2, "empty"),  # a wrong argument (round six)
        Probe("flags: --prompt longer than the context", ["sample", GPT, "--prompt", "First " * 200, "--tokens", "3"], 0, None),
        Probe("flags: --prompt of 10 MB", ["sample", GPT, "--prompt-file", "p.txt", "--tokens", "3"], 2, "limit", setup=write("p.txt", "First " * 2000000)),
        Probe("flags: --prompt-file /dev/stdin", ["sample", GPT, "--prompt-file", "/dev/stdin", "--tokens", "3"], 2, None, stdin="First"),
        Probe("flags: --prompt-file a folder", ["sample", GPT, "--prompt-file", "runs", "--tokens", "3"], 2, None),
        Probe("flags: --text empty", ["attention", GPT, "--text", ""], 2, None),
        Probe("flags: translate --text of 1 MB", ["translate", TR, "--text", "a1 " * 30000], 2, "reads at most", timeout=120),
        Probe("flags: translate a stdin line of 50 MB", ["translate", TR], 2, "stdin:1", stdin="a1 " * 17000000 + "\n", max_mb=1500, timeout=120),
        Probe("flags: translate stdin with NUL and invalid UTF-8", ["translate", TR], 2, "UTF-8", stdin=b"a1\x00a2\n\xff\xfe\n"),
        Probe("flags: translate --text of invalid UTF-8", [b"translate", TR.encode(), b"--text", b"a1 \xff"], 2, "UTF-8"),
        Probe("flags: translate --beam 64 --text of 4 words", ["translate", TR, "--beam", "64", "--text", "a1 " * 4], 0, None, timeout=120),
        Probe("flags: attention --text 5,000 characters on a context 8 model", ["attention", GPT, "--text", "First" * 1000], 0, None),
        Probe("flags: attention a translation run --target 1 MB", ["attention", TR, "--text", "a1", "--target", "b1 " * 30000], 2, None, max_mb=1500),
        Probe("flags: eval --show 1e6 on a translation run", ["eval", TR, "--show", "1000000"], 0, None, timeout=120),
        Probe("flags: inspect --vocab a translation run", ["inspect", TR, "--vocab"], 0, None),
        Probe("flags: help of every command", ["help", "translate"], 0, None),
        Probe("flags: data.path = builtin:../../etc/passwd", ["graph", "c.toml", "--set", "data.path=builtin:../../etc/passwd"], 2, "built-in"),
        Probe("flags: data export builtin ../ name", ["data", "export", "../../etc/passwd", "--out", "x.txt"], 2, None),
        Probe("flags: data toy --sentences 0", ["data", "toy", "--out", "t.txt", "--sentences", "0"], 2, None),
        Probe("flags: data toy --seed -1 (seeds are unsigned)", ["data", "toy", "--out", "t.txt", "--seed", "-1", "--sentences", "3"], 2, "-seed"),
        Probe("flags: serve --generations 1000", ["serve", "runs", "--generations", "1000"], 2, None),
        Probe("flags: serve --threads -1", ["serve", "runs", "--threads", "-1"], 2, None),
        Probe("flags: serve --time-limit 1e9h", ["serve", "runs", "--time-limit", "1000000000h"], 2, None),
        Probe("flags: sweep emit slurm --time 99999-00:00:00", ["sweep", "emit", "slurm", "sw", "--time", "99999-00:00:00"], None, None, setup=make_sweep, allow=("sw",)),
        Probe("flags: sweep emit slurm --memory 1e300", ["sweep", "emit", "slurm", "sw", "--memory", "1e300"], 2, None, setup=make_sweep),
        Probe("flags: sample --samples 1000 --tokens 1000000 (bounded work: refused or streamed)", ["sample", GPT, "--samples", "2", "--tokens", "1000000", "--prompt", "F"], 0, None, timeout=300),
        Probe("flags: eval --threads 4096", ["eval", GPT, "--threads", "4096"], 0, None, timeout=120),
        Probe("flags: inspect with 10,000 arguments", ["inspect"] + [GPT] * 10000, 2, None),
        Probe("flags: GPTG_MAX_MEMORY=-1", ["sample", GPT, "--tokens", "2"], 2, None, env={"GPTG_MAX_MEMORY": "-1"}),
        Probe("flags: GPTG_MAX_MEMORY=NaN", ["sample", GPT, "--tokens", "2"], 2, None, env={"GPTG_MAX_MEMORY": "NaN"}),
        Probe("flags: GPTG_MAX_MEMORY=1e308", ["sample", GPT, "--tokens", "2", "--prompt", "F"], 0, None, env={"GPTG_MAX_MEMORY": "1e308"}),
    ]
    return ps


def signal_at(sig, delay, wait_for=None):
    def during(d, proc):
        t0 = time.time()
        if wait_for:
            while time.time() - t0 < 30 and not os.path.exists(os.path.join(d, wait_for)):
                time.sleep(0.005)
        time.sleep(delay)
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass
    return during


def no_temp_files(d, code, out, err):
    left = []
    for root, dirs, files in os.walk(d):
        for n in files + dirs:
            if ".tmp" in n:
                left.append(os.path.relpath(os.path.join(root, n), d))
    return "temporary files left: %s" % left if left else None


def no_orphans(d, code, out, err):
    """No process is left running in the probe folder (a child gptg train
    of an interrupted ablate or sweep)."""
    time.sleep(0.5)
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/cwd" % pid).startswith(d):
                left.append(pid)
        except OSError:
            pass
    for pid in left:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    return "processes left running: %s" % left if left else no_temp_files(d, code, out, err)


def signal_probes():
    BIG = GPT_TOML.replace("max_steps = 3", "max_steps = 400").replace('"runs/c"', '"runs/sig"')
    ps = []
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 130)):
        for delay in (0.0, 0.05, 0.3):
            ps.append(Probe("signals: %s after %.2f s of data toy (200k sentences)" % (signal.Signals(sig).name, delay),
                            ["data", "toy", "--out", "t.txt", "--sentences", "200000"], None, None,
                            during=signal_at(sig, delay), allow=("t.txt",), check=no_temp_files))
            ps.append(Probe("signals: %s after %.2f s of import" % (signal.Signals(sig).name, delay),
                            ["import", "nanogpt", "ckpt.pt", "--out", "x.safetensors"], None, None,
                            during=signal_at(sig, delay), allow=("x.safetensors",), check=no_temp_files))
            ps.append(Probe("signals: %s after %.2f s of data pairs" % (signal.Signals(sig).name, delay),
                            ["data", "pairs", "toy.toml", "--out", "dp"], None, None,
                            during=signal_at(sig, delay), allow=("dp",), check=no_temp_files))
            ps.append(Probe("signals: %s after %.2f s of a translation training" % (signal.Signals(sig).name, delay),
                            ["train", "x.toml"], None, None, setup=write("x.toml", TRB.replace("max_steps = 5", "max_steps = 3000")),
                            during=signal_at(sig, delay), allow=("runs/t2",), check=no_temp_files, timeout=120))
            ps.append(Probe("signals: %s after %.2f s of attention --out" % (signal.Signals(sig).name, delay),
                            ["attention", GPT, "--text", "First Citizen", "--out", "a.svg"], None, None,
                            during=signal_at(sig, delay), allow=("a.svg",), check=no_temp_files))
    LONG = GPT_TOML.replace("max_steps = 3", "max_steps = 3000")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        name = signal.Signals(sig).name
        ps.append(Probe("signals: %s after 1.5 s of ablate --seeds 2 --jobs 2: no child left" % name,
                        ["ablate", "long.toml", "--seeds", "2", "--jobs", "2", "--out", "ab"], None, None,
                        setup=write("long.toml", LONG), during=signal_at(sig, 1.5), allow=("ab",), check=no_orphans, timeout=120))
        ps.append(Probe("signals: %s after 1.5 s of sweep run --jobs 2: no child left" % name,
                        ["sweep", "run", "sw", "--jobs", "2"], None, None,
                        setup=lambda d: (open(os.path.join(d, "c.toml"), "w").write(LONG), make_sweep(d)),
                        during=signal_at(sig, 1.5), allow=("sw",), check=no_orphans, timeout=120))
        ps.append(Probe("signals: %s after 1 s of a language-model training" % name,
                        ["train", "long.toml"], None, None, setup=write("long.toml", LONG.replace('"runs/c"', '"runs/long"')),
                        during=signal_at(sig, 1.0), allow=("runs/long",), check=no_orphans, timeout=120))
    return ps


def mount_full(size):
    def setup(d):
        p = os.path.join(d, "full")
        os.makedirs(p, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", p], check=True)
    return setup


def no_partial(name):
    """After a disk-full failure: no temporary file, and name (if given)
    absent or complete (the probes' outputs are never written half)."""
    def check(d, code, out, err):
        t = no_temp_files(d, code, out, err)
        if t:
            return t
        if name and code != 0 and os.path.lexists(os.path.join(d, name)):
            return "%s left behind after a failure" % name
    return check


def disk_full_probes():
    if os.geteuid() != 0:
        return []  # mounting a small tmpfs needs root; the script says so in its totals
    FULL = ("full",)
    ps = [
        Probe("disk full: data toy --out", ["data", "toy", "--out", "full/t.txt", "--sentences", "200000"], 1, "space",
              setup=mount_full("64k"), allow=FULL, check=no_partial("full/t.txt")),
        Probe("disk full: data export --out", ["data", "export", "tinyshakespeare", "--out", "full/t.txt"], 1, "space",
              setup=mount_full("64k"), allow=FULL, check=no_partial("full/t.txt")),
        Probe("disk full: import --out", ["import", "nanogpt", "ckpt.pt", "--out", "full/x.safetensors"], 1, "space",
              setup=mount_full("32k"), allow=FULL, check=no_partial("full/x.safetensors")),
        Probe("disk full: attention --out", ["attention", GPT, "--text", "First Citizen", "--out", "full/a.svg"], 1, "space",
              setup=mount_full("4k"), allow=FULL, check=no_partial("full/a.svg")),
        Probe("disk full: graph --dot", ["graph", "c.toml", "--dot", "full/g.dot"], 1, "space",
              setup=mount_full("4k"), allow=FULL, check=no_partial("full/g.dot")),
        Probe("disk full: plot --out", ["plot", GPT, "--out", "full/l.png"], 1, "space",
              setup=mount_full("4k"), allow=FULL, check=no_partial("full/l.png")),
        Probe("disk full: data pairs --out", ["data", "pairs", "toy.toml", "--out", "full/dp"], 1, "space",
              setup=mount_full("16k"), allow=FULL, check=no_partial(None)),
        Probe("disk full: train a translation run", ["train", "x.toml", "--quiet"], 1, "space",
              setup=seq(mount_full("12k"), write("x.toml", TRB.replace('"runs/t2"', '"full/run"'))), allow=FULL, check=no_partial(None)),
        Probe("disk full: train a language model", ["train", "x.toml", "--quiet"], 1, "space",
              setup=seq(mount_full("40k"), write("x.toml", GPT_TOML.replace('"runs/c"', '"full/run"'))), allow=FULL, check=no_partial(None)),
        Probe("disk full: sweep s.toml", ["sweep", "s.toml"], 1, "space",
              setup=seq(mount_full("4k"), write("s.toml", SWEEP.replace('out = "sw"', 'out = "full/sw"') + '"train.epochs" = [' + ", ".join(str(1 + i) for i in range(300)) + "]\n")),
              allow=FULL, check=no_partial(None)),
        Probe("disk full: ablate --out", ["ablate", "c.toml", "--out", "full/ab", "--seeds", "2"], 1, "space",
              setup=mount_full("40k"), allow=FULL, check=no_partial(None), timeout=120),
    ]
    return ps


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(port, method, path, body=None, timeout=30):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(2 << 20)
    except urllib.error.HTTPError as e:
        return e.code, e.read(1 << 16)
    except Exception as e:
        return None, repr(e).encode()


def serve_probes(fixtures, work):
    """Requests to one gptg serve of the fixture runs: each its own probe.
    Returns [(name, why-or-None)]."""
    d = os.path.join(work, "p")  # where the fixtures were trained: see main
    if os.path.exists(d):
        unmount_under(d)
        subprocess.run(["chmod", "-R", "u+rwx", d])
        shutil.rmtree(d)
    shutil.copytree(fixtures, d, symlinks=True)
    os.remove(os.path.join(d, "runs/words/.gptg.lock"))
    os.mkfifo(os.path.join(d, "runs/words/.gptg.lock"))  # must not block the run list
    before = snapshot(d)
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "runs", "--addr", "127.0.0.1:%d" % port], cwd=d, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    for _ in range(300):
        if http(port, "GET", "/api/runs", timeout=2)[0] == 200:
            break
        time.sleep(0.05)
    gen = lambda **kw: ("POST", "/api/generate", json.dumps(kw).encode())
    cases = [
        ("id with ../ leaving the folder", ("GET", "/api/run?id=runs/../../etc", None), (400, 404)),
        ("id with an encoded ..", ("GET", "/api/run?id=runs%2F%2E%2E%2F%2E%2E", None), (400, 404)),
        ("id absolute", ("GET", "/api/run?id=/etc", None), (400, 404)),
        ("id with a NUL", ("GET", "/api/run?id=runs/c%00", None), (400, 404)),
        ("id of invalid UTF-8", ("GET", "/api/run?id=runs/%ff", None), (400, 404)),
        ("id the served folder itself", ("GET", "/api/run?id=runs", None), (400, 404)),
        ("id a run's file", ("GET", "/api/run?id=runs/c/model.safetensors", None), (400, 404)),
        ("a query of 1 MB", ("GET", "/api/run?id=" + "a" * (1 << 20), None), (400, 414, 431)),
        ("the id given twice", ("GET", "/api/run?id=runs/c&id=runs/toy", None), (200, 400)),
        ("a path with ..", ("GET", "/../../etc/passwd", None), (400, 404)),
        ("metrics of a language-model run", ("GET", "/api/metrics?id=runs/c", None), (200,)),
        ("metrics of a translation run", ("GET", "/api/metrics?id=runs/toy", None), (200,)),
        ("live of a missing run", ("GET", "/api/live?id=runs/nope", None), (404,)),
        ("summary of a missing run", ("GET", "/api/summary?id=runs/nope", None), (404,)),
        ("compare of a run (not a comparison)", ("GET", "/api/compare?id=runs/c", None), (400, 404)),
        ("attention with text of 1 MB", ("GET", "/api/attention?id=runs/c&text=" + "F" * (1 << 20), None), (400, 414, 431)),
        ("attention with text outside the vocabulary", ("GET", "/api/attention?id=runs/c&text=%E2%82%AC", None), (400,)),
        ("attention with empty text", ("GET", "/api/attention?id=runs/c&text=", None), (400,)),
        ("attention with invalid UTF-8", ("GET", "/api/attention?id=runs/c&text=%ff", None), (400,)),
        ("attention on a translation run with a target of 500 words", ("GET", "/api/attention?id=runs/toy&text=a1&target=" + "b1+" * 500, None), (200, 400)),
        ("attention on a translation run with target invalid UTF-8", ("GET", "/api/attention?id=runs/toy&text=a1&target=%ff", None), (400,)),
        ("generate tokens -1", gen(id="runs/c", prompt="F", tokens=-1), (400,)),
        ("generate tokens 2^62", gen(id="runs/c", prompt="F", tokens=1 << 62), (400,)),
        ("generate tokens 2^64 (overflows int)", ("POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":18446744073709551616}'), (400,)),
        ("generate temperature NaN (not JSON)", ("POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":2,"temperature":NaN}'), (400,)),
        ("generate temperature 1e309", ("POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":2,"temperature":1e309}'), (400,)),
        ("generate temperature -0", gen(id="runs/c", prompt="F", tokens=2, temperature=-0.0), (200,)),
        ("generate top_k 2^62", gen(id="runs/c", prompt="F", tokens=2, top_k=1 << 62), (200, 400)),
        ("generate top_p -0.5", gen(id="runs/c", prompt="F", tokens=2, top_p=-0.5), (400,)),
        ("generate seed -1", ("POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":2,"seed":-1}'), (400,)),
        ("generate an unknown field", ("POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":2,"turbo":1}'), (400,)),
        ("generate two JSON objects", ("POST", "/api/generate", b'{"id":"runs/c","prompt":"F","tokens":2}{"id":"x"}'), (200, 400)),
        ("generate a body of 20 MB (refused early: 413 or the connection closed)", ("POST", "/api/generate", b'{"id":"runs/c","prompt":"' + b"F" * (20 << 20) + b'","tokens":2}'), (400, 413, None)),
        ("generate a prompt outside the vocabulary", gen(id="runs/c", prompt="\u20ac", tokens=2), (200, 400)),
        ("generate a prompt of invalid UTF-8", ("POST", "/api/generate", b'{"id":"runs/c","prompt":"\xff","tokens":2}'), (200, 400)),
        ("generate a prompt of 64 KB (over the body limit)", gen(id="runs/c", prompt="First " * 11000, tokens=2), (400, 413)),
        ("generate with GET", ("GET", "/api/generate?id=runs/c", None), (405,)),
        ("generate on a translation run, beam 1000", gen(id="runs/toy", prompt="a1 a2", tokens=3, beam=1000), (400,)),
        ("generate on a translation run, beam -1", gen(id="runs/toy", prompt="a1 a2", tokens=3, beam=-1), (400,)),
        ("generate on a translation run, an empty prompt", gen(id="runs/toy", prompt="", tokens=3), (200, 400)),
        ("generate on a translation run, 2,000 words", gen(id="runs/toy", prompt="a1 " * 2000, tokens=3), (200, 400)),
        ("generate on the served folder", gen(id="runs", prompt="F", tokens=2), (400, 404)),
    ]
    results = []
    for name, (method, path, body), want in cases:
        st, b = http(port, method, path, body)
        ok = st in want
        why = None if ok else "HTTP %s, want %s: %s" % (st, want, b[:200])
        results.append(("serve: " + name, why))
    # Many generations at once: 200 or 429, never 5xx, and the server lives.
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(40) as ex:
        sts = list(ex.map(lambda i: http(port, *gen(id="runs/c", prompt="F", tokens=200, seed=i))[0], range(40)))
    bad = [s for s in sts if s not in (200, 429)]
    results.append(("serve: 40 generations at once", None if not bad else "statuses %s" % sorted(set(map(str, sts)))))
    with concurrent.futures.ThreadPoolExecutor(20) as ex:
        sts = list(ex.map(lambda i: http(port, "GET", "/api/attention?id=runs/%s&text=%s" % (("c", "First") if i % 2 else ("toy", "a1+a2")))[0], range(40)))
    bad = [s for s in sts if s not in (200, 429)]
    results.append(("serve: 40 attention maps at once, both kinds", None if not bad else "statuses %s" % sorted(set(map(str, sts)))))
    # A run folder that changes under the server.
    with open(os.path.join(d, "runs/c/metrics.jsonl"), "a") as f:
        f.write("{broken\n")
    st, _ = http(port, "GET", "/api/metrics?id=runs/c")
    results.append(("serve: metrics after a broken row was appended", None if st in (200, 422, 500) and st != 500 else "HTTP %s" % st))
    os.remove(os.path.join(d, "runs/toy/model.safetensors"))
    st, _ = http(port, "GET", "/api/attention?id=runs/toy&text=a1")
    results.append(("serve: attention after the model file was deleted", None if st in (404, 409, 410, 400) else "HTTP %s" % st))
    with open(os.path.join(d, "runs/toy/model.safetensors"), "wb") as f:
        f.write(b"garbage")
    st, _ = http(port, "GET", "/api/attention?id=runs/toy&text=a1")
    results.append(("serve: attention after the model file became garbage", None if st is not None and 400 <= st < 500 else "HTTP %s" % st))
    alive = http(port, "GET", "/api/runs")[0] == 200
    results.append(("serve: still answering after all of the above", None if alive else "no answer"))
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=20)
        code = proc.returncode
        errs = err.decode("utf-8", "replace")
        why = None
        if "panic" in errs or "goroutine " in errs:
            why = "a trace: " + errs[:300]
        elif code not in (0, 130):
            why = "exit %s after SIGINT: %s" % (code, errs[:200])
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        why = "hang: still running 20 s after SIGINT"
    results.append(("serve: SIGINT stops it cleanly", why))
    after = snapshot(d)
    changed = [r for r in sorted(set(before) | set(after)) if before.get(r) != after.get(r)
               and r not in ("runs/c/metrics.jsonl", "runs/toy/model.safetensors")]
    results.append(("serve: writes nothing into the run folders", "changed: %s" % changed if changed else None))
    return results


def extra_modules():
    """The other files' probes: every testdata/hostile/probes_*.py, each with
    probes(h) returning a list of h.Probe (h is this module, for its helpers)."""
    import glob
    import importlib.util
    mods = []
    for path in sorted(glob.glob(os.path.join(HERE, "probes_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods


def all_probes():
    ps = (exit_code_probes() + tokenizer_probes() + config_probes() + tsv_probes() + safetensors_probes()
          + nanogpt_probes() + run_folder_probes() + output_probes() + flag_probes() + signal_probes()
          + disk_full_probes())
    me = sys.modules[__name__]
    for mod in extra_modules():
        if hasattr(mod, "probes"):
            ps += mod.probes(me)
    return ps


def main():
    global BIN
    argv = sys.argv[1:]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        sys.exit(0 if argv else 2)
    if argv[0].startswith("-") or not os.access(argv[0], os.X_OK) or os.path.isdir(argv[0]):
        sys.exit("probe.py: the first argument must be the gptg binary to probe, not %r (see --help)" % argv[0])
    known = {"--only", "--list", "--keep", "--sandbox"}
    for i, a in enumerate(argv[1:], 1):
        if a.startswith("-") and a not in known and argv[i - 1] not in ("--only", "--sandbox"):
            sys.exit("probe.py: unknown flag %r (see --help)" % a)
    if "--only" in argv and argv.index("--only") + 1 >= len(argv):
        sys.exit("probe.py: --only needs a text: probes whose name contains it run")
    global SANDBOX
    if "--sandbox" in argv:
        if argv.index("--sandbox") + 1 >= len(argv) or "{dir}" not in argv[argv.index("--sandbox") + 1]:
            sys.exit("probe.py: --sandbox needs a command line holding {dir}, e.g. --sandbox '/work/sandbox {dir}'")
        SANDBOX = argv[argv.index("--sandbox") + 1]
    BIN = os.path.abspath(argv[0])
    if SANDBOX and (BIN + "/").startswith("/tmp/"):
        sys.exit("probe.py: with --sandbox the binary must lie outside /tmp (a sandbox's /tmp is its own): copy it elsewhere")
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    ps = [p for p in all_probes() if only is None or only in p.name]
    if "--list" in argv:
        for i, p in enumerate(ps, 1):
            args = [a.decode("utf-8", "replace") if isinstance(a, bytes) else a for a in p.args] if not callable(p.args) else ["(computed)"]
            print("%d. %s: gptg %s → exit %s%s" % (i, p.name, " ".join(args)[:120], p.code,
                                                     (", " + repr(p.msg)) if p.msg else ""))
        return
    work = tempfile.mkdtemp(prefix="gptg-probe-")
    # The runs record their corpus's absolute path, which eval and --resume
    # read first: the fixtures are trained in the folder every probe runs in
    # (work/p) and moved aside, so that a probe editing its copy of a corpus
    # edits the file its runs recorded, and a write there is in the snapshot.
    fixtures = os.path.join(work, "fixtures")
    make_fixtures(os.path.join(work, "p"))
    os.rename(os.path.join(work, "p"), fixtures)
    wrong, not_run = [], []
    i = 0
    for i, p in enumerate(ps, 1):
        try:
            why = run_probe(p, fixtures, work)
        except NotRun as e:
            print("%3d not run %s: %s" % (i, p.name, e), flush=True)
            not_run.append(p.name)
            continue
        except Exception as e:  # a probe that cannot be set up is a bug of the script
            why = "probe error: %r" % (e,)
        print("%3d %s %s%s" % (i, "ok   " if why is None else "WRONG", p.name, "" if why is None else ": " + why), flush=True)
        if why:
            wrong.append(p.name)
    serves = [] if only is not None and "serve" not in only else [serve_probes] + [
        mod.serve_probes for mod in extra_modules() if hasattr(mod, "serve_probes")]
    if SANDBOX and serves:
        print("(the serve probes do not run with --sandbox: they start gptg themselves)")
        serves = []
    for serve in serves:
        for name, why in (serve(fixtures, work) if serve is serve_probes else serve(sys.modules[__name__], fixtures, work)):
            ps.append(name)
            i += 1
            print("%3d %s %s%s" % (i, "ok   " if why is None else "WRONG", name, "" if why is None else ": " + why), flush=True)
            if why:
                wrong.append(name)
    if os.geteuid() != 0:
        print("(disk-full probes skipped: mounting a small tmpfs needs root)")
    unmount_under(work)
    print("\n%d probes, %d answered correctly, %d wrong, %d not run" % (len(ps), len(ps) - len(wrong) - len(not_run), len(wrong), len(not_run)))
    if "--keep" not in argv:
        subprocess.run(["chmod", "-R", "u+rwx", work])
        shutil.rmtree(work)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
