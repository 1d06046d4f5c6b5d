"""Memory limits of other kinds (reclaimable page cache, several processes
in one cgroup, ulimit -d, two limits at once; names start "audit4"), and
answers under a memory limit checked against an independent computation.

Memory probes ("audit4 mem: ...") use probes_memlimits.py's large fixtures (a 50M GPT
model runs/big, a 54M translation model runs/bigtr, a 600 MB nanoGPT
checkpoint, a 200 MB corpus, 2M pairs; probes_memlimits.big, GPTG_PROBE_BIG
keeps them) and a mid-sized config (a 3.2M model whose training takes
~330 MB). They try:

  - a cgroup whose usage is mostly page cache the kernel can reclaim at
    once (files read twice: *active* cache), as in any long-lived
    container: valid work must still run;
  - several gptg processes in one cgroup: ablate --jobs and sweep run
    --jobs start trainings that each fit alone but not together, serve
    loads a second model while the first is cached, serve under many
    requests;
  - readers bounded by fixed row counts rather than the headroom: serve's
    curves (/api/metrics) and comparisons (/api/compare) of runs of 1.65M
    rows asked by several clients at once, sweep collect of such a run
    (its table must not call a finished run failed with exit 0);
  - translating stdin lines of growing lengths (cached graphs);
  - ulimit -d (the data segment; the other files try ulimit -v and
    cgroups) for every model command, imports, training, plots, pairs;
  - ulimit -v and a cgroup at once (the tighter one must be named);
  - a 3,000-word sentence translated where its real need fits.

What counts as right (names_a_limit): exit 0, or ONE line naming the
memory limit; never the runtime's trace or the kernel's OOM kill (the
probe's cgroup counts kills); "must run" probes need exit 0. Probes with
a ulimit -d carry ulimit_v=2**40 KiB (no limit at all) so that probe.py
counts them as memory probes and runs them under --sandbox too.

Answer probes ("audit4: ...") check what gptg computes under a memory
limit (its soft memory limit makes the garbage collector work harder; the
answers must not change): the 50M model's test loss against PyTorch's
(gptref.py), its greedy continuation against PyTorch's argmax, a resumed
training under a tight cgroup byte for byte against the same resume
unlimited, translations with and without the decoder's cache and under a
limit; and a run killed between its last checkpoint and its model.

Run (as root, each gptg command in the sandbox, cgroups real):
    GPTG_PROBE_BIG=/tmp/sbx-X/big python3 testdata/hostile/probe.py /var/tmp/gptg --only 'audit4' --sandbox '/work/sandbox {dir}'
and the non-memory ones with the script inside the sandbox:
    /work/sandbox /tmp/sbx-Y python3 testdata/hostile/probe.py /var/tmp/gptg --only 'audit4:'
"""

import importlib.util
import os
import shutil
import subprocess

MiB = 1 << 20
GiB = 1 << 30
NO_AS_LIMIT = 1 << 40  # KiB: ulimit -v of 1 PiB, i.e. none (see above)

MID_TOML = """[data]
path = "builtin:tinyshakespeare"
[model]
context = 128
embedding = 256
blocks = 4
heads = 4
[train]
batch = 16
max_steps = 4
eval_batches = 1
checkpoint_every = 1000000
out = "o/mid"
"""

# Drops FILES from the page cache, then reads each twice: their pages are
# charged to this cgroup as *active* file cache, which the kernel still
# reclaims at once when a process needs the memory.
CACHE = r"""
for f in "$@"; do
  python3 -c "import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$f"
  cat "$f" >/dev/null; cat "$f" >/dev/null
done
"""

SERVE = r"""
mkdir -p o
$G serve runs --addr 127.0.0.1:0 > o/sv.out 2> o/sv.err &
SP=$!
for i in $(seq 600); do P=$(grep -ho '127.0.0.1:[0-9]*' o/sv.out o/sv.err 2>/dev/null | head -1); [ -n "$P" ] && break; sleep 0.1; done
[ -n "$P" ] || { echo "serve did not start: $(head -c 300 o/sv.err)" >&2; exit 1; }
gen(){ curl -s -m 300 -o o/body.$1 -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d "{\"id\":\"runs/$2\",\"prompt\":\"${3:-F}\",\"tokens\":3}" http://$P/api/generate; }
alive(){ kill -0 $SP 2>/dev/null && [ "$(curl -s -m 60 -o /dev/null -w '%{http_code}' http://$P/api/runs)" = 200 ]; }
"""

