"""The command line (names start "hcli"): sweep grids and their
Slurm/Kubernetes files, ablate, data toy/pairs, plot, graph --dot, output
flags given links, devices, inputs and odd paths, flags at their extremes,
the environment (HOME, TMPDIR, LANG, cluster variables, a removed working
folder), closed and broken pipes, and resource limits (ulimit -f, -n).

Loaded by probe.py (probes(h), h being probe.py itself). Every probe here is
a variant that neither probe.py nor the cmd/gptg tests try.
"""

import json
import os
import subprocess

QUICK = ["--set", "train.max_steps=2"]


def probes(h):
    P, write, symlink, mkfifo, mkdir, seq = h.Probe, h.write, h.symlink, h.mkfifo, h.mkdir, h.seq
    GPT, GPTM, TR = h.GPT, h.GPTM, h.TR

    def sweep_then(*fns):
        return seq(h.make_sweep, *fns)

    def outside(name):
        """A link planted in an output folder that leads to name (an input
        beside it): the snapshot catches a write through it."""
        return name

    def script_ok(path, shell="bash"):
        """The emitted script parses (bash -n) and runs nothing else: a
        sweep folder name can only reach it quoted."""
        def check(d, code, out, err):
            p = os.path.join(d, path)
            if code != 0:
                return None
            if not os.path.isfile(p) or os.path.islink(p):
                return "%s is not a regular file" % path
            r = subprocess.run([shell, "-n", p], capture_output=True, text=True)
            if r.returncode != 0:
                return "bash -n %s: %s" % (path, r.stderr.strip()[:200])
            if os.path.exists(os.path.join(d, "PWNED")):
                return "a command in a name ran"
        return check

    def yaml_ok(path, want_dir=None, want_mount=None):
        def check(d, code, out, err):
            if code != 0:
                return None
            try:
                import yaml
            except ImportError:
                return None
            with open(os.path.join(d, path)) as f:
                job = yaml.safe_load(f)
            c = job["spec"]["template"]["spec"]["containers"][0]
            if job.get("kind") != "Job" or len(job["metadata"]["name"]) > 63:
                return "not a Job with a valid name: %r" % job.get("metadata")
            if want_dir is not None and c["command"][-1] != want_dir:
                return "the pods run %r, not the sweep folder %r" % (c["command"], want_dir)
            if want_mount is not None and c["workingDir"] != want_mount:
                return "workingDir %r, want %r" % (c["workingDir"], want_mount)
        return check

    def read_only(name):
        def setup(d):
            p = os.path.join(d, name)
            subprocess.run(["mount", "--bind", p, p], check=True)
            subprocess.run(["mount", "-o", "remount,bind,ro", p], check=True)
        return setup

    def regular(*paths):
        def check(d, code, out, err):
            for p in paths:
                if os.path.islink(os.path.join(d, p)):
                    return "%s is still a link: written through" % p
        return check

    def no_tmp(d, code, out, err):
        for root, dirs, files in os.walk(d):
            for n in files:
                if ".tmp" in n:
                    return "a temporary file is left: %s" % os.path.join(os.path.relpath(root, d), n)

    ps = []

    # ---- files gptg names inside a folder the user named: never followed
    ps += [
        P("hcli: ablate --out folder whose summary.md is a link to the config", ["ablate", "c.toml", "--out", "ab"] + QUICK, 0,
          setup=symlink("../c.toml", "ab/summary.md"), allow=("ab",), check=regular("ab/summary.md"), timeout=120),
        P("hcli: ablate --out folder whose runs.csv is a link into /etc", ["ablate", "c.toml", "--out", "ab"] + QUICK, 0,
          setup=symlink("/etc/gptg-hcli-runs.csv", "ab/runs.csv"), allow=("ab",), timeout=120),
        P("hcli: ablate --out folder whose loss.png is a link to the corpus", ["ablate", "c.toml", "--out", "ab"] + QUICK, 0,
          setup=symlink("../tiny.txt", "ab/loss.png"), allow=("ab",), check=regular("ab/loss.png"), timeout=120),
        P("hcli: ablate --out folder whose summary.csv is a FIFO", ["ablate", "c.toml", "--out", "ab"] + QUICK, 0,
          setup=seq(mkdir("ab"), mkfifo("ab/summary.csv")), allow=("ab",), timeout=120),
        P("hcli: ablate --out folder whose summary.md is a folder", ["ablate", "c.toml", "--out", "ab"] + QUICK, 1, "summary.md",
          setup=mkdir("ab/summary.md"), allow=("ab",), timeout=120),
        P("hcli: ablate again with a run's ablate.json cache a link to the config", ["ablate", "c.toml", "--out", "ab"] + QUICK, 0,
          setup=seq(lambda d: subprocess.run([h.BIN, "ablate", "c.toml", "--out", "ab"] + QUICK, cwd=d, capture_output=True),
                    lambda d: os.remove(os.path.join(d, "ab/c/ablate.json")), symlink("../../c.toml", "ab/c/ablate.json")),
          allow=("ab",), check=regular("ab/c/ablate.json"), timeout=120),
        P("hcli: sweep collect with summary.md a link to the sweep file", ["sweep", "collect", "sw"], 0,
          setup=sweep_then(symlink("../s.toml", "sw/summary.md")), allow=("sw",), check=regular("sw/summary.md"), timeout=120),
        P("hcli: sweep emit slurm over a sweep.sbatch link to /etc/passwd", ["sweep", "emit", "slurm", "sw"], 0,
          setup=sweep_then(symlink("/etc/passwd", "sw/sweep.sbatch")), allow=("sw",), check=script_ok("sw/sweep.sbatch")),
        P("hcli: sweep emit k8s over a job.yaml link to the config", ["sweep", "emit", "k8s", "sw", "--claim", "work"], 0,
          setup=sweep_then(symlink("../c.toml", "sw/job.yaml")), allow=("sw",), check=yaml_ok("sw/job.yaml", "sw", "/work")),
        P("hcli: sweep emit k8s over a job.yaml FIFO", ["sweep", "emit", "k8s", "sw", "--claim", "work"], 0,
          setup=sweep_then(mkfifo("sw/job.yaml")), allow=("sw",), check=yaml_ok("sw/job.yaml")),
        P("hcli: sweep run with events.log a FIFO (hung)", ["sweep", "run", "sw", "--index", "0"], 1, "named pipe",
          setup=sweep_then(mkfifo("sw/events.log")), timeout=20),
        P("hcli: sweep run with events.log a link to the config", ["sweep", "run", "sw", "--index", "0"], 1, "symbolic link",
          setup=sweep_then(symlink("../c.toml", "sw/events.log"))),
        P("hcli: sweep run with events.log a link to /dev/null", ["sweep", "run", "sw", "--index", "0"], 1, "symbolic link",
          setup=sweep_then(symlink("/dev/null", "sw/events.log"))),
        P("hcli: sweep run with failed/ a link to /etc", ["sweep", "run", "sw", "--index", "0"], 1, "folder of its own",
          setup=sweep_then(symlink("/etc", "sw/failed")), allow=("sw/events.log",)),
        P("hcli: sweep run with failed/ a file", ["sweep", "run", "sw", "--index", "0"], 1, "folder of its own",
          setup=sweep_then(write("sw/failed", "x")), allow=("sw/events.log",)),
        P("hcli: sweep run with a failure marker a link to the config", ["sweep", "run", "sw", "--index", "0", "--retry-failed"], None,
          setup=sweep_then(mkdir("sw/failed"), symlink("../../c.toml", "sw/failed/0.txt")), allow=("sw",), timeout=120),
        P("hcli: sweep s.toml again with sweep.toml in the folder a link to the config", ["sweep", "s.toml"], 0,
          setup=sweep_then(lambda d: os.remove(os.path.join(d, "sw/sweep.toml")), symlink("../c.toml", "sw/sweep.toml")),
          allow=("sw",), check=regular("sw/sweep.toml")),
        P("hcli: data pairs --out folder whose train.tsv is a link to the corpus, --force", ["data", "pairs", "toy.toml", "--out", "d", "--force"], 0,
          setup=symlink("../toy.tsv", "d/train.tsv"), allow=("d",), check=regular("d/train.tsv")),
    ]

    # ---- sweep files: names that reach a script or YAML
    odd_sweep = lambda out: write("s2.toml", 'configs = ["c.toml"]\nseeds = 1\nout = "%s"\n' % out)
    ps += [
        P("hcli: sweep folder named with a $(...) (slurm refuses: #SBATCH cannot quote)", ["sweep", "emit", "slurm", "w$(touch PWNED)"], 2, None,
          setup=seq(odd_sweep("w$(touch PWNED)"), lambda d: subprocess.run([h.BIN, "sweep", "s2.toml"], cwd=d, capture_output=True))),
        P("hcli: sweep folder named with a $(...) (k8s: YAML-quoted)", ["sweep", "emit", "k8s", "w$(touch PWNED)", "--claim", "work"], 0,
          setup=seq(odd_sweep("w$(touch PWNED)"), lambda d: subprocess.run([h.BIN, "sweep", "s2.toml"], cwd=d, capture_output=True)),
          allow=("w$(touch PWNED)/job.yaml",), check=yaml_ok("w$(touch PWNED)/job.yaml", "w$(touch PWNED)")),
        P("hcli: sweep folder with a unicode name (slurm)", ["sweep", "emit", "slurm", "wé✓"], 0,
          setup=seq(odd_sweep("wé✓"), lambda d: subprocess.run([h.BIN, "sweep", "s2.toml"], cwd=d, capture_output=True)),
          allow=("wé✓",), check=script_ok("wé✓/sweep.sbatch")),
        P("hcli: sweep folder whose name is 200 characters (k8s name ≤ 63)", ["sweep", "emit", "k8s", "x" * 200, "--claim", "work"], 0,
          setup=seq(odd_sweep("x" * 200), lambda d: subprocess.run([h.BIN, "sweep", "s2.toml"], cwd=d, capture_output=True)),
          allow=("x" * 200,), check=yaml_ok("x" * 200 + "/job.yaml", "x" * 200)),
        P("hcli: sweep emit slurm --partition with a space", ["sweep", "emit", "slurm", "sw", "--partition", "a b"], 2, "partition", setup=h.make_sweep),
        P("hcli: sweep emit slurm --time 1:00:00 --partition a,b (valid)", ["sweep", "emit", "slurm", "sw", "--time", "1:00:00", "--partition", "a,b"], 0,
          setup=h.make_sweep, allow=("sw",), check=script_ok("sw/sweep.sbatch")),
        P("hcli: sweep emit slurm --time with a newline", ["sweep", "emit", "slurm", "sw", "--time", "1\n#SBATCH --x"], 2, "--time", setup=h.make_sweep),
        P("hcli: sweep emit slurm --gptg with a quote and $ (quoted)", ["sweep", "emit", "slurm", "sw", "--gptg", "/opt/g'pt$(touch PWNED)"], 0,
          setup=h.make_sweep, allow=("sw",), check=script_ok("sw/sweep.sbatch")),
        P("hcli: sweep emit k8s --mount /", ["sweep", "emit", "k8s", "sw", "--claim", "work", "--mount", "/"], 2, "--mount", setup=h.make_sweep),
        P("hcli: sweep emit k8s --mount /work/../etc", ["sweep", "emit", "k8s", "sw", "--claim", "work", "--mount", "/work/../etc"], 2, "--mount", setup=h.make_sweep),
        P("hcli: sweep emit k8s --mount /work/ (trailing slash)", ["sweep", "emit", "k8s", "sw", "--claim", "work", "--mount", "/work/"], 0,
          setup=h.make_sweep, allow=("sw",), check=yaml_ok("sw/job.yaml", "sw", "/work")),
        P("hcli: sweep emit k8s --claim in capitals", ["sweep", "emit", "k8s", "sw", "--claim", "Work"], 2, "--claim", setup=h.make_sweep),
        P("hcli: sweep emit k8s --image with a space", ["sweep", "emit", "k8s", "sw", "--claim", "work", "--image", "gptg 1"], 2, "--image", setup=h.make_sweep),
        P("hcli: sweep emit k8s of an absolute sweep folder inside the current one", lambda d: ["sweep", "emit", "k8s", os.path.join(d, "sw"), "--claim", "work"], 0,
          setup=h.make_sweep, allow=("sw",), check=yaml_ok("sw/job.yaml", "sw")),
        P("hcli: sweep emit k8s --parallel 2^63", ["sweep", "emit", "k8s", "sw", "--claim", "work", "--parallel", "9223372036854775808"], 2, None, setup=h.make_sweep),
        P("hcli: sweep emit k8s --cpus 257", ["sweep", "emit", "k8s", "sw", "--claim", "work", "--cpus", "257"], 2, "--cpus", setup=h.make_sweep),
        P("hcli: sweep emit slurm --memory Inf", ["sweep", "emit", "slurm", "sw", "--memory", "Inf"], 2, "--memory", setup=h.make_sweep),
        P("hcli: sweep emit slurm --memory -0", ["sweep", "emit", "slurm", "sw", "--memory", "-0"], 0, setup=h.make_sweep, allow=("sw",)),
        P("hcli: sweep emit nomad", ["sweep", "emit", "nomad", "sw"], 2, "slurm or k8s", setup=h.make_sweep),
        P("hcli: sweep emit slurm of two folders", ["sweep", "emit", "slurm", "sw", "sw"], 2, None, setup=h.make_sweep),
    ]

    # ---- sweep grids
    grid = lambda body: write("s2.toml", 'configs = ["c.toml"]\nout = "g"\n' + body)
    ps += [
        P("hcli: sweep seeds = 0", ["sweep", "s2.toml"], 2, "seeds", setup=grid("seeds = 0\n")),
        P("hcli: sweep seeds = []", ["sweep", "s2.toml"], 2, "seeds", setup=grid("seeds = []\n")),
        P("hcli: sweep seeds = [1, 1]", ["sweep", "s2.toml"], 2, "seeds", setup=grid("seeds = [1, 1]\n")),
        P("hcli: sweep seeds = 1.5", ["sweep", "s2.toml"], 2, "seeds", setup=grid("seeds = 1.5\n")),
        P("hcli: sweep seeds = [2^63-1] (a seed, as a config's)", ["sweep", "s2.toml"], 0, setup=grid("seeds = [9223372036854775807]\n"), allow=("g",)),
        P("hcli: sweep [set] a value with a newline", ["sweep", "s2.toml"], 2, None, setup=grid('[set]\n"train.lr" = ["1e-3\\nx"]\n')),
        P("hcli: sweep [set] a list of mixed kinds", ["sweep", "s2.toml"], 2, None, setup=grid('[set]\n"train.lr" = [1e-3, "x"]\n')),
        P("hcli: sweep [set] an unknown key", ["sweep", "s2.toml"], 2, "nope", setup=grid('[set]\n"train.nope" = [1, 2]\n')),
        P("hcli: sweep [set] a key with no section", ["sweep", "s2.toml"], 2, None, setup=grid('[set]\n"lr" = [1, 2]\n')),
        P("hcli: sweep [set] the same value twice", ["sweep", "s2.toml"], 2, None, setup=grid('[set]\n"train.lr" = [1e-3, 0.001]\n')),
        P("hcli: sweep configs lists one config twice", ["sweep", "s2.toml"], 2, None, setup=write("s2.toml", 'configs = ["c.toml", "./c.toml"]\nout = "g"\n')),
        P("hcli: sweep baseline naming no variant", ["sweep", "s2.toml"], 2, "baseline", setup=grid('baseline = "nope"\n')),
        P("hcli: sweep file an unknown top-level key", ["sweep", "s2.toml"], 2, None, setup=grid('seedz = 3\n')),
        P("hcli: sweep 100 × 100 × seeds 1000 (10M runs)", ["sweep", "s2.toml"], 2, None, max_mb=300,
          setup=grid("seeds = 1000\n[set]\n\"train.lr\" = [%s]\n\"train.batch\" = [%s]\n" % (", ".join("%d.0e-4" % (i + 1) for i in range(100)), ", ".join(str(i + 1) for i in range(100))))),
        P("hcli: two sweep run --jobs 2 at once: each entry trained once, none marked failed", [], 0, allow=("sw",), timeout=180, setup=h.make_sweep,
          shell='$G sweep run sw --jobs 2 >/dev/null 2>&1 & $G sweep run sw --jobs 2 >/dev/null 2>&1; wait; '
                'n=$(grep -c ": finished$" sw/events.log); [ "$n" = 2 ] || { echo "gptg: $n trainings finished for 2 entries" >&2; exit 1; }; '
                'if ls sw/failed/* >/dev/null 2>&1; then echo "gptg: a finished entry was marked failed: $(cat sw/failed/*)" >&2; exit 1; fi; '
                'exec $G sweep collect sw >/dev/null'),
    ]

    # ---- ablate
    ps += [
        P("hcli: ablate --seeds 1,,2", ["ablate", "c.toml", "--seeds", "1,,2", "--out", "ab"], 2, "--seeds"),
        P("hcli: ablate --seeds ' 1' (spaces trimmed: seed 1)", ["ablate", "c.toml", "--seeds", " 1", "--out", "ab"] + QUICK, 0, allow=("ab",), timeout=120),
        P("hcli: ablate --seeds 1-3", ["ablate", "c.toml", "--seeds", "1-3", "--out", "ab"], 2, "--seeds"),
        P("hcli: ablate --seeds 0", ["ablate", "c.toml", "--seeds", "0", "--out", "ab"], 2, "--seeds"),
        P("hcli: ablate --seeds NaN", ["ablate", "c.toml", "--seeds", "NaN", "--out", "ab"], 2, "--seeds"),
        P("hcli: ablate --seeds 1e3", ["ablate", "c.toml", "--seeds", "1e3", "--out", "ab"], 2, "--seeds"),
        P("hcli: ablate --seeds 2^64", ["ablate", "c.toml", "--seeds", "18446744073709551616", "--out", "ab"], 2, "--seeds"),
        P("hcli: ablate --seeds twice (the last wins)", ["ablate", "c.toml", "--seeds", "3", "--seeds", "1", "--out", "ab"] + QUICK, 0,
          allow=("ab",), timeout=120, check=lambda d, c, o, e: None if sorted(os.listdir(os.path.join(d, "ab/c"))) == ["seed-1"] else "runs %s" % os.listdir(os.path.join(d, "ab/c"))),
        P("hcli: ablate --baseline naming no config", ["ablate", "c.toml", "--baseline", "nope", "--out", "ab"], 2, "nope"),
        P("hcli: ablate an unknown flag after the configs", ["ablate", "c.toml", "--frobnicate", "--out", "ab"], 2, "frobnicate"),
        P("hcli: ablate -- then a config named like a flag", ["ablate", "--out", "ab", "--", "--x.toml"], 2, "--x.toml"),
        P("hcli: ablate --out -", ["ablate", "c.toml", "--out", "-"], 2, "standard output"),
        P("hcli: ablate --out /dev/null", ["ablate", "c.toml", "--out", "/dev/null"], 2, None),
        P("hcli: ablate --out a FIFO", ["ablate", "c.toml", "--out", "f"], 2, None, setup=mkfifo("f")),
        P("hcli: ablate --out the corpus's folder holding the config (not a run)", ["ablate", "c.toml", "--out", "."] + QUICK, None, allow=("c", "summary.md", "summary.csv", "runs.csv", "loss.png", "c.train.stderr.log"), timeout=120),
        P("hcli: ablate --set with a control character", ["ablate", "c.toml", "--out", "ab", "--set", "train.lr=\x1b[2J"], 2, None),
        P("hcli: ablate a config twice under two names (a link)", ["ablate", "c.toml", "d.toml", "--out", "ab"] + QUICK, 0,
          setup=symlink("c.toml", "d.toml"), allow=("ab",), timeout=120),
        P("hcli: ablate, stdout closed", [], 0, allow=("ab",), timeout=120,
          shell='exec $G ablate c.toml --out ab --set train.max_steps=2 >&-'),
        P("hcli: ablate | head -1: the runs left are whole (SIGPIPE or 0)", [], 0, allow=("ab",), timeout=120,
          shell='$G ablate c.toml words.toml --out ab --set train.max_steps=2 | head -1 >/dev/null; r=${PIPESTATUS[0]}; '
                'for f in ab/*/model.safetensors; do [ -e "$f" ] || continue; $G inspect "$f" >/dev/null || exit 3; done; [ $r = 141 ] && exit 0; exit $r'),
    ]

    # ---- data toy / export / pairs
    ps += [
        P("hcli: data toy --seed 2^64", ["data", "toy", "--out", "t.txt", "--seed", "18446744073709551616"], 2, "seed"),
        P("hcli: data toy --sentences NaN", ["data", "toy", "--out", "t.txt", "--sentences", "NaN"], 2, "sentences"),
        P("hcli: data toy --out with a newline in the name", ["data", "toy", "--out", "a\nb.txt", "--sentences", "3"], 0, allow=("a\nb.txt",),
          check=lambda d, c, o, e: None if "\n" not in o.strip() else "stdout echoes the raw newline: %r" % o),
        P("hcli: data toy --out with an escape sequence, echoed quoted", ["data", "toy", "--out", "\x1b[2Jx.txt", "--sentences", "3"], 0, allow=("\x1b[2Jx.txt",),
          check=lambda d, c, o, e: None if "\x1b" not in o else "stdout echoes a raw ESC"),
        P("hcli: data toy --out a file in a read-only folder", ["data", "toy", "--out", "ro/t.txt", "--sentences", "3"], 1, "ro/t.txt",
          setup=seq(mkdir("ro"), read_only("ro"))),
        P("hcli: data toy --out - with stdout closed", [], 1, "standard output is closed", shell='exec $G data toy --out - --sentences 3 >&-'),
        P("hcli: data toy --out - | head -1 (SIGPIPE, no file)", [], 0, shell='$G data toy --out - --sentences 100000 | head -1 >/dev/null; r=${PIPESTATUS[0]}; [ $r = 141 ] && exit 0; exit $r'),
        P("hcli: eval > /dev/full (the result lost)", [], 1, "no space left", shell='exec $G eval runs/c --data tiny.txt >/dev/full'),
        P("hcli: inspect > /dev/full", [], 1, "no space left", shell='exec $G inspect runs/c >/dev/full'),
        P("hcli: inspect with stdout closed", [], 1, "standard output is closed", shell='exec $G inspect runs/c >&-'),
        P("hcli: eval > /dev/null (a discard asked for)", [], 0, shell='exec $G eval runs/c --data tiny.txt >/dev/null'),
        P("hcli: train with stdout closed (progress only)", [], 0, allow=("runs/q",), shell='exec $G train c.toml --set train.out=runs/q >&-'),
        P("hcli: data export --out a link to the config", ["data", "export", "toy", "--out", "l.txt"], 2, "already exists", setup=symlink("c.toml", "l.txt")),
        P("hcli: data list with extra arguments", ["data", "list", "x"], 2, None),
        P("hcli: data pairs --set data.path=/dev/zero", ["data", "pairs", "toy.toml", "--set", "data.path=/dev/zero"], 2, "/dev/zero", timeout=20),
        P("hcli: data pairs a config whose data.path is the config", ["data", "pairs", "x.toml"], (1, 2), None,
          setup=lambda d: open(os.path.join(d, "x.toml"), "w").write(open(os.path.join(d, "toy.toml")).read().replace('"toy.tsv"', '"x.toml"'))),
    ]

    # ---- plot, graph --dot, attention --out
    ps += [
        P("hcli: plot --out .SVG in capitals", ["plot", GPT, "--out", "L.SVG"], 0, allow=("L.SVG",)),
        P("hcli: plot --out x.png/ (a folder's name)", ["plot", GPT, "--out", "x.png/"], 2, None),
        P("hcli: plot --out into a missing folder", ["plot", GPT, "--out", "nope/l.png"], (1, 2), "nope"),
        P("hcli: plot --out a link to the run's model (renamed .png)", ["plot", GPT, "--out", "m.png"], 2, "already exists", setup=symlink(h.GPTM, "m.png")),
        P("hcli: plot with metrics.jsonl a link to /dev/stdin", ["plot", GPT, "--out", "l.png"], 2, None, stdin="",
          setup=lambda d: (os.remove(os.path.join(d, GPT, "metrics.jsonl")), os.symlink("/dev/stdin", os.path.join(d, GPT, "metrics.jsonl")))),
        P("hcli: plot two run folders", ["plot", GPT, h.WRD], 2, None),
        P("hcli: graph --dot over a Graphviz file of another graph (its own kind)", ["graph", "c.toml", "--dot", "g.dot"], 0, allow=("g.dot",),
          setup=write("g.dot", "digraph old {}\n")),
        P("hcli: graph --dot a link to the config it reads", ["graph", "c.toml", "--dot", "l.dot"], 2, "reads", setup=symlink("c.toml", "l.dot")),
        P("hcli: graph --dot - with stdout closed", [], 1, "standard output is closed", shell='exec $G graph c.toml --dot - >&-'),
        P("hcli: graph --dot - | head -1", [], 0, shell='$G graph c.toml --dot - | head -1 >/dev/null; r=${PIPESTATUS[0]}; [ $r = 141 ] && exit 0; exit $r'),
        P("hcli: attention --out into a read-only folder", ["attention", GPT, "--text", "Fi", "--out", "ro/a.png"], 1, "ro/a.png",
          setup=seq(mkdir("ro"), read_only("ro"))),
    ]

    big = write("b.toml", '[data]\npath = "tiny.txt"\n[model]\ncontext = 300\nembedding = 8\nblocks = 2\nheads = 2\n[train]\nbatch = 1\nmax_steps = 1\nout = "runs/big"\n')
    train_big = seq(big, lambda d: subprocess.run([h.BIN, "train", "b.toml", "--quiet"], cwd=d, capture_output=True))
    text300 = lambda d: ["attention", "runs/big", "--text", open(os.path.join(d, "tiny.txt")).read()[:300]]
    ps += [
        P("hcli: attention --out png of 4 heatmaps over 300 tokens (minutes before): refused at once", lambda d: text300(d) + ["--out", "a.png"], 2,
          "at most 128 tokens", setup=train_big, timeout=30, max_mb=400),
        P("hcli: attention --out svg of 4 heatmaps over 300 tokens: refused at once", lambda d: text300(d) + ["--out", "a.svg"], 2,
          "at most 256 tokens", setup=train_big, timeout=30, max_mb=400),
        P("hcli: attention --format text over 300 tokens (streamed, no bound)", lambda d: text300(d) + ["--format", "text"], 0,
          setup=train_big, timeout=60, max_mb=400),
        P("hcli: train --cpuprofile inside the run folder it makes", ["train", "c.toml", "--set", "train.out=runs/q", "--cpuprofile", "runs/q/p.prof"], 2, "no folder runs/q"),
        P("hcli: train --cpuprofile a FIFO", ["train", "c.toml", "--set", "train.out=runs/q", "--cpuprofile", "f.prof"], 2, "named pipe", setup=mkfifo("f.prof")),
    ]

    # ---- environment
    ps += [
        P("hcli: HOME and TMPDIR unset", [], 0, allow=("t.txt",), shell='unset HOME TMPDIR; exec $G data toy --out t.txt --sentences 3'),
        P("hcli: TMPDIR a missing folder", ["data", "toy", "--out", "t.txt", "--sentences", "3"], 0, allow=("t.txt",), env={"TMPDIR": "/nonexistent"}),
        P("hcli: LC_ALL=tr_TR.UTF-8 and LANG=de_DE (decimal commas) change no number", ["graph", "c.toml", "--set", "train.lr=0.5"], 0, env={"LC_ALL": "tr_TR.UTF-8", "LANG": "de_DE.UTF-8"}),
        P("hcli: GPTG_UNFUSED=yes (only 1 means unfused)", ["sample", GPT, "--tokens", "3"], 0, env={"GPTG_UNFUSED": "yes"}),
        P("hcli: GPTG_MAX_MEMORY=0.000001 refuses the model", ["sample", GPT, "--tokens", "3"], (1, 2), "GPTG_MAX_MEMORY", env={"GPTG_MAX_MEMORY": "0.000001"}),
        P("hcli: GPTG_MAX_MEMORY with a newline", ["sample", GPT, "--tokens", "3"], 2, "GPTG_MAX_MEMORY", env={"GPTG_MAX_MEMORY": "1\n2"}),
        P("hcli: SLURM_ARRAY_TASK_ID=abc", ["sweep", "run", "sw"], 2, "SLURM_ARRAY_TASK_ID", setup=h.make_sweep, env={"SLURM_ARRAY_TASK_ID": "abc"}),
        P("hcli: SLURM_ARRAY_TASK_ID=99 past the entries", ["sweep", "run", "sw"], 2, "entry 99", setup=h.make_sweep, env={"SLURM_ARRAY_TASK_ID": "99"}),
        P("hcli: SLURM_ARRAY_TASK_ID=2^63", ["sweep", "run", "sw"], 2, "SLURM_ARRAY_TASK_ID", setup=h.make_sweep, env={"SLURM_ARRAY_TASK_ID": "9223372036854775808"}),
        P("hcli: JOB_COMPLETION_INDEX=-1", ["sweep", "run", "sw"], 2, "JOB_COMPLETION_INDEX", setup=h.make_sweep, env={"JOB_COMPLETION_INDEX": "-1"}),
        P("hcli: --index beats SLURM_ARRAY_TASK_ID=abc", ["sweep", "run", "sw", "--index", "0"], 0, setup=h.make_sweep, env={"SLURM_ARRAY_TASK_ID": "abc"}, allow=("sw",), timeout=120),
        P("hcli: working folder removed: data toy", [], 2, "no longer exists", shell='mkdir gone && cd gone && rmdir ../gone && exec $G data toy --out t.txt'),
        P("hcli: working folder removed: ablate", [], 2, "no longer exists", shell='mkdir gone && cd gone && rmdir ../gone && exec $G ablate ../c.toml --out ../ab'),
        P("hcli: working folder removed: sweep emit slurm", [], 2, "no longer exists", setup=h.make_sweep,
          shell='mkdir gone && cd gone && rmdir ../gone && exec $G sweep emit slurm ../sw'),
        P("hcli: working folder removed: help still works", [], 0, shell='mkdir gone && cd gone && rmdir ../gone && exec $G sweep --help >/dev/null'),
    ]

    # ---- resource limits
    ps += [
        P("hcli: ulimit -f 64 KiB, data toy of 3 MB: no partial file", [], 1, "file too large", check=no_tmp,
          shell='ulimit -f 64; exec $G data toy --out t.txt --sentences 100000'),
        P("hcli: ulimit -f 8 KiB, graph --dot: no partial file", [], 1, "file too large", check=no_tmp,
          shell='ulimit -f 8; exec $G graph c.toml --dot g.dot'),
        P("hcli: ulimit -f 4 KiB, ablate: tables not half-written", [], 1, None, check=no_tmp, allow=("ab",), timeout=120,
          shell='ulimit -f 4; exec $G ablate c.toml --out ab --set train.max_steps=2 >/dev/null'),
        P("hcli: ablate a word config keeping the default prompt (trains; no sample)", ["ablate", "words.toml", "--out", "ab"] + QUICK, 0, allow=("ab",), timeout=120),
        P("hcli: sample a word run without --prompt", ["sample", h.WRD, "--tokens", "3"], 2, "no --prompt given"),
        P("hcli: ulimit -n 24, ablate --jobs 2 of 2 configs", [], 0, allow=("ab",), timeout=120,
          shell='ulimit -n 24; exec $G ablate c.toml words.toml --jobs 2 --out ab --set train.max_steps=2 >/dev/null'),
        P("hcli: ulimit -n 24, sweep run --jobs 2", [], 0, allow=("sw",), timeout=120, setup=h.make_sweep,
          shell='ulimit -n 24; exec $G sweep run sw --jobs 2 >/dev/null'),
    ]

    # ---- exit-code rule for arguments (#24 leftover)
    ps += [
        P("hcli: sample a prompt outside the vocabulary is exit 2", ["sample", GPT, "--prompt", "€", "--tokens", "3"], 2, "outside the vocabulary"),
        P("hcli: sample --prompt-file outside the vocabulary is exit 2", ["sample", GPT, "--prompt-file", "p.txt", "--tokens", "3"], 2, "outside the vocabulary",
          setup=write("p.txt", "€")),
        P("hcli: attention text outside the vocabulary is exit 2", ["attention", GPT, "--text", "€"], 2, "outside the vocabulary"),
        P("hcli: translate a sentence too long is exit 2", ["translate", TR, "--text", " ".join(["a1"] * 9)], 2, "at most"),
    ]
    return ps
