"""Configs, corpora, translation pairs,
run folders and their state, resume/force/init, two trainings at once,
signals and disk full at new moments, run folders vanishing mid-run.

Loaded by probe.py (probes(h), h = the probe.py module). Every probe's name
starts "r6 runs", so `probe.py BIN --only 'r6 runs'` runs these alone.
"""

import json
import os
import shutil
import signal
import struct
import subprocess
import time

# The fixture's model size (a 42 KB checkpoint) on a long run that logs
# every step: a small disk fills at any of its writes. Made from probe.py's
# GPT_TOML, so that the two configs cannot drift apart.
def small(h):
    return (h.GPT_TOML.replace("max_steps = 3\n", "max_steps = 3000\ncheckpoint_every = 7\nlog_every = 1\n")
            .replace('"runs/c"', '"runs/long"'))


LONG = """[data]
path = "tiny.txt"
[model]
context = 16
embedding = 32
blocks = 2
heads = 2
[train]
batch = 8
max_steps = 3000
checkpoint_every = 20
log_every = 5
out = "runs/long"
"""

# A run whose steps take long enough to be interrupted between any two of
# its moments, and whose uninterrupted result is the reference.
MID = """[data]
path = "tiny.txt"
[model]
context = 32
embedding = 64
blocks = 2
heads = 4
[train]
batch = 8
max_steps = 120
eval_every = 40
log_every = 10
checkpoint_every = 30
out = "runs/mid"
"""

# A 3-step run whose final evaluation (the whole test split of the built-in
# corpus) takes a second or more: a signal can land inside it.
EVAL = MID.replace("tiny.txt", "builtin:tinyshakespeare").replace("max_steps = 120", "max_steps = 3")


