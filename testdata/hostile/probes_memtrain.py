"""Training's memory estimate under a
cgroup memory limit and ulimit -v.

The estimate is what training adds (weights, AdamW's moments, each
shard's memory of activations and the gradients lent from it, the corpus's
ids and window order); the check keeps 64 MiB more under ulimit -v (a heap
arena) and the address space the graphs' chunks reserve unwritten (up to
64 MiB a shard), and 16 MiB under a cgroup. So
a tiny model trains in a small cgroup (the fixed 64 MiB "running program"
allowance refused it at 4.6 times its use), a float64 training accepted at
its smallest ulimit -v never crashes, a translation training too big for the
cgroup is refused before its graphs, and a sweep plan is not checked
against this machine. Real cgroups: run as root outside the sandbox,

    python3 testdata/hostile/probe.py BIN --only memtrain --sandbox '/work/sandbox {dir}'

(cgroup probes are "not run" where no cgroup can be made). The kernel's OOM
kill (exit 137) shows as a WRONG probe.
"""

import os

MiB = 1 << 20

SHAKESPEARE = '[data]\npath = "builtin:tinyshakespeare"\n[train]\nmax_steps = 2\neval_batches = 1\nout = "o/r"\n'
# 240 MiB (peak RSS 232 MB), two shards: 128 MiB of chunk tails under ulimit -v
EMB256 = ('[data]\npath = "builtin:tinyshakespeare"\n[model]\nembedding = 256\nblocks = 4\nheads = 4\ncontext = 128\n'
          '[train]\nbatch = 16\nmax_steps = 2\neval_batches = 1\nout = "o/r"\n')
# 185 MiB (peak RSS 195 MB), two shards: 128 MiB of chunk tails; the float64 config an
# estimate without room for its address space crashed 1 of 3
F64 = ('[data]\npath = "builtin:tinyshakespeare"\n[model]\nembedding = 128\nheads = 8\ncontext = 256\ndtype = "float64"\n'
       '[train]\nbatch = 8\nmax_steps = 2\neval_batches = 1\nout = "o/r"\n')
# en-es at 128: 228 MiB once the vocabularies are known (peak RSS 221 MB)
EN_ES = ('[data]\nformat = "pairs"\npath = "builtin:bible-en-es"\ntokenizer = "word"\nmin_count = 2\nmax_source = 24\nmax_target = 32\n'
         '[model]\narch = "encoder-decoder"\nembedding = 128\nheads = 4\nencoder_blocks = 2\ndecoder_blocks = 2\nff_hidden = 512\n'
         'norm = "post"\npositions = "sinusoidal"\n[train]\nbatch = 32\nmax_steps = 2\nout = "o/r"\n')
BIG_BATCH = ('[data]\npath = "builtin:tinyshakespeare"\n[model]\ncontext = 32\nembedding = 8\nblocks = 1\nheads = 2\n'
             '[train]\nbatch = 4096\nmax_steps = 1\n')

# used: the address space gptg counts as taken (KiB), from its own refusal
# of a 3 GiB training (tried at rising limits until the line says MiB).
USED = r"""
mkdir -p o
printf '[data]\npath = "builtin:tinyshakespeare"\n[model]\ncontext = 512\nembedding = 256\nblocks = 4\nheads = 8\n[train]\nbatch = 32\n' > o/huge.toml
for L in 1800000 2000000 2200000 2400000; do
  H=$( (ulimit -v $L; $G graph o/huge.toml 2>&1) | sed -n 's/.*may still use (\([0-9]*\) MiB, under ulimit -v.*/\1/p')
  [ -n "$H" ] && break
done
[ -n "$H" ] || { echo "no headroom in the refusal" >&2; exit 99; }
U=$((L - H * 1024))
lim(){ echo $((U + $1 * 1024)); }
est(){ $G graph "$1" | sed -n 's/.*estimate for training: about \([0-9]*\) MiB.*/\1/p'; }
"""


def probes(h):
    P = h.Probe

    def write(files):
        def setup(d):
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
        return setup

    def C(name, toml, code, msg, cgroup, timeout=300):
        return P("memtrain: " + name, [], code, msg, setup=write({"c.toml": toml}), allow=("o",),
                 shell="exec $G train c.toml --quiet", timeout=timeout, max_mb=1 << 20, cgroup=cgroup)

    return [
        # --- under a cgroup: no fixed 64 MiB for the running program
        C("the seed's training in a 48 MiB cgroup (needs ~14; refused before at 89)", SHAKESPEARE, 0, None, 48 * MiB),
        C("embedding 256, 4 blocks in a 250 MiB cgroup: refused up front", EMB256, 2, "more than this process may still use", 250 * MiB),
        C("the same in a 400 MiB cgroup: trains", EMB256, 0, None, 400 * MiB),
        C("float64, context 256 in a 290 MiB cgroup: trains", F64, 0, None, 290 * MiB),
        C("en-es translation in a 200 MiB cgroup: refused once the vocabularies are known", EN_ES, 2,
          "more than this process may still use", 200 * MiB),
        C("en-es translation in a 300 MiB cgroup: trains", EN_ES, 0, None, 300 * MiB),
        # --- under ulimit -v: a heap arena kept back, so the smallest
        # accepted limit runs (3 times; session 11's estimate crashed 1 of 3)
        P("memtrain: float64 training at its estimate + the arena + its chunks' tails + 8 MiB under ulimit -v, 3 runs", [], 0,
          setup=write({"c.toml": F64}), allow=("o",), timeout=600, max_mb=1 << 20,
          shell=USED + "E=$(est c.toml); [ -n \"$E\" ] || exit 97\n"
                       "for i in 1 2 3; do (ulimit -v $(lim $((E + 72 + 128))); exec $G train c.toml --quiet --force) || exit $?; done"),
        P("memtrain: the same 48 MiB short: one line", [], 2, "more than this process may still use",
          setup=write({"c.toml": F64}), allow=("o",), timeout=300, max_mb=1 << 20,
          shell=USED + "E=$(est c.toml); [ -n \"$E\" ] || exit 97\nulimit -v $(lim $((E + 16 + 128))); exec $G train c.toml --quiet"),
        # --- a sweep plan may run on a cluster: not checked against here
        P("memtrain: sweep plan of a 174 MiB training under 150 MiB of ulimit -v headroom", [], 0,
          setup=write({"big.toml": BIG_BATCH, "s.toml": 'configs = ["big.toml"]\nout = "o/sw"\n[set]\n"train.lr" = [0.001, 0.003]\n'}),
          allow=("o",), timeout=120,
          shell=USED + "ulimit -v $(lim 150); exec $G sweep s.toml"),
    ]
