"""Fixed caps and memory checks under a
process limit, each just below and just above the need.

Every limit is set from what gptg itself counts as taken: `used` runs a
config whose training needs 3 GiB under a generous ulimit -v and subtracts
the headroom its refusal reports, so "used + X" leaves the process about X
whatever the Go runtime reserves on this machine. Under /work/cgrun (a
cgroup memory limit around the whole probe run) the same probes check the
one-line refusals against the cgroup's limit instead.

Loaded by probe.py; run inside the sandbox only:
    /work/sandbox DIR python3 testdata/hostile/probe.py BIN --only memcaps
"""

import os
import subprocess

# used: the address space gptg counts as taken (KiB), from its own refusal.
USED = r"""
printf '[data]\npath = "builtin:tinyshakespeare"\n[model]\ncontext = 512\nembedding = 256\nblocks = 4\nheads = 8\n[train]\nbatch = 32\n' > o/huge.toml
# The refusal gives the headroom in MiB below 1 GiB (GiB, rounded, above):
# try limits until one leaves less than 1 GiB (a build without cgo reserves
# less address space than one with it).
for L in 2600000 2300000 2100000 1900000; do
  H=$( (ulimit -v $L; $G graph o/huge.toml 2>&1) | sed -n 's/.*may still use (\([0-9]*\) MiB, under ulimit -v.*/\1/p')
  [ -n "$H" ] && [ "$H" -gt 0 ] && break
done
[ -n "$H" ] || { echo "no headroom in the refusal" >&2; exit 99; }
U=$((L - H * 1024))
lim(){ echo $((U + $1 * 1024)); }
"""


def sh(body):
    return "mkdir -p o\n" + USED + body