SERVE_END = r"""
alive || { echo "the server died: $(head -c 300 o/sv.err)" >&2; exit 1; }
kill $SP; wait $SP
"""


def _audit3(h):
    spec = importlib.util.spec_from_file_location("probes_memlimits", os.path.join(h.HERE, "probes_memlimits.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def probes(h):
    a3 = _audit3(h)
    P = h.Probe
    ps = []

    def big(*names, files=None):
        base = a3.big(h, *names)

        def setup(d):
            base(d)
            for name, text in (files or {}).items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
        return setup

    def M(name, shell, fixtures=(), files=None, must=False, timeout=600, **limit):
        ps.append(P("audit4 mem: " + name + (" (must run)" if must else ""), [], (0,) if must else (0, 1, 2),
                    setup=big(*fixtures, files=files), allow=("o", "runs"), timeout=timeout, max_mb=1 << 20,
                    shell=shell, check=a3.names_a_limit(must), **limit))

    # --- page cache the kernel reclaims at once counts as free
    M("sample of a 50M model in a 950 MiB cgroup holding 350 MiB of active page cache",
      "cat > o/cache.sh <<'EOF'\n" + CACHE + "EOF\nbash o/cache.sh bigcorpus.txt bigpairs.tsv && exec $G sample runs/big --tokens 3 --prompt F",
      ("runs/big", "bigcorpus.txt", "bigpairs.tsv"), must=True, cgroup=950 * MiB)
    M("eval of a 50M model in a 900 MiB cgroup holding 350 MiB of active page cache",
      "cat > o/cache.sh <<'EOF'\n" + CACHE + "EOF\nbash o/cache.sh bigcorpus.txt bigpairs.tsv && exec $G eval runs/big --data small.txt",
      ("runs/big", "bigcorpus.txt", "bigpairs.tsv", "small.txt"), must=True, cgroup=900 * MiB)
    M("sample of a 50M model with 350 MiB of active page cache in a 500 MiB cgroup (one line)",
      "cat > o/cache.sh <<'EOF'\n" + CACHE + "EOF\nbash o/cache.sh bigcorpus.txt bigpairs.tsv && exec $G sample runs/big --tokens 3 --prompt F",
      ("runs/big", "bigcorpus.txt", "bigpairs.tsv"), cgroup=500 * MiB)

    # --- several trainings in one cgroup, each fitting alone
    def jobs_check(folder):
        def check(d, code, out, err):
            if code == 0:
                return None
            import csv
            try:
                rows = list(csv.DictReader(open(os.path.join(d, folder, "runs.csv"))))
            except OSError:
                rows = []
            bad = [r.get("error", "") for r in rows if r.get("status") != "finished" and
                   ("SIGKILL" in r.get("error", "") or "memory" not in r.get("error", "").lower())]
            failed = os.path.join(d, folder, "failed")
            if os.path.isdir(failed):
                for n in os.listdir(failed):
                    t = open(os.path.join(failed, n)).read()
                    if "SIGKILL" in t or "memory" not in t.lower():
                        bad.append(t.strip()[:200])
            if bad:
                return "runs failed without a memory refusal of their own: %s" % "; ".join(bad)[:500]
            if not rows and not os.path.isdir(failed) and not any(w in err.lower() for w in ("memory", "ulimit", "cgroup")):
                return "failed without naming memory: %s" % err.strip()[:300]
        return check

    for jobs, lim in ((3, 850), (2, 600)):
        ps.append(P("audit4 mem: ablate --jobs %d of %d trainings that each fit a %d MiB cgroup alone (no OOM kill)" % (jobs, jobs, lim),
                    [], (0, 1, 2), shell="exec $G ablate mid.toml --seeds %d --jobs %d --out o/ab" % (jobs, jobs),
                    setup=big(files={"mid.toml": MID_TOML}), allow=("o",), timeout=900, max_mb=1 << 20,
                    check=jobs_check("o/ab"), cgroup=lim * MiB))
    ps.append(P("audit4 mem: sweep run --jobs 3 of 3 trainings that each fit an 850 MiB cgroup alone (no OOM kill)",
                [], (0, 1, 2), shell="printf 'configs=[\"../mid.toml\"]\\nseeds=3\\nout=\"sw\"\\n' > o/s.toml && "
                                  "$G sweep o/s.toml --out o/sw >/dev/null && $G sweep run o/sw --jobs 3",
                setup=big(files={"mid.toml": MID_TOML}), allow=("o",), timeout=900, max_mb=1 << 20,
                check=jobs_check("o/sw"), cgroup=850 * MiB))

    # --- serve: a second model after the first, one model at the edge, many requests
    M("serve: two 50M models one after the other in a 1200 MiB cgroup (the idle first makes room)",
      SERVE + "mkdir -p runs/big2 && ln runs/big/* runs/big2/\nA=$(gen 1 big); B=$(gen 2 big2); echo \"big $A big2 $B\"\n"
              "[ $A = 200 ] && [ $B = 200 ] || { echo \"big $A big2 $B: $(head -c 300 o/body.2)\" >&2; kill $SP; exit 1; }\n" + SERVE_END,
      ("runs/big",), must=True, cgroup=1200 * MiB)
    M("serve: a 50M model in a 1000 MiB cgroup, where gptg sample runs it",
      SERVE + "A=$(gen 1 big)\n[ $A = 200 ] || { echo \"generate $A: $(head -c 300 o/body.1)\" >&2; kill $SP; exit 1; }\n" + SERVE_END,
      ("runs/big",), must=True, cgroup=1000 * MiB)
    M("serve: 30 generations with growing prompts, then 6 at once, on a 50M model in a 1300 MiB cgroup",
      SERVE + "for i in $(seq 30); do c=$(gen s big \"$(printf 'F%.0s' $(seq $((i*8))))\"); [ $c = 200 ] || { echo \"generation $i: $c $(head -c 200 o/body.s)\" >&2; kill $SP; exit 1; }; done\n"
              "pids=; for j in 1 2 3 4 5 6; do (gen c$j big First > o/code.$j) & pids=\"$pids $!\"; done; wait $pids\n"
              "for j in 1 2 3 4 5 6; do case $(cat o/code.$j) in 200|503|429) ;; *) echo \"concurrent $j: $(cat o/code.$j) $(head -c 200 o/body.c$j)\" >&2; kill $SP; exit 1;; esac; done\n" + SERVE_END,
      ("runs/big",), must=True, cgroup=1300 * MiB, timeout=900)

    # Curves of two runs of 1.65M rows each (260 MB metrics.jsonl, under
    # the 2,097,152-row cap), asked by six clients at once: the server must
    # live (an answer may be refused: 429, 503, 507), as one request does.
    M("serve: 6 clients at once ask the curves of two runs of 1.65M rows in a 400 MiB cgroup",
      "mkdir -p runs/bigm2 && ln runs/bigm/* runs/bigm2/ || exit 3\n" + SERVE +
      "pids=; for j in 1 2 3 4 5 6; do r=bigm; [ $((j%2)) = 0 ] && r=bigm2; (curl -s -m 600 -o o/m.$j -w '%{http_code}' \"http://$P/api/metrics?id=runs/$r\" > o/code.$j) & pids=\"$pids $!\"; done; wait $pids\n"
      "for j in 1 2 3 4 5 6; do case $(cat o/code.$j) in 200|429|503|507) ;; *) echo \"client $j: HTTP $(cat o/code.$j): $(head -c 200 o/sv.err)\" >&2; kill $SP 2>/dev/null; exit 1;; esac; done\n" + SERVE_END,
      ("runs/bigm",), must=True, cgroup=400 * MiB, timeout=900)

    # The same through /api/compare: an ablation whose run has 1.65M rows
    # (under the 2,097,152 rows a comparison may draw), asked by 4 at once.
    M("serve: 4 clients at once ask the comparison of an ablation whose run has 1.65M rows in a 400 MiB cgroup",
      "$G ablate c.toml --seeds 1 --out runs/abl >/dev/null 2>&1 || exit 3\n"
      "ln -f runs/bigm/metrics.jsonl runs/abl/c/seed-1/metrics.jsonl || exit 3\n" + SERVE +
      "pids=; for j in 1 2 3 4; do (curl -s -m 600 -o o/m.$j -w '%{http_code}' \"http://$P/api/compare?id=runs/abl\" > o/code.$j) & pids=\"$pids $!\"; done; wait $pids\n"
      "for j in 1 2 3 4; do case $(cat o/code.$j) in 200|429|503|507) ;; *) echo \"client $j: HTTP $(cat o/code.$j): $(head -c 200 o/sv.err)\" >&2; kill $SP 2>/dev/null; exit 1;; esac; done\n" + SERVE_END,
      ("runs/bigm",), must=True, cgroup=400 * MiB, timeout=900)

    # sweep collect of a finished run whose metrics it cannot read under
    # the limit: not a table that calls the run failed, with exit 0.
    def collect_check(d, code, out, err):
        if code != 0:
            return None if any(w in err.lower() for w in ("memory", "ulimit", "cgroup")) else "the refusal names no memory limit: " + err.strip()[:300]
        try:
            t = open(os.path.join(d, "o/sw/runs.csv")).read()
        except OSError as e:
            return "exit 0 and no runs.csv: %s" % e
        if ",failed," in t:
            return "exit 0, and runs.csv calls the finished run failed: " + t.strip().split("\n")[-1][:300]
    ps.append(P("audit4 mem: sweep collect of a finished run whose 1.65M-row metrics do not fit a 250 MiB cgroup", [], (0, 1, 2),
                shell="printf 'configs=[\"../c.toml\"]\\nseeds=1\\nout=\"sw\"\\n' > o/s.toml && $G sweep o/s.toml --out o/sw >/dev/null && "
                      "$G sweep run o/sw >/dev/null && ln -f runs/bigm/metrics.jsonl o/sw/runs/c/seed-1/metrics.jsonl && exec $G sweep collect o/sw",
                setup=big("runs/bigm"), allow=("o",), timeout=900, max_mb=1 << 20, check=collect_check, cgroup=250 * MiB))

    # --- a long sentence whose real need (1.55 GB peak RSS) fits
    M("translate a 3,000-word sentence (22M model, sinusoidal positions; peak 1.55 GB) in a 2500 MiB cgroup",
      "$G train toy.toml --quiet --set train.out=runs/mid --set train.max_steps=1 --set model.embedding=512 --set model.heads=8 "
      "--set model.encoder_blocks=3 --set model.decoder_blocks=3 --set model.ff_hidden=2048 --set model.positions=sinusoidal >/dev/null || exit 3\n"
      "exec $G translate runs/mid --text \"$(printf 'a1 a2 a3 %.0s' $(seq 1000))\" > o/t.txt",
      must=True, cgroup=2500 * MiB, timeout=900)

    # --- ulimit -d: far below (one line) and generous (must run)
    D = [("sample of a 50M model", "$G sample runs/big --tokens 3 --prompt F", ("runs/big",), 600_000, 1_600_000),
         ("eval of a 50M model", "$G eval runs/big --data small.txt", ("runs/big", "small.txt"), 400_000, 1_400_000),
         ("attention of a 50M model", "$G attention runs/big --text First", ("runs/big",), 600_000, 1_800_000),
         ("inspect of a 50M model", "$G inspect runs/big", ("runs/big",), 300_000, 1_400_000),
         ("translate with a 54M translation model", "$G translate runs/bigtr --text 'in the beginning'", ("runs/bigtr",), 300_000, 1_400_000),
         ("import of a 600 MB nanoGPT checkpoint", "$G import nanogpt bigckpt.pt --out o/x.safetensors", ("bigckpt.pt",), 500_000, 2_000_000),
         ("train a 3.2M model (330 MB)", "$G train mid.toml --quiet", (), 250_000, 1_200_000),
         ("train on a 200 MB corpus", "$G train bc.toml --quiet", ("bigcorpus.txt", "bc.toml"), 300_000, 3_000_000),
         ("data pairs of 2M pairs", "$G data pairs bp.toml", ("bigpairs.tsv", "bp.toml"), 200_000, None),
         ("plot of a 260 MB metrics.jsonl", "$G plot runs/bigm --out o/l.png", ("runs/bigm",), 200_000, 2_500_000)]
    for name, cmd, fx, low, high in D:
        for n, must in ((low, False), (high, True)):
            if n:
                M("%s under ulimit -d %d KiB" % (name, n), "ulimit -d %d && exec %s" % (n, cmd), fx,
                  files={"mid.toml": MID_TOML}, must=must, ulimit_v=NO_AS_LIMIT, timeout=900)

    # --- two limits at once: the tighter one decides and is named
    ps.append(P("audit4 mem: sample of a 50M model under ulimit -v 8000000 and a 400 MiB cgroup names the cgroup", [], 2,
                "cgroup", shell="exec $G sample runs/big --tokens 3 --prompt F", setup=big("runs/big"), allow=("o",),
                max_mb=1 << 20, ulimit_v=8_000_000, cgroup=400 * MiB))
    ps.append(P("audit4 mem: sample of a 50M model under ulimit -d 700000 and a 3 GiB cgroup names ulimit -d", [], 2,
                "ulimit -d", shell="ulimit -d 700000 && exec $G sample runs/big --tokens 3 --prompt F", setup=big("runs/big"),
                allow=("o",), max_mb=1 << 20, cgroup=3 * GiB))
    return ps + answer_probes(h, a3, big)


def answer_probes(h, a3, big):
    P = h.Probe
    ps = []

    def A(name, *a, **k):
        ps.append(P("audit4: " + name, *a, **k))

    # The 50M model, evaluated under a tight limit (the soft memory limit
    # makes the collector run often): PyTorch's loss of the same file. The
    # reference runs in the setup, outside the probe's cgroup.
    def with_ref(fixtures, ref_args, out):
        b, r = big(*fixtures), a3.reference(h)

        def setup(d):
            b(d)
            r(d)
            res = subprocess.run(["sh", "ref.sh"] + ref_args, cwd=d, capture_output=True, text=True, timeout=1800)
            if res.returncode:
                raise h.NotRun("the reference failed: " + res.stderr.strip()[-300:])
            with open(os.path.join(d, out), "w") as f:
                f.write(res.stdout)
        return setup

    ps.append(P("audit4 mem: eval of the 50M model in a 620 MiB cgroup equals PyTorch's loss of the same file", [], 0,
                setup=with_ref(("runs/big", "small.txt"), ["eval", "runs/big/model.safetensors", "small.txt", "0.9", "128", "1"], "o/ref"),
                shell="echo $($G eval runs/big --data small.txt --batch 1 | sed -n 's/^test loss //p') $(cat o/ref)",
                allow=("o", "ref.py", "ref.sh"), check=a3.close_numbers(2e-5), timeout=900, max_mb=1 << 20, cgroup=620 * MiB))
    ps.append(P("audit4 mem: greedy sample of the 50M model in a 750 MiB cgroup equals PyTorch's argmax continuation", [], 0,
                setup=with_ref(("runs/big",), ["greedy", "runs/big/model.safetensors", "First Citizen", "12"], "o/b"),
                shell="$G sample runs/big --temperature 0 --tokens 12 --prompt 'First Citizen' | head -c -1 > o/a; cat o/a; printf '\\0'; cat o/b",
                allow=("o", "ref.py", "ref.sh"), check=a3.same_text, timeout=900, max_mb=1 << 20, cgroup=750 * MiB))

    # A resume under a tight cgroup writes the same model, byte for byte,
    # as the same resume without a limit (made in the setup, outside it).
    def trained_twice(d):
        big(files={"mid.toml": MID_TOML})(d)
        for args in (["train", "mid.toml", "--quiet"], None, ["train", "--resume", "o/free", "--set", "train.max_steps=6", "--quiet"]):
            if args is None:
                shutil.copytree(os.path.join(d, "o/mid"), os.path.join(d, "o/free"), symlinks=True)
                continue
            r = h.run_bin(args, d, timeout=900)
            if r.returncode:
                raise h.NotRun("setup: gptg %s: %s" % (" ".join(args), r.stderr.strip()[:300]))
    ps.append(P("audit4 mem: a resume in a 480 MiB cgroup writes the same model as without a limit", [], 0,
                setup=trained_twice,
                shell="$G train --resume o/mid --set train.max_steps=6 --quiet >/dev/null && cmp o/mid/model.safetensors o/free/model.safetensors && echo SAME",
                allow=("o",), stdout="SAME", timeout=900, max_mb=1 << 20, cgroup=480 * MiB))
    # Translations: with and without the decoder's cache, greedy and beam 1.
    A("translate of the 54M model: the same text with and without the decoder's cache, and with --beam 1", [], 0,
      setup=big("runs/bigtr"),
      shell="T='in the beginning god created the heavens and the earth'; "
            "$G translate runs/bigtr --text \"$T\" > o/a && $G translate runs/bigtr --no-cache --text \"$T\" > o/b && "
            "$G translate runs/bigtr --beam 1 --text \"$T\" > o/c && cmp o/a o/b && cmp o/a o/c && [ -s o/a ] && echo SAME",
      allow=("o",), stdout="SAME", timeout=900, max_mb=3000)
    # A training killed after its last checkpoint, before its model (the
    # kernel's OOM kill did this in a tight cgroup): the checkpoint holds
    # the weights, so resuming must give the model, not "already finished".
    def killed_before_model(d):
        os.rename(os.path.join(d, "runs/c/model.safetensors"), os.path.join(d, "uninterrupted.safetensors"))
        with open(os.path.join(d, "runs/c/.model.safetensors.tmp4080289413"), "wb") as f:
            f.write(b"\0" * 4096)
    A("resume of a run killed between its last checkpoint and its model writes the model, byte for byte the uninterrupted one", [], 0,
      shell="$G train --resume runs/c --quiet && cmp runs/c/model.safetensors uninterrupted.safetensors && $G sample runs/c --tokens 2 --prompt F >/dev/null",
      setup=killed_before_model, allow=("runs/c",), timeout=120)
    # Lesser: translating lines from stdin, the graphs cached for earlier
    # lengths are not dropped to make room for a new one (refused at line 7
    # of 20 for the 79M model in 450 MiB; unlimited, 739 MB for all 20).
    ps.append(P("audit4 mem: lesser: translate 20 stdin lines of 4..80 words with the 54M model in a 380 MiB cgroup: all translated", [], 0,
                shell="python3 -c \"import random; r=random.Random(1); w='in the beginning god created the heavens and the earth'.split(); "
                      "print(''.join(' '.join(r.choice(w) for _ in range(n)) + chr(10) for n in range(4, 84, 4)), end='')\" > o/lines.txt && "
                      "$G translate runs/bigtr < o/lines.txt > o/t.txt && [ $(wc -l < o/t.txt) = 20 ]",
                setup=big("runs/bigtr"), allow=("o",), timeout=900, max_mb=1 << 20, cgroup=380 * MiB))
    # Lesser: a picture too big for the process is refused from the
    # header and the text, before the 200 MB of weights are read.
    ps.append(P("audit4 mem: lesser: attention --out a.png past the headroom is refused before the model is read", [], 2,
                "tokens", shell="exec $G attention runs/big --text 'First Citizen: Before' --out o/a.png",
                setup=big("runs/big"), allow=("o",), timeout=300, max_mb=300, cgroup=900 * MiB))
    return ps