def sha(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def probes(h):
    P = h.Probe
    GPT, TR = h.GPT, h.TR
    G = '[data]\npath = "tiny.txt"\n'
    RES = ["train", "--resume", GPT, "--set", "train.max_steps=6", "--quiet"]

    def link_out(rel, outside):
        """rel (a file of a run) becomes a link to a copy of it outside the run."""
        def setup(d):
            p = os.path.join(d, rel)
            shutil.copy(p, os.path.join(d, outside))
            os.remove(p)
            os.symlink(os.path.relpath(os.path.join(d, outside), os.path.dirname(p)), p)
        return setup

    def metrics(text, run=GPT):
        return h.write(run + "/metrics.jsonl", text)

    def edit_cfg(fn, run=GPT):
        return lambda d: h.rewrite(os.path.join(d, run, "config.toml"), fn)

    def rows_ok(run):
        """After a resume: metrics rows of strictly rising steps, none past the last."""
        def check(d, code, out, err):
            if code != 0:
                return None
            steps = [json.loads(l)["step"] for l in open(os.path.join(d, run, "metrics.jsonl"))]
            if any(b <= a for a, b in zip(steps, steps[1:])):
                return "metrics steps not rising after the resume: %s" % steps
        return check

    def same_as(ref_run, run):
        """The model of run is the model of the uninterrupted ref_run, bit for bit."""
        def check(d, code, out, err):
            if code != 0:
                return None
            a, b = os.path.join(d, ref_run, "model.safetensors"), os.path.join(d, run, "model.safetensors")
            if sha(a) != sha(b):
                return "the resumed model differs from the uninterrupted run's"
            ma = [json.loads(l) for l in open(os.path.join(d, ref_run, "metrics.jsonl"))]
            mb = [json.loads(l) for l in open(os.path.join(d, run, "metrics.jsonl"))]
            key = lambda rs: [(r["step"], r["loss"], r.get("test_loss")) for r in rs]
            if key(ma) != key(mb):
                return "the resumed metrics differ from the uninterrupted run's"
        return check

    def then(*cmds):
        """A check that runs more gptg commands after the probe and wants exit 0 from each
        (e.g. the resume after an interruption)."""
        def check(d, code, out, err):
            for c in cmds:
                r = subprocess.run([h.BIN] + c, cwd=d, capture_output=True, text=True, timeout=300)
                if r.returncode != 0:
                    return "afterwards `gptg %s` exit %d: %s" % (" ".join(c), r.returncode, r.stderr.strip()[:300])
        return check

    def chain(*checks):
        def check(d, code, out, err):
            for c in checks:
                why = c(d, code, out, err)
                if why:
                    return why
        return check

    def train_ref(cfgtext, name, out):
        """Setup: the config as name, and its uninterrupted run trained into out."""
        def setup(d):
            with open(os.path.join(d, name), "w") as f:
                f.write(cfgtext)
            subprocess.run([h.BIN, "train", name, "--quiet", "--set", "train.out=" + out], cwd=d, check=True, capture_output=True)
        return setup

    def second(args, want, msg=None, delay=0.6):
        """During the probe: run a second gptg command; its exit and message are checked afterwards."""
        res = {}

        def during(d, proc):
            # Once the first run has its first checkpoint (it is then well
            # under way, and far from its end), the second command; then
            # the first is stopped (exit 130).
            t0 = time.time()
            while time.time() - t0 < 60 and not os.path.exists(os.path.join(d, "runs/long/checkpoint.safetensors")):
                time.sleep(0.005)
            r = subprocess.run([h.BIN] + args, cwd=d, capture_output=True, text=True, timeout=60)
            res["r"] = r
            try:
                os.kill(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

        def check(d, code, out, err):
            r = res.get("r")
            if r is None:
                return "the second command did not run"
            if r.returncode != want:
                return "second `gptg %s`: exit %d, want %d (%s)" % (" ".join(args), r.returncode, want, r.stderr.strip()[:200])
            if msg and msg not in r.stderr:
                return "second command's stderr lacks %r: %s" % (msg, r.stderr.strip()[:200])
        return during, check

    def during_do(fn, delay):
        def during(d, proc):
            time.sleep(delay)
            fn(d)
        return during

    def clean_stderr(d, code, out, err):
        if "\x1b" in err or "\x00" in err:
            return "a control character reaches stderr raw: %r" % err[:200]
        if len(err) > 4096:
            return "stderr is %d bytes (huge value echoed whole)" % len(err)

    def not_done(d, code, out, err):
        if code == 0:
            return "exit 0 (a run whose folder is gone reported finished)"
        if "done:" in out:
            return "prints done: for a run that failed"

    ps = []
    add = ps.append

    # ---------------------------------------------------------- run-folder files as links
    for rel in ("metrics.jsonl", "checkpoint.safetensors", "config.toml", "model.safetensors"):
        add(P("r6 runs: resume with %s a link to a copy outside the run" % rel, RES, 1, "link",
              setup=link_out(GPT + "/" + rel, "outside." + rel)))
    add(P("r6 runs: resume a translation run whose metrics.jsonl is a link outside", ["train", "--resume", TR, "--set", "train.max_steps=8", "--quiet"], 1, "link",
          setup=link_out(TR + "/metrics.jsonl", "outside.jsonl")))
    add(P("r6 runs: resume with metrics.jsonl a link to a file inside the run", RES, 1, "link",
          setup=lambda d: (shutil.move(os.path.join(d, GPT, "metrics.jsonl"), os.path.join(d, GPT, "m.bak")),
                           os.symlink("m.bak", os.path.join(d, GPT, "metrics.jsonl")))))
    add(P("r6 runs: train --force over a run whose metrics.jsonl links outside (the link goes, the file stays)", ["train", "c.toml", "--force", "--quiet"], 0, None,
          setup=link_out(GPT + "/metrics.jsonl", "outside.jsonl"), allow=(GPT,)))
    add(P("r6 runs: resume a run folder reached through a link (the user named it)", ["train", "--resume", "runs/l", "--set", "train.max_steps=6", "--quiet"], 0, None,
          setup=h.symlink("c", "runs/l"), allow=(GPT,)))
    add(P("r6 runs: eval with metrics.jsonl a link to /dev/zero (eval reads no metrics)", ["eval", GPT], 0, None,
          setup=lambda d: (os.remove(os.path.join(d, GPT, "metrics.jsonl")), os.symlink("/dev/zero", os.path.join(d, GPT, "metrics.jsonl")))))

    # ---------------------------------------------------------- metrics.jsonl content at resume
    add(P("r6 runs: resume drops a row written after the checkpoint (crash between row and checkpoint)", RES, 0, None,
          setup=lambda d: open(os.path.join(d, GPT, "metrics.jsonl"), "a").write('{"step":4,"loss":3.9}\n'),
          allow=(GPT,), check=rows_ok(GPT)))
    add(P("r6 runs: resume with metrics.jsonl a folder", RES, (1, 2), None,
          setup=lambda d: (os.remove(os.path.join(d, GPT, "metrics.jsonl")), os.mkdir(os.path.join(d, GPT, "metrics.jsonl")))))
    add(P("r6 runs: resume with a metrics row that is a JSON array", RES, 1, "row 1", setup=metrics("[1,2,3]\n")))
    add(P("r6 runs: resume with a metrics row of loss 1e999", RES, 1, "row 1", setup=metrics('{"step":3,"loss":1e999}\n')))
    add(P("r6 runs: resume with a metrics row of step 2.5", RES, 1, "row 1", setup=metrics('{"step":2.5,"loss":1}\n')))
    add(P("r6 runs: resume with a metrics row holding NUL bytes", RES, 1, "row 1", setup=metrics('{"step":3,\x00"loss":1}\n')))
    add(P("r6 runs: resume with a metrics row ending in CR (CRLF file)", RES, 0, None, setup=metrics('{"step":3,"loss":4.01}\r\n'), allow=(GPT,), check=rows_ok(GPT)))
    add(P("r6 runs: resume with metrics.jsonl emptied (goes on without the row, says so)", RES[:-1], 0, None, setup=metrics(""),
          allow=(GPT,), check=lambda d, c, o, e: None if "without" in o + e else "the resume does not say the rows are gone"))

    # ---------------------------------------------------------- config.toml of a run, edited
    add(P("r6 runs: resume after [sample] prompt edited in config.toml", RES, 0, None, allow=(GPT,),
          setup=edit_cfg(lambda t: t.replace('prompt = "\\n"', 'prompt = "ROMEO:"'))))
    add(P("r6 runs: resume after an unknown key added to config.toml", RES, 2, "unknown", setup=edit_cfg(lambda t: t + "\n[train2]\nx = 1\n")))
    add(P("r6 runs: resume after train.out edited in config.toml (the run stays where it is)", RES, 0, None, allow=(GPT,),
          setup=edit_cfg(lambda t: t.replace('out = "runs/c"', 'out = "elsewhere"'))))
    add(P("r6 runs: resume after extends added to config.toml", RES, (0, 2), None, allow=(GPT,),
          setup=edit_cfg(lambda t: 'extends = "../../c.toml"\n' + t)))
    add(P("r6 runs: resume after config.toml was cut in half", RES, 2, None,
          setup=edit_cfg(lambda t: t[:len(t) // 2])))
    add(P("r6 runs: resume after config.toml grew past 1 MB of comments", RES, 2, "limit",
          setup=edit_cfg(lambda t: t + ("#" * 999 + "\n") * 1100)))
    add(P("r6 runs: resume after data.sha256 edited to another corpus's", RES, 2, None,
          setup=edit_cfg(lambda t: t.replace("b69479ce", "00000000"))))
    add(P("r6 runs: resume after model.dropout edited", RES, 2, "dropout",
          setup=edit_cfg(lambda t: t.replace("dropout = 0.0", "dropout = 0.5"))))
    add(P("r6 runs: resume after train.seed edited", RES, 2, "seed",
          setup=edit_cfg(lambda t: t.replace("seed = 42", "seed = 43"))))
    add(P("r6 runs: resume with the recorded data file a named pipe (falls back to data.path)", RES, 0, None, allow=(GPT,),
          setup=h.seq(h.mkfifo("ff"), edit_cfg(lambda t: "\n".join(
              ('# data file: "%s"' % "ff") if l.startswith("# data file:") else l for l in t.split("\n"))))))
    add(P("r6 runs: resume with the recorded data file /dev/zero and data.path missing", RES, (1, 2), None,
          setup=h.seq(lambda d: os.remove(os.path.join(d, "tiny.txt")), edit_cfg(lambda t: "\n".join(
              '# data file: "/dev/zero"' if l.startswith("# data file:") else '# data file from this folder: "/dev/zero"' if l.startswith("# data file from") else l
              for l in t.split("\n"))))))
    add(P("r6 runs: resume with the corpus replaced by a same-size file of the same characters", RES, 2, None,
          setup=lambda d: h.rewrite(os.path.join(d, "tiny.txt"), lambda t: t[1:] + t[0])))
    add(P("r6 runs: resume with the corpus grown by one line", RES, 2, None,
          setup=lambda d: open(os.path.join(d, "tiny.txt"), "a").write("First Citizen:\n")))

    # ---------------------------------------------------------- flags
    add(P("r6 runs: resume --set train.max_steps=-1", ["train", "--resume", GPT, "--set", "train.max_steps=-1"], 2, "max_steps"))
    add(P("r6 runs: resume --set train.epochs=nan", ["train", "--resume", GPT, "--set", "train.epochs=nan"], 2, "epochs"))
    add(P("r6 runs: resume --set train.max_memory=1e-9 (the machine's limit refuses)", ["train", "--resume", GPT, "--set", "train.max_steps=6", "--set", "train.max_memory=0.000000001"], 2, "max_memory"))
    add(P("r6 runs: resume --set with spaces around =", ["train", "--resume", GPT, "--set", " train.max_steps = 6 ", "--quiet"], 0, None, allow=(GPT,)))
    add(P("r6 runs: resume a folder given with a trailing slash", ["train", "--resume", GPT + "/", "--set", "train.max_steps=6", "--quiet"], 0, None, allow=(GPT,)))
    add(P("r6 runs: resume --set train.lr (not a length)", ["train", "--resume", GPT, "--set", "train.lr=0.1"], 2, "train.lr"))
    add(P("r6 runs: train --force --init a missing file keeps the old run", ["train", "c.toml", "--force", "--init", "nope.safetensors"], 2, None,
          check=h.unchanged(GPT + "/model.safetensors")))
    add(P("r6 runs: train --init the run it trains into (--force)", ["train", "c.toml", "--force", "--init", GPT, "--quiet"], 0, None, allow=(GPT,)))
    add(P("r6 runs: train --init a model file with NaN weights", ["train", "c.toml", "--set", "train.out=runs/n", "--init", "n.safetensors"], (1, 2), None,
          setup=h.st_edit(h.GPTM, "n.safetensors", lambda hd, data: (hd, b"\x00\x00\xc0\x7f" * (len(data) // 4)))))

    # ---------------------------------------------------------- two commands on one folder at once
    d1, c1 = second(["train", "--resume", "runs/long"], 1, "in use")
    add(P("r6 runs: a resume while the run trains", ["train", "long.toml", "--quiet"], (0, 130), None, setup=h.write("long.toml", LONG.replace("3000", "30000")),
          during=d1, check=c1, allow=("runs/long",), timeout=120))
    d2, c2 = second(["train", "long.toml", "--force"], 1, "in use")
    add(P("r6 runs: train --force of the same folder while it trains", ["train", "long.toml", "--quiet"], (0, 130), None, setup=h.write("long.toml", LONG.replace("3000", "30000")),
          during=d2, check=c2, allow=("runs/long",), timeout=120))
    d3, c3 = second(["eval", "runs/long"], 0)
    add(P("r6 runs: eval of a run while it trains", ["train", "long.toml", "--quiet"], (0, 130), None, setup=h.write("long.toml", LONG.replace("3000", "30000")),
          during=d3, check=c3, allow=("runs/long",), timeout=120))
    d4, c4 = second(["train", "long2.toml"], 1, "in use")
    add(P("r6 runs: a second config whose train.out is the same folder, while it trains", ["train", "long.toml", "--quiet"], (0, 130), None,
          setup=h.seq(h.write("long.toml", LONG.replace("3000", "30000")), h.write("long2.toml", LONG.replace("embedding = 32", "embedding = 16"))),
          during=d4, check=c4, allow=("runs/long",), timeout=120))

    def lock_lost(d, proc):
        """Once the run has a checkpoint, its lock file is deleted (a
        "stale lock" cleaned up) and a resume starts beside it."""
        t0 = time.time()
        while time.time() - t0 < 60 and not os.path.exists(os.path.join(d, "runs/long/checkpoint.safetensors")):
            time.sleep(0.005)
        os.remove(os.path.join(d, "runs/long/.gptg.lock"))
        q = subprocess.Popen([h.BIN, "train", "--resume", "runs/long", "--quiet"], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3)
        q.send_signal(signal.SIGINT)
        q.wait(timeout=60)
    add(P("r6 runs: the lock file deleted mid-run and a resume started: the first run stops", ["train", "long.toml", "--quiet"], 1, "lock file removed or replaced",
          setup=h.write("long.toml", LONG.replace("3000", "30000")), during=lock_lost, allow=("runs/long",), timeout=120))
    add(P("r6 runs: two trainings of one new folder started at the same instant: one trains, one is refused", ["train", "long.toml", "--quiet"], (0, 1), None,
          setup=h.write("long.toml", LONG.replace("3000", "200")), allow=("runs/long",), timeout=120,
          during=lambda d, proc: _race.update(r=subprocess.run([h.BIN, "train", "long.toml", "--quiet"], cwd=d, capture_output=True, text=True, timeout=100)),
          check=lambda d, c, o, e: None if sorted([c, _race["r"].returncode]) == [0, 1] and ("in use" in e + _race["r"].stderr or "already holds" in e + _race["r"].stderr)
          else "two trainings of one folder: exits %d and %d (%s | %s)" % (c, _race["r"].returncode, e.strip()[:150], _race["r"].stderr.strip()[:150])))

    def hard(rel, outside):
        """rel (a file of a run) becomes a second name of a file outside the run."""
        def setup(d):
            p = os.path.join(d, rel)
            shutil.copy(p, os.path.join(d, outside)) if os.path.getsize(p) else open(os.path.join(d, outside), "w").write("keep me\n")
            os.remove(p)
            os.link(os.path.join(d, outside), p)
        return setup
    add(P("r6 runs: the lock file a hard link to a file outside the run, resume", RES, 1, "hard link", setup=hard(GPT + "/.gptg.lock", "precious.txt")))
    add(P("r6 runs: the lock file a hard link to a file outside the run, train --force", ["train", "c.toml", "--force"], 1, "hard link", setup=hard(GPT + "/.gptg.lock", "precious.txt")))
    add(P("r6 runs: resume with metrics.jsonl a hard link outside (cp -al backup; the rewrite parts them)", RES, 0, None, allow=(GPT,),
          setup=hard(GPT + "/metrics.jsonl", "backup.jsonl")))
    add(P("r6 runs: resume with the checkpoint a hard link outside (cp -al backup; the rewrite parts them)", RES, 0, None, allow=(GPT,),
          setup=hard(GPT + "/checkpoint.safetensors", "backup.safetensors")))

    # ---------------------------------------------------------- the run folder changes under a training
    add(P("r6 runs: the run folder deleted mid-run", ["train", "long.toml", "--quiet"], 1, None, setup=h.write("long.toml", LONG),
          during=during_do(lambda d: shutil.rmtree(os.path.join(d, "runs/long")), 0.8), allow=("runs/long",), check=not_done, timeout=120))
    add(P("r6 runs: the run folder renamed mid-run", ["train", "long.toml", "--quiet"], 1, None, setup=h.write("long.toml", LONG),
          during=during_do(lambda d: os.rename(os.path.join(d, "runs/long"), os.path.join(d, "runs/moved")), 0.8),
          allow=("runs/long", "runs/moved"), timeout=120,
          check=chain(not_done, lambda d, c, o, e: then(["train", "--resume", "runs/moved", "--quiet", "--set", "train.max_steps=3001"])(d, c, o, e)
                      if os.path.exists(os.path.join(d, "runs/moved/checkpoint.safetensors")) else None, h.no_temp_files)))
    add(P("r6 runs: the run folder replaced by a file mid-run", ["train", "long.toml", "--quiet"], 1, None, setup=h.write("long.toml", LONG),
          during=during_do(lambda d: (shutil.rmtree(os.path.join(d, "runs/long")), open(os.path.join(d, "runs/long"), "w").write("x")), 0.8),
          allow=("runs/long",), check=not_done, timeout=120))
    add(P("r6 runs: checkpoint.safetensors deleted mid-run (the next one is written)", ["train", "long.toml", "--quiet"], 0, None,
          setup=h.write("long.toml", LONG.replace("3000", "400")),
          during=during_do(lambda d: os.remove(os.path.join(d, "runs/long/checkpoint.safetensors")), 0.8), allow=("runs/long",), timeout=120))

    # ---------------------------------------------------------- signals at new moments
    add(P("r6 runs: SIGINT twice, 50 ms apart; the resume equals the uninterrupted run", ["train", "mid.toml", "--quiet"], (0, 130), None,
          setup=train_ref(MID, "mid.toml", "runs/ref"),
          during=lambda d, proc: (_wait_for(d, "runs/mid/checkpoint.safetensors"), os.kill(proc.pid, signal.SIGINT), time.sleep(0.05), os.kill(proc.pid, signal.SIGINT)),
          allow=("runs/mid",), timeout=180,
          check=chain(h.no_temp_files, then(["train", "--resume", "runs/mid", "--quiet"]), same_as("runs/ref", "runs/mid"))))
    add(P("r6 runs: SIGTERM during the final evaluation; the resume equals the uninterrupted run", ["train", "mid.toml", "--quiet"], (0, 130), None,
          setup=train_ref(EVAL, "mid.toml", "runs/ref"),
          during=h.signal_at(signal.SIGTERM, 0.3, "runs/mid/config.toml"), allow=("runs/mid",), timeout=180,
          check=chain(h.no_temp_files, lambda d, c, o, e: then(["train", "--resume", "runs/mid", "--quiet"])(d, c, o, e) if c == 130 else None,
                      same_as("runs/ref", "runs/mid"))))
    add(P("r6 runs: SIGINT at once (before the run folder is made; a loaded machine may still be starting Go: any exit)", ["train", "mid.toml", "--quiet"], None, None,
          setup=h.write("mid.toml", MID), during=h.signal_at(signal.SIGINT, 0.0), allow=("runs/mid",), timeout=60,
          check=chain(h.no_temp_files, lambda d, c, o, e: None if not os.path.exists(os.path.join(d, "runs/mid")) or os.path.exists(os.path.join(d, "runs/mid/checkpoint.safetensors"))
                      else "an interrupted start leaves a run folder without a checkpoint: %s" % os.listdir(os.path.join(d, "runs/mid")))))
    add(P("r6 runs: SIGINT after 0.5 s of a resume at another --threads; the next resume equals the uninterrupted run", ["train", "--resume", "runs/mid", "--threads", "1", "--quiet"], (0, 130), None,
          setup=h.seq(train_ref(MID, "mid.toml", "runs/ref"),
                      lambda d: _interrupted(h, d, "mid.toml", 0.7)),
          during=h.signal_at(signal.SIGINT, 0.5), allow=("runs/mid",), timeout=180,
          check=chain(h.no_temp_files, lambda d, c, o, e: then(["train", "--resume", "runs/mid", "--quiet"])(d, c, o, e) if c == 130 else None,
                      same_as("runs/ref", "runs/mid"))))
    add(P("r6 runs: SIGKILL mid-run, then resume: no temporary file left in the run folder", ["train", "long.toml", "--quiet"], None, None,
          setup=h.write("long.toml", LONG.replace("checkpoint_every = 20", "checkpoint_every = 1")),
          during=h.signal_at(signal.SIGKILL, 1.0), allow=("runs/long",), timeout=120,
          check=chain(then(["train", "--resume", "runs/long", "--set", "train.max_steps=3010", "--quiet"]), h.no_temp_files)))

    # ---------------------------------------------------------- disk full at new moments
    if os.geteuid() == 0:
        def full_copy(size, fill):
            """The fixture run copied into a tmpfs of size, then filled to fill bytes free."""
            def setup(d):
                h.mount_full(size)(d)
                shutil.copytree(os.path.join(d, GPT), os.path.join(d, "full/c"), symlinks=True)
                h.rewrite(os.path.join(d, "full/c/config.toml"), lambda t: t.replace('out = "runs/c"', 'out = "full/c"'))
                st = os.statvfs(os.path.join(d, "full"))
                free = st.f_bavail * st.f_frsize
                with open(os.path.join(d, "full/filler"), "wb") as f:
                    f.write(b"\0" * max(0, free - fill))
            return setup

        def intact(d, code, out, err):
            """After a resume that failed for room: no temporary file, the
            checkpoint and model as they were, and once there is room a
            resume ends exactly as the uninterrupted extension of the run."""
            t = h.no_temp_files(d, code, out, err)
            if t:
                return t
            if code != 0:
                for n in ("checkpoint.safetensors", "model.safetensors"):
                    if sha(os.path.join(d, "full/c", n)) != sha(os.path.join(d, GPT, n)):
                        return "full/c/%s changed by a resume that failed" % n
                os.remove(os.path.join(d, "full/filler"))
                why = then(["train", "--resume", "full/c", "--set", "train.max_steps=60", "--quiet"])(d, code, out, err)
                if why:
                    return why
            shutil.copytree(os.path.join(d, GPT), os.path.join(d, "runs/ref"))
            why = then(["train", "--resume", "runs/ref", "--set", "train.max_steps=60", "--quiet"])(d, code, out, err)
            return why or same_as("runs/ref", "full/c")(d, 0, out, err)

        for fill in (0, 2048, 20000, 45000):
            add(P("r6 runs: disk full during a resume (%d bytes free): the run as it was" % fill,
                  ["train", "--resume", "full/c", "--set", "train.max_steps=60", "--quiet"], (0, 1), None,
                  setup=full_copy("256k", fill), allow=("full", "runs/ref"), check=intact))
        for size in ("72k", "96k", "128k", "200k"):
            add(P("r6 runs: disk full mid-run (tmpfs %s, a row per step); a resume with room finishes with consistent metrics" % size,
                  ["train", "x.toml", "--quiet"], 1, "space",
                  setup=h.seq(h.mount_full(size), h.write("x.toml", small(h).replace('"runs/long"', '"full/run"'))),
                  allow=("full",), timeout=120,
                  check=chain(h.no_temp_files,
                              lambda d, c, o, e: subprocess.run(["mount", "-o", "remount,size=8m", os.path.join(d, "full")]) and None,
                              then(["train", "--resume", "full/run", "--quiet"]), rows_ok("full/run"))))
        add(P("r6 runs: disk full at a word-level run's first file", ["train", "words.toml", "--set", "train.out=full/w", "--quiet"], 1, "space",
              setup=h.mount_full("4k"), allow=("full",), check=h.no_partial(None)))

    # ---------------------------------------------------------- corpora
    def corpus(data, name="k.txt", extra=""):
        mode = "wb" if isinstance(data, bytes) else "w"
        return h.seq(h.write(name, data, mode), h.write("k.toml", G.replace("tiny.txt", name) + extra + "[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 4\nmax_steps = 2\nout = \"runs/k\"\n"))
    K = ["train", "k.toml", "--quiet"]
    add(P("r6 runs: corpus of invalid UTF-8", K, 1, "UTF-8", setup=corpus(b"abc\xff\xfe" * 2000)))
    add(P("r6 runs: corpus with NUL bytes (a binary file)", K, (0, 2), None, setup=corpus(b"ab\x00cd\x00" * 2000), allow=("runs/k",)))
    add(P("r6 runs: corpus of one line of 40 MB", K, (0, 2), None, setup=corpus("abcdefgh" * (5 << 20)), allow=("runs/k",), max_mb=1500, timeout=120))
    add(P("r6 runs: word corpus of 1.2M distinct words", K, 1, None, setup=corpus(" ".join("w%d" % i for i in range(1200000)), extra='tokenizer = "word"\n'), max_mb=1500, timeout=120))
    add(P("r6 runs: char corpus of 1.1M distinct characters", K, 1, None,
          setup=corpus("".join(chr(c) for c in range(0x100, 0x10ffff) if not 0xd800 <= c < 0xe000)[:1100000] * 2), max_mb=1500, timeout=120))
    add(P("r6 runs: word corpus of 6M distinct words (53 MB): refused in bounded memory", K, 1, "distinct words", max_mb=300, timeout=180,
          setup=corpus(" ".join("w%d" % i for i in range(6000000)), extra='tokenizer = "word"\n')))
    add(P("r6 runs: corpus a sparse 6 GB file", K, 2, None,
          setup=h.seq(corpus("x"), lambda d: os.truncate(os.path.join(d, "k.txt"), 6 << 30)), timeout=60))
    add(P("r6 runs: corpus /proc/self/fd/0 with a pipe on stdin", ["train", "k.toml", "--set", "data.path=/proc/self/fd/0"], 2, None, setup=corpus("x"), stdin="First Citizen:\n" * 1000))
    add(P("r6 runs: corpus /dev/stdin", ["train", "k.toml", "--set", "data.path=/dev/stdin"], 2, None, setup=corpus("x")))
    add(P("r6 runs: corpus a link to a folder", K, 1, None, setup=h.seq(corpus("x"), lambda d: (os.remove(os.path.join(d, "k.txt")), os.symlink("runs", os.path.join(d, "k.txt"))))))
    add(P("r6 runs: word corpus of blank lines only", K, 1, None, setup=corpus("\n \n\t\n" * 1000, extra='tokenizer = "word"\n')))
    add(P("r6 runs: corpus of one character repeated (vocabulary of one)", K, (0, 2), None, setup=corpus("a" * 5000), allow=("runs/k",)))
    add(P("r6 runs: corpus of context+1 characters", K, 1, None, setup=corpus("abcdefghi"), allow=("runs/k",)))
    add(P("r6 runs: corpus of U+2028, BOMs mid-file and CR-only line ends (word)", K, 0, None,
          setup=corpus(("the cat\u2028sees\ufeff the dog.\r" * 800), extra='tokenizer = "word"\n'), allow=("runs/k",)))
    add(P("r6 runs: data.path = builtin: (no name)", ["graph", "k.toml", "--set", "data.path=builtin:"], 2, "built-in", setup=corpus("x")))
    add(P("r6 runs: tokenizer = bpe", ["graph", "k.toml"], 2, "tokenizer", setup=corpus("x" * 100, extra='tokenizer = "bpe"\n')))
    add(P("r6 runs: corpus changed while the run trains; the resume refuses", ["train", "long.toml", "--quiet"], (0, 130), None,
          setup=h.write("long.toml", LONG.replace("3000", "600")),
          during=lambda d, proc: (time.sleep(0.6), open(os.path.join(d, "tiny.txt"), "a").write("more text\n"), time.sleep(0.2), os.kill(proc.pid, signal.SIGINT)),
          allow=("runs/long", "tiny.txt"), timeout=120,
          check=lambda d, c, o, e: None if c != 130 else (
              None if subprocess.run([h.BIN, "train", "--resume", "runs/long"], cwd=d, capture_output=True).returncode == 2
              else "the resume after the corpus grew was not refused")))

    # ---------------------------------------------------------- translation pairs
    def pairs(text, mode="w"):
        return h.seq(h.write("p.tsv", text, mode), h.write("x.toml", h.TRB.replace('"toy.tsv"', '"p.tsv"')))
    X = ["train", "x.toml", "--quiet"]
    good = h.toy_tsv()
    add(P("r6 runs: pairs with CR-only line ends", X, (0, 2), None, setup=pairs(good.replace("\n", "\r")), allow=("runs/t2",)))
    add(P("r6 runs: pairs with a third column (ignored, as Tatoeba's attribution)", X, 0, None, setup=pairs(good + "a1\tb1\tc1\n"), allow=("runs/t2",),
          check=lambda d, c, o, e: "c1" in vocab(d, "runs/t2/model.safetensors", "tgt_vocab") and "the third column's word c1 is in the target vocabulary" or None))
    add(P("r6 runs: pairs of invalid UTF-8", X, 2, "UTF-8", setup=pairs(good.encode() + b"a\xff\tb\n", "wb")))
    add(P("r6 runs: pairs with 100k distinct words (one step; the evaluation is the work)", X + ["--set", "train.max_steps=1"], 0, None, max_mb=1500, timeout=240,
          setup=pairs(good + "".join("s%d s%d\tt%d\n" % (i, i + 1, i) for i in range(0, 100000, 2))), allow=("runs/t2",)))
    add(P("r6 runs: pairs of 12M short lines (48 MB): refused in bounded memory", X, 2, "a pairs corpus may", max_mb=1100, timeout=240,
          setup=pairs("a\tb\n" * 12000000)))
    add(P("r6 runs: pairs of one sentence 100,000 times (every copy on one side of the split)", X, 2, None, timeout=120,
          setup=pairs("a1 a2\tb1 b2\n" * 100000)))
    add(P("r6 runs: pairs with a line of a lone tab (left out: no source word)", X, 0, None, setup=pairs(good + "\t\n"), allow=("runs/t2",)))
    add(P("r6 runs: pairs with NBSP between words", X, 0, None, setup=pairs(good.replace(" ", "\u00a0")), allow=("runs/t2",)))
    add(P("r6 runs: translation resume after pairs appended", ["train", "--resume", TR, "--set", "train.max_steps=8"], 2, None,
          setup=lambda d: open(os.path.join(d, "toy.tsv"), "a").write("a1 a2\tb1 b2\n")))

    # ---------------------------------------------------------- configs
    def C(what, text, code, msg=None, cmd="graph", **kw):
        add(P("r6 runs: config " + what, [cmd, "x.toml"] + (["--quiet"] if cmd == "train" else []), code, msg, setup=h.cfg(text), **kw))
    add(P("r6 runs: config extends a link to itself (a cycle by another name)", ["graph", "x.toml"], 2, "cycle",
          setup=h.seq(h.cfg('extends = "l.toml"\n' + G), h.symlink("x.toml", "l.toml"))))
    C("extends ./x.toml (itself)", 'extends = "./x.toml"\n' + G, 2, "cycle")
    add(P("r6 runs: config a cycle of two files", ["graph", "x.toml"], 2, "cycle",
          setup=h.seq(h.cfg('extends = "y.toml"\n' + G), h.write("y.toml", 'extends = "x.toml"\n'))))
    C("extends /dev/stdin", 'extends = "/dev/stdin"\n' + G, 2)
    add(P("r6 runs: config extends /proc/self/fd/0 with a pipe on stdin", ["graph", "x.toml"], 2, None, setup=h.cfg('extends = "/proc/self/fd/0"\n' + G), stdin=G))
    C("extends a name with NUL", 'extends = "a\\u0000b.toml"\n' + G, 2)
    C("data.path with ESC sequences (quoted in the message)", '[data]\npath = "\\u001b[31mred\\u001b[0m.txt"\n[train]\nout = "runs/e"\n', 1, None, cmd="train", check=clean_stderr)
    C("train.out with ESC sequences", G + '[train]\nout = "runs/\\u001b[2J"\nmax_steps = 1\n', 2, None, cmd="train", check=clean_stderr)
    C("train.out with NUL", G + '[train]\nout = "runs/a\\u0000b"\nmax_steps = 1\n', 2, None, cmd="train", check=clean_stderr)
    C("train.out = . (the working folder)", G + '[train]\nout = "."\nmax_steps = 1\n', 2, None, cmd="train")
    C("train.out = runs (a folder of runs)", G + '[train]\nout = "runs"\nmax_steps = 1\n', 2, None, cmd="train")
    C("train.out of 5,000 characters", G + '[train]\nout = "%s"\nmax_steps = 1\n' % ("d/" * 2500), (1, 2), None, cmd="train", check=clean_stderr)
    C("train.out under the corpus file", G + '[train]\nout = "tiny.txt/run"\nmax_steps = 1\n', 2, None, cmd="train")
    C("lr = 1e-400 (underflows to 0)", G + "[train]\nlr = 1e-400\n", 2, "lr")
    C("lr = 1e400 (overflows)", G + "[train]\nlr = 1e400\n", 2, None)
    C("epochs = 1e-9 (no step)", G + "[train]\nepochs = 1e-9\n", 1, "epochs", cmd="train")
    C("seed a date", G + "[train]\nseed = 1979-05-27\n", 2, "seed")
    C("batch = 4.0", G + "[train]\nbatch = 4.0\n", 2, "batch")
    C("[[model]] (an array of tables)", G + "[[model]]\nheads = 2\n", 2, None)
    C("split = 1.0 (no test split)", G + "split = 1.0\n", 2, "split")
    C("split = 1e-300", G + "split = 1e-300\n", 1, "split")
    C("stride = 2^63-1 (one window a side)", G + "stride = 9223372036854775807\n[train]\nbatch = 1\nmax_steps = 1\nout = \"runs/s\"\n", 0, None, cmd="train", allow=("runs/s",))
    C("threads = 2^31", G + "[train]\nthreads = 2147483648\n", 2, "threads")
    C("max_memory = inf", G + "[train]\nmax_memory = inf\n", 2, "max_memory")
    C("max_memory = 1e300 (no limit to speak of)", G + "[train]\nmax_memory = 1e300\n", 0, None)
    C("warmup = 2^63-1 on a 3-step run (finite loss)", G + '[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nwarmup = 9223372036854775807\nmax_steps = 3\nout = "runs/w"\n', 0, None, cmd="train",
      allow=("runs/w",), check=lambda d, c, o, e: "NaN" in open(os.path.join(d, "runs/w/metrics.jsonl")).read() and "a NaN in the metrics" or None)
    C("log_every = 2^63-1 on a 3-step run (the last row is written)", G + '[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nlog_every = 9223372036854775807\nmax_steps = 3\nout = "runs/w"\n', 0, None, cmd="train",
      allow=("runs/w",), check=lambda d, c, o, e: None if open(os.path.join(d, "runs/w/metrics.jsonl")).read().count("\n") >= 1 else "no metrics row")
    C("checkpoint_every = 2^63-1 (one at the end)", G + '[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\ncheckpoint_every = 9223372036854775807\nmax_steps = 3\nout = "runs/w"\n', 0, None, cmd="train", allow=("runs/w",))
    C("a key of 1 MB (message cut)", G + "[model]\n" + "k" * 1000000 + " = 1\n", 2, None, check=clean_stderr)
    C("data.path of 500 KB (message cut)", '[data]\npath = "' + "p" * 500000 + '"\n', 2, None, check=clean_stderr, cmd="train")
    C("min_lr above lr", G + "[train]\nlr = 0.001\nmin_lr = 0.01\n", (0, 2), None)
    C("eval_batches = 1 on a 3-step run", G + '[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\neval_batches = 1\neval_every = 1\nmax_steps = 3\nout = "runs/w"\n', 0, None, cmd="train", allow=("runs/w",))
    C("model.vocab smaller than the corpus's characters", G + '[model]\nvocab = 3\n[train]\nmax_steps = 1\nout = "runs/w"\n', 1, "vocab", cmd="train")
    C("top_k = -1", G + "[sample]\ntop_k = -1\n", 2, "top_k")
    C("top_p = 2", G + "[sample]\ntop_p = 2.0\n", 2, "top_p")
    C("dtype = float16", G + '[model]\ndtype = "float16"\n', 2, "dtype")
    C("a dotted key at the top level", G + "model.heads = 2\n", (0, 2), None)
    return ps


_race = {}


def _wait_for(d, rel, limit=60):
    t0 = time.time()
    while time.time() - t0 < limit and not os.path.exists(os.path.join(d, rel)):
        time.sleep(0.002)


def vocab(d, path, key):
    with open(os.path.join(d, path), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(json.loads(f.read(n))["__metadata__"][key])


def _interrupted(h, d, name, delay):
    """Setup: trains name (into runs/mid) and interrupts it with SIGINT at its first checkpoint."""
    p = subprocess.Popen([h.BIN, "train", name, "--quiet"], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.time()
    while time.time() - t0 < 60 and not os.path.exists(os.path.join(d, "runs/mid/checkpoint.safetensors")):
        time.sleep(0.002)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=60)