def pairs_file(path, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write("a%d\tb%d\n" % (i % 997, i % 997))


PAIRS_TOML = '[data]\nformat = "pairs"\npath = "p.tsv"\nsplit = 0.5\n[model]\narch = "encoder-decoder"\nnorm = "post"\n'
BIG_TOML = ('[data]\npath = "builtin:tinyshakespeare"\n[model]\ncontext = 32\nembedding = 8\nblocks = 1\nheads = 2\n'
            '[train]\nbatch = 4096\nmax_steps = 1\neval_batches = 1\n[sample]\nprompt = "F"\n')
ATT_TOML = ('[data]\npath = "builtin:tinyshakespeare"\n[model]\ncontext = 128\nembedding = 16\nblocks = 1\nheads = 4\n'
            '[train]\nbatch = 2\nmax_steps = 1\neval_batches = 1\nout = "att"\n')
TEXT128 = ("To be, or not to be: that is the question. " * 3)[:128]


def probes(h):
    P = h.Probe

    def write(files, train=()):
        def setup(d):
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            for args in train:
                subprocess.run([h.BIN] + list(args), cwd=d, capture_output=True, check=True)
        return setup

    def pairs(n):
        def setup(d):
            with open(os.path.join(d, "p.toml"), "w") as f:
                f.write(PAIRS_TOML)
            pairs_file(os.path.join(d, "p.tsv"), n)
        return setup

    big = write({"big.toml": BIG_TOML}, [("ablate", "big.toml", "--out", "ab")])
    att = write({"att.toml": ATT_TOML}, [("train", "att.toml", "--quiet")])
    corpus = write({"c.txt": "the quick brown fox jumps over the lazy dog\n" * 2_800_000,
                    "c.toml": '[data]\npath = "c.txt"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n'})
    small = write({"s.toml": '[data]\npath = "builtin:tinyshakespeare"\n[train]\nmax_steps = 3\neval_batches = 2\nout = "o/s"\n'})
    return [
        # A run's config.toml is not a training check: 150 MiB is far less
        # than its training (350 MiB) and plenty for sampling it.
        P("memcaps: sample of a run whose training needs more than the process may take", [], 0, setup=big,
          shell=sh("ulimit -v $(lim 150); exec $G sample ab/big --tokens 5"), allow=("o",), timeout=180),
        P("memcaps: eval of that run", [], 0, setup=big,
          shell=sh("ulimit -v $(lim 150); exec $G eval ab/big --batch 4"), allow=("o",), timeout=180),
        P("memcaps: attention of that run", [], 0, setup=big,
          shell=sh("ulimit -v $(lim 150); exec $G attention ab/big --text First"), allow=("o",), timeout=180),
        P("memcaps: ablate of that finished folder only measures it again (no failed run)", [], 0, setup=big,
          shell=sh("rm -f ab/big/ablate.json; ulimit -v $(lim 150); $G ablate big.toml --out ab > o/out; rc=$?; "
                   "grep -q 'Failed runs' o/out && { echo failed run reported >&2; exit 98; }; exit $rc"),
          allow=("o", "ab"), timeout=180),
        P("memcaps: ablate --force of it: its training refused up front", [], 2, "more than this process may still use", setup=big,
          shell=sh("ulimit -v $(lim 150); exec $G ablate big.toml --out ab --force"), allow=("o",), timeout=180),
        # Pairs: held up to 512 MiB by their own bound, now to what the
        # process may still hold.
        P("memcaps: pairs file past the headroom (900k pairs, 300 MiB left)", [], 2, "this process may still hold under ulimit -v",
          setup=pairs(900_000), shell=sh("ulimit -v $(lim 300); exec $G data pairs p.toml"), allow=("o",), timeout=180),
        P("memcaps: the lines that refusal names read under the same limit", [], 0, setup=pairs(900_000),
          shell=sh("N=$( (ulimit -v $(lim 300); $G data pairs p.toml 2>&1) | sed -n 's/.*head -n \\([0-9]*\\).*/\\1/p'); "
                   "[ -n \"$N\" ] || exit 97; head -n $N p.tsv > o/p.tsv && mv o/p.tsv p.tsv && ulimit -v $(lim 300) && exec $G data pairs p.toml"),
          allow=("o", "p.tsv"), timeout=180),
        P("memcaps: pairs with room enough (900k pairs, 800 MiB left)", [], 0, setup=pairs(900_000),
          shell=sh("ulimit -v $(lim 800); exec $G data pairs p.toml"), allow=("o",), timeout=180),
        # A text corpus's ids: 2 bytes a token.
        # (Session 12: the training estimate counts the ids and the windows'
        # order from the file's size, so graph refuses it up front, exit 2.)
        P("memcaps: corpus whose ids exceed the headroom (235 MiB, 150 MiB left)", [], 2, "data 446 MiB) plus 64 MiB for the Go runtime and 256 KiB of address space its graphs reserve unwritten, more than this process may still use",
          setup=corpus, shell=sh("ulimit -v $(lim 150); exec $G graph c.toml"), allow=("o",), timeout=180, max_mb=3000),
        P("memcaps: the same corpus with 640 MiB left", [], 0, setup=corpus,
          shell=sh("ulimit -v $(lim 640); exec $G graph c.toml"), allow=("o",), timeout=180, max_mb=3000),
        # Attention pictures: 65,536 cells of .png take about 500 MB.
        P("memcaps: attention png past the headroom (128 tokens, 300 MiB left)", [], 2, "more than this process may still use (under ulimit -v",
          setup=att, shell=sh("ulimit -v $(lim 300); exec $G attention att --text '%s' --out a.png" % TEXT128), allow=("o",), timeout=180),
        P("memcaps: the tokens that refusal names draw under the same limit", [], 0, setup=att,
          shell=sh("N=$( (ulimit -v $(lim 300); $G attention att --text '%s' --out a.png 2>&1) | sed -n 's/.*at most \\([0-9]*\\) tokens.*/\\1/p'); "
                   "[ -n \"$N\" ] || exit 97; ulimit -v $(lim 300); exec $G attention att --text \"$(printf %%s '%s' | head -c $N)\" --out a.png" % (TEXT128, TEXT128)),
          allow=("o", "a.png"), timeout=180),
        # Training: just below the estimate and the heap arena kept under
        # ulimit -v (64 MiB) refused in one line, just above trained to the end.
        P("memcaps: training short of its estimate and arena: one line", [], 2, "more than this process may still use", setup=small,
          shell=sh("E=$($G graph s.toml | sed -n 's/.*estimate for training: about \\([0-9]*\\) MiB.*/\\1/p'); ulimit -v $(lim $((E + 32))); exec $G train s.toml --quiet"),
          allow=("o",), timeout=180),
        P("memcaps: training 96 MiB above its estimate: trains", [], 0, setup=small,
          shell=sh("E=$($G graph s.toml | sed -n 's/.*estimate for training: about \\([0-9]*\\) MiB.*/\\1/p'); ulimit -v $(lim $((E + 96))); exec $G train s.toml --quiet"),
          allow=("o",), timeout=180),
        # The Go runtime's own minimum (docs/architecture.md): gptg version
        # starts at 1,400,000 KiB.
        P("memcaps: gptg version under ulimit -v 1400000", [], 0, shell="ulimit -v 1400000; exec $G version"),
    ]
