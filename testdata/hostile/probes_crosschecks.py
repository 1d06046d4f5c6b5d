"""Probes across commands (names start "audit"):
answers checked against an independent computation where one exists (the
loss training logged, the same command another way: another thread count,
another code path, another surface), outputs of one command fed to another,
an imported nanoGPT model given to every command, run folders edited or
linked between two commands, serve beside a resume, and commands run from a
read-only working folder (a write there fails with EROFS in the sandbox).

Loaded by probe.py (probes(h) returns a list of h.Probe); run inside the
sandbox only:  /work/sandbox DIR python3 testdata/hostile/probe.py BIN --only audit
"""

import json
import os
import re

IMP = "mkdir -p o && $G import nanogpt ckpt.pt --out o/imp.safetensors >/dev/null && "


def _logged_test_loss(d, run):
    with open(os.path.join(d, run, "metrics.jsonl")) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    return [r["test_loss"] for r in rows if "test_loss" in r][-1]


def same_as_logged(run):
    """eval's test loss must be the test loss the training logged at its end."""
    def check(d, code, out, err):
        m = re.search(r"test loss ([0-9.]+)", out)
        if not m:
            return "no test loss in %r" % out[:200]
        want = _logged_test_loss(d, run)
        if abs(float(m.group(1)) - want) > 2e-6:
            return "eval says %s, the training logged %.6f" % (m.group(1), want)
    return check


def cmp_sh(a, b, setup=""):
    """A shell script printing SAME when the outputs of commands a and b are
    byte-identical (each command's stdout goes to its own file)."""
    return ("mkdir -p o && %s(%s) > o/a 2>/dev/null && (%s) > o/b 2>/dev/null && "
            "if cmp -s o/a o/b && [ -s o/a ]; then echo SAME; else echo DIFF; head -c 300 o/a o/b; fi" % (setup, a, b))


def files_same_sh(script, f1, f2):
    return ("mkdir -p o && (%s) >/dev/null 2>&1; if cmp -s %s %s && [ -s %s ]; then echo SAME; else echo DIFF; fi"
            % (script, f1, f2, f1))


SERVE = r"""
mkdir -p o
$G serve runs --addr 127.0.0.1:0 > o/sv.out 2> o/sv.err &
SP=$!
for i in $(seq 100); do P=$(grep -ho '127.0.0.1:[0-9]*' o/sv.out o/sv.err 2>/dev/null | head -1); [ -n "$P" ] && break; sleep 0.1; done
q(){ curl -s -m 20 "$@"; }
"""
SERVE_END = "\nkill $SP; wait $SP 2>/dev/null; exit 0\n"


def sse_text(path_expr):
    # The tokens of a /api/generate event stream, joined.
    return ("python3 -c \"import json,sys; t=sys.stdin.read().split('\\n'); "
            "print(''.join(json.loads(l[6:]) for i,l in enumerate(t) if l.startswith('data: ') and t[i-1]=='event: token'), end='')\" < %s" % path_expr)


def probes(h):
    P = h.Probe
    ps = []

    def A(name, *a, **k):
        ps.append(P("audit: " + name, *a, **k))

    # ------------------------------------------- answers checked independently
    A("eval of the char run equals the test loss its training logged", ["eval", "runs/c"], 0, check=same_as_logged("runs/c"))
    A("eval of the word run equals the test loss its training logged", ["eval", "runs/words"], 0, check=same_as_logged("runs/words"))
    A("eval of the translation run equals the test loss its training logged", ["eval", "runs/toy"], 0, check=same_as_logged("runs/toy"))
    A("eval of the run's model file with --data its corpus equals the logged loss",
      ["eval", "runs/c/model.safetensors", "--data", "tiny.txt", "--batch", "4"], 0, check=same_as_logged("runs/c"))
    A("eval --batch 1 gives the loss of --batch 4 (whole batches: the same mean)",
      [], 0, shell=cmp_sh("$G eval runs/c --batch 1 | head -1", "$G eval runs/c --batch 4 | head -1"), stdout="SAME", allow=("o",))
    A("eval --threads 1 and --threads 2 agree", [], 0,
      shell=cmp_sh("$G eval runs/words --threads 1", "$G eval runs/words --threads 2"), stdout="SAME", allow=("o",))
    A("eval through a link to the run folder equals eval of the folder", [], 0,
      shell=cmp_sh("$G eval lnk | head -1", "$G eval runs/c | head -1", "ln -s runs/c lnk && "), stdout="SAME", allow=("o", "lnk"))
    A("eval of runs/c/ and ./runs/../runs/c agree", [], 0,
      shell=cmp_sh("$G eval runs/c/ | head -1", "$G eval ./runs/../runs/c | head -1"), stdout="SAME", allow=("o",))
    A("sample twice with one seed: the same text", [], 0,
      shell=cmp_sh("$G sample runs/c --tokens 40 --seed 7", "$G sample runs/c --tokens 40 --seed 7"), stdout="SAME", allow=("o",))
    A("sample --threads 1 and 2: the same text", [], 0,
      shell=cmp_sh("$G sample runs/words --prompt the --tokens 40 --threads 1", "$G sample runs/words --prompt the --tokens 40 --threads 2"), stdout="SAME", allow=("o",))
    A("sample --top-k 1 is greedy (= --temperature 0)", [], 0,
      shell=cmp_sh("$G sample runs/c --tokens 30 --top-k 1 --seed 3", "$G sample runs/c --tokens 30 --temperature 0 --seed 9"),
      stdout="SAME", allow=("o",))
    A("sample --top-p 1e-9 is greedy (= --temperature 0)", [], 0,
      shell=cmp_sh("$G sample runs/c --tokens 30 --top-p 1e-9 --seed 3", "$G sample runs/c --tokens 30 --temperature 0"),
      stdout="SAME", allow=("o",))
    A("sample --top-k of the whole vocabulary equals no top-k", [], 0,
      shell=cmp_sh("$G sample runs/c --tokens 30 --top-k 55 --seed 5", "$G sample runs/c --tokens 30 --seed 5"),
      stdout="SAME", allow=("o",))
    A("sample --top-p 1 equals no top-p", [], 0,
      shell=cmp_sh("$G sample runs/c --tokens 30 --top-p 1 --seed 5", "$G sample runs/c --tokens 30 --seed 5"),
      stdout="SAME", allow=("o",))
    for t in ("1e-300", "1e-45", "1e-30"):
        A("sample --temperature %s is greedy (= --temperature 0), no NaN" % t, [], 0,
          shell=cmp_sh("$G sample runs/c --tokens 30 --temperature " + t, "$G sample runs/c --tokens 30 --temperature 0"),
          stdout="SAME", allow=("o",))
    A("sample --top-p 5e-324 is greedy", [], 0,
      shell=cmp_sh("$G sample runs/c --tokens 30 --top-p 5e-324", "$G sample runs/c --tokens 30 --temperature 0"),
      stdout="SAME", allow=("o",))
    A("sample --temperature 1e300 and 1e30 draw the same (both uniform), no NaN", [], 0,
      shell=cmp_sh("$G sample runs/c --tokens 30 --temperature 1e300", "$G sample runs/c --tokens 30 --temperature 1e30"),
      stdout="SAME", allow=("o",))
    A("sample --seed 2^64-1 is accepted", ["sample", "runs/c", "--tokens", "5", "--seed", "18446744073709551615"], 0)
    A("sample --seed 2^64 is refused", ["sample", "runs/c", "--tokens", "5", "--seed", "18446744073709551616"], 2)
    A("train: the last of two --set of one key wins", [], 0,
      shell="$G train c.toml --train.max_steps=5 --set train.max_steps=7 --set train.out=o/r --quiet", allow=("o",), stdout="done: 7 steps")
    A("sample of the run folder equals sample of its model file", [], 0,
      shell=cmp_sh("$G sample runs/c --tokens 30", "$G sample runs/c/model.safetensors --tokens 30"), stdout="SAME", allow=("o",))
    A("sample --prompt-file equals --prompt of the same text", [], 0,
      shell=cmp_sh("$G sample runs/c --prompt-file o/p --tokens 20", "$G sample runs/c --prompt 'First' --tokens 20",
                   "mkdir -p o && printf First > o/p && "), stdout="SAME", allow=("o",))
    A("attention tables: --threads 1 and 2 agree", [], 0,
      shell=cmp_sh("$G attention runs/c --text First --threads 1", "$G attention runs/c --text First --threads 2"),
      stdout="SAME", allow=("o",))
    A("translate --no-cache equals the cached translation (greedy)", [], 0,
      shell=cmp_sh("$G translate runs/toy --text 'a1 a2 a3'", "$G translate runs/toy --text 'a1 a2 a3' --no-cache"),
      stdout="SAME", allow=("o",))
    A("translate --no-cache equals the cached translation (beam 3)", [], 0,
      shell=cmp_sh("$G translate runs/toy --text 'a1 a2 a3' --beam 3", "$G translate runs/toy --text 'a1 a2 a3' --beam 3 --no-cache"),
      stdout="SAME", allow=("o",))
    A("translate --beam 1 equals the default (greedy)", [], 0,
      shell=cmp_sh("$G translate runs/toy --text 'a4 a0 a1' --beam 1", "$G translate runs/toy --text 'a4 a0 a1'"),
      stdout="SAME", allow=("o",))
    A("translate of lines on stdin equals --text one by one", [], 0,
      shell=cmp_sh("printf 'a1 a2 a3\\na4 a0 a1\\n' | $G translate runs/toy",
                   "$G translate runs/toy --text 'a1 a2 a3'; $G translate runs/toy --text 'a4 a0 a1'"), stdout="SAME", allow=("o",))
    A("resume-extend of the char run is bit-identical to one straight run", [], 0,
      shell=files_same_sh("$G train c.toml --set train.max_steps=6 --set train.out=o/straight --quiet && "
                          "$G train --resume runs/c --set train.max_steps=6 --quiet",
                          "o/straight/model.safetensors", "runs/c/model.safetensors"), stdout="SAME", allow=("o", "runs/c"), timeout=120)
    A("resume-extend of the word run is bit-identical to one straight run", [], 0,
      shell=files_same_sh("$G train words.toml --set train.max_steps=7 --set train.out=o/straight --quiet && "
                          "$G train --resume runs/words --set train.max_steps=7 --quiet",
                          "o/straight/model.safetensors", "runs/words/model.safetensors"), stdout="SAME", allow=("o", "runs/words"), timeout=120)
    A("resume-extend of the translation run is bit-identical to one straight run", [], 0,
      shell=files_same_sh("$G train toy.toml --set train.max_steps=9 --set train.out=o/straight --quiet && "
                          "$G train --resume runs/toy --set train.max_steps=9 --quiet",
                          "o/straight/model.safetensors", "runs/toy/model.safetensors"), stdout="SAME", allow=("o", "runs/toy"), timeout=120)
    A("train --threads 1 and --threads 2 write the same model", [], 0,
      shell=files_same_sh("$G train c.toml --set train.out=o/t1 --threads 1 --quiet && $G train c.toml --set train.out=o/t2 --threads 2 --quiet",
                          "o/t1/model.safetensors", "o/t2/model.safetensors"), stdout="SAME", allow=("o",), timeout=120)
    A("retraining a run's own config.toml reproduces its model", [], 0,
      shell=files_same_sh("cp runs/c/model.safetensors o/before && $G train runs/c/config.toml --set train.out=o/again --quiet",
                          "o/before", "o/again/model.safetensors"), stdout="SAME", allow=("o",), timeout=120)
    A("ablate's per-seed test loss equals eval of the run it names", [], 0,
      shell="$G ablate c.toml --seeds 2 --out o/ab >/dev/null 2>&1 || exit 3; "
            "python3 - <<'EOF'\nimport csv,subprocess,os,re\nbad=0\nfor r in csv.DictReader(open('o/ab/runs.csv')):\n"
            "    o=subprocess.run([os.environ['G'],'eval',r['dir']],capture_output=True,text=True).stdout\n"
            "    v=float(re.search(r'test loss ([0-9.]+)',o).group(1))\n"
            "    bad+=abs(v-float(r['test_loss']))>6e-5\nprint('SAME' if not bad else 'DIFF')\nEOF",
      stdout="SAME", allow=("o",), timeout=180)
    A("data toy: the same seed twice, the same file", [], 0,
      shell=files_same_sh("$G data toy --out o/a.txt --sentences 50 --seed 4 && $G data toy --out o/b.txt --sentences 50 --seed 4",
                          "o/a.txt", "o/b.txt"), stdout="SAME", allow=("o",))
    A("data toy --out - equals --out FILE", [], 0,
      shell=cmp_sh("$G data toy --out - --sentences 40", "$G data toy --out o/t.txt --sentences 40 >/dev/null && cat o/t.txt"),
      stdout="SAME", allow=("o",))
    A("graph --dot twice: the same DOT (a diffable file, no memory addresses)", [], 0,
      shell=cmp_sh("$G graph c.toml --dot -", "$G graph c.toml --dot -"), stdout="SAME", allow=("o",))
    A("graph --dot FILE writes what --dot - prints (node names aside)", [], 0,
      shell=cmp_sh("$G graph c.toml --dot - | sed 's/0x[0-9a-f]*/N/g' | sort",
                   "$G graph c.toml --dot o/g.dot >/dev/null && sed 's/0x[0-9a-f]*/N/g' o/g.dot | sort"), stdout="SAME", allow=("o",))
    A("import --out - equals import --out FILE", [], 0,
      shell=files_same_sh("$G import nanogpt ckpt.pt --out - > o/a.safetensors && $G import nanogpt ckpt.pt --out o/b.safetensors",
                          "o/a.safetensors", "o/b.safetensors"), stdout="SAME", allow=("o",))
    A("an imported model samples the same twice", [], 0,
      shell=cmp_sh("$G sample o/imp.safetensors --tokens 30 --seed 2", "$G sample o/imp.safetensors --tokens 30 --seed 2", IMP),
      stdout="SAME", allow=("o",))
    A("an imported model's --prefix-only loss equals its loss (causal)", [], 0,
      shell=IMP + "$G eval o/imp.safetensors --data tiny.txt --prefix-only > o/e && "
            "python3 -c \"import re;t=open('o/e').read();a=re.findall(r'test loss ([0-9.]+)',t);print('SAME' if len(a)==2 and a[0]==a[1] else 'DIFF '+t)\"",
      stdout="SAME", allow=("o",))

    SW = "mkdir -p o && printf 'configs = [\\\"../c.toml\\\"]\\nseeds = 2\\nout = \\\"sw\\\"\\n[set]\\n\\\"train.lr\\\" = [0.001, 0.002]\\n' > o/s.toml && $G sweep o/s.toml --out o/sw >/dev/null && "
    A("sweep: an entry's model equals gptg train of its config, seed and setting", [], 0,
      shell=files_same_sh(SW + "$G sweep run o/sw >/dev/null 2>&1 && $G train c.toml --set train.lr=0.002 --set train.seed=2 --set train.out=o/r --quiet",
                          "o/sw/runs/c/train.lr=0.002/seed-2/model.safetensors", "o/r/model.safetensors"), stdout="SAME", allow=("o",), timeout=180)
    A("sweep run --jobs 2 trains the same models as --jobs 1", [], 0,
      shell=SW + "$G sweep run o/sw --jobs 2 >/dev/null 2>&1 && cp -r o/sw o/sw2 && rm -rf o/sw/runs && $G sweep run o/sw --jobs 1 >/dev/null 2>&1 && "
            "for f in o/sw/runs/c/*/seed-*/model.safetensors; do cmp -s $f o/sw2/${f#o/sw/} || { echo DIFF $f; exit 0; }; done; echo SAME",
      stdout="SAME", allow=("o",), timeout=240)
    A("sweep collect: each row's test loss equals eval of its run", [], 0,
      shell=SW + "$G sweep run o/sw >/dev/null 2>&1 && $G sweep collect o/sw >/dev/null 2>&1 || exit 3; "
            "python3 - <<'EOF'\nimport csv,subprocess,os,re\nbad=0\nfor r in csv.DictReader(open('o/sw/runs.csv')):\n"
            "    o=subprocess.run([os.environ['G'],'eval',r['dir']],capture_output=True,text=True).stdout\n"
            "    v=float(re.search(r'test loss ([0-9.]+)',o).group(1))\n"
            "    bad+=abs(v-float(r['test_loss']))>6e-5\nprint('SAME' if not bad else 'DIFF')\nEOF",
      stdout="SAME", allow=("o",), timeout=240)
    A("ablate --jobs 2 gives the table of --jobs 1", [], 0,
      shell="mkdir -p o && cp c.toml o/d.toml && $G ablate c.toml o/d.toml --seeds 2 --jobs 2 --out o/a2 >/dev/null 2>&1 && "
            "$G ablate c.toml o/d.toml --seeds 2 --jobs 1 --out o/a1 >/dev/null 2>&1 && "
            "if cmp -s <(cut -d, -f1-6,9- o/a1/runs.csv | sed 's/o\\/a1/X/') <(cut -d, -f1-6,9- o/a2/runs.csv | sed 's/o\\/a2/X/'); then echo SAME; else echo DIFF; fi",
      stdout="SAME", allow=("o",), timeout=240)
    A("sweep collect while sweep run trains: a partial table, then the whole one", [], 0,
      shell=SW.replace("[0.001, 0.002]", "[0.001, 0.002]\\n\\\"train.max_steps\\\" = 1500")
            + "($G sweep run o/sw >/dev/null 2>&1 & SP=$!; sleep 1.2; $G sweep collect o/sw >/dev/null || exit 4; wait $SP) && "
            "$G sweep collect o/sw >/dev/null && [ $(grep -c ',finished,' o/sw/runs.csv) = 4 ] && echo whole",
      stdout="whole", allow=("o",), timeout=240)
    A("ablate run twice: the second reuses the runs and gives the same table", [], 0,
      shell="mkdir -p o && $G ablate c.toml --seeds 2 --out o/ab >/dev/null 2>&1 && cut -d, -f1-6,9- o/ab/runs.csv > o/t1 && "
            "$G ablate c.toml --seeds 2 --out o/ab >/dev/null 2>&1 && cut -d, -f1-6,9- o/ab/runs.csv > o/t2 && cmp -s o/t1 o/t2 && echo SAME",
      stdout="SAME", allow=("o",), timeout=240)
    A("ablate: two configs of one file name in two folders are refused", [], 2,
      shell="mkdir -p o/x o/y && cp c.toml o/x/c.toml && cp c.toml o/y/c.toml && $G ablate o/x/c.toml o/y/c.toml --seeds 1 --out o/ab", allow=("o",))
    A("ablate interrupted (SIGINT) then run again equals an uninterrupted ablate", [], 0,
      shell="mkdir -p o && cp c.toml o/d.toml && S='--seeds 2 --set train.max_steps=2000'; "
            "$G ablate c.toml o/d.toml $S --out o/ab >/dev/null 2>&1 & AP=$!; sleep 1.5; kill -INT $AP; wait $AP; "
            "$G ablate c.toml o/d.toml $S --out o/ab >/dev/null 2>&1 && $G ablate c.toml o/d.toml $S --out o/ref >/dev/null 2>&1 || exit 3; "
            "for f in o/ref/*/seed-*/model.safetensors; do cmp -s $f o/ab/${f#o/ref/} || { echo DIFF $f; exit 0; }; done; "
            "cmp -s <(cut -d, -f1-6,9- o/ab/runs.csv | sed s,o/ab,X,) <(cut -d, -f1-6,9- o/ref/runs.csv | sed s,o/ref,X,) && echo SAME",
      stdout="SAME", allow=("o",), timeout=300)
    A("sweep run --jobs 2 interrupted (SIGTERM) then run again equals an uninterrupted sweep", [], 0,
      shell=SW.replace("[0.001, 0.002]", "[0.001, 0.002]\\n\\\"train.max_steps\\\" = 1500") + "cp -r o/sw o/ref && "
            "($G sweep run o/sw --jobs 2 >/dev/null 2>&1 & SP=$!; sleep 1.5; kill -TERM $SP; wait $SP); "
            "$G sweep run o/sw --jobs 2 >/dev/null 2>&1 && $G sweep run o/ref --jobs 2 >/dev/null 2>&1 || exit 3; "
            "for f in o/ref/runs/c/*/seed-*/model.safetensors; do cmp -s $f o/sw/${f#o/ref/} || { echo DIFF $f; exit 0; }; done; echo SAME",
      stdout="SAME", allow=("o",), timeout=300)
    A("translate: a stdin line over the line limit is a bad input (exit 2) naming its line", [], 2, "stdin:2",
      shell="mkdir -p o && python3 -c \"print('a1 a2'); print('a1 '*2000000)\" > o/l.txt && $G translate runs/toy < o/l.txt >/dev/null",
      allow=("o",))
    A("train --cpuprofile over the corpus it trains on is refused without --force",
      ["train", "c.toml", "--set", "train.out=o/r", "--cpuprofile", "tiny.txt", "--quiet"], 2, "already exists")
    A("eval --split 0.999999 on a small corpus is refused with one line", ["eval", "runs/c", "--split", "0.999999"], (1, 2))

    # ------------------------------------------------------- serve vs the CLI
    A("serve: /api/generate with a seed equals gptg sample with it", [], 0,
      shell=SERVE + "q -X POST -d '{\"id\":\"runs/c\",\"prompt\":\"F\",\"tokens\":25,\"seed\":42}' http://$P/api/generate > o/sse; "
            + sse_text("o/sse") + " > o/a; $G sample runs/c --prompt F --tokens 25 --seed 42 | tail -c +2 | tr -d '\\n' > o/b; "
            "if cmp -s o/a o/b && [ -s o/a ]; then echo SAME; else echo DIFF; fi" + SERVE_END,
      stdout="SAME", allow=("o",))
    A("serve: generate from an imported model dropped in runs/ equals gptg sample", [], 0,
      shell=IMP + "mkdir -p runs/imp && cp o/imp.safetensors runs/imp/model.safetensors && " + SERVE
            + "q -X POST -d '{\"id\":\"runs/imp\",\"prompt\":\"F\",\"tokens\":25,\"seed\":1}' http://$P/api/generate > o/sse; "
            + sse_text("o/sse") + " > o/a; $G sample runs/imp --prompt F --tokens 25 --seed 1 | tail -c +2 | tr -d '\\n' > o/b; "
            "if cmp -s o/a o/b && [ -s o/a ]; then echo SAME; else echo DIFF; fi" + SERVE_END,
      stdout="SAME", allow=("o", "runs/imp"))
    A("serve: attention of a run equals gptg attention's table", [], 0,
      shell=SERVE + "q 'http://'$P'/api/attention?id=runs/c&text=Fi' > o/att; $G attention runs/c --text Fi > o/cli; "
            "v=$(python3 -c \"import json;m=json.load(open('o/att'))['maps'][0][0];print('%.3f %.3f'%(m[2],m[3]))\"); "
            "if grep -q \"\\\"i\\\" $v\" o/cli; then echo SAME; else echo DIFF $v; fi" + SERVE_END,
      stdout="SAME", allow=("o",))
    A("serve: a translation by the server equals gptg translate", [], 0,
      shell=SERVE + "q -X POST -d '{\"id\":\"runs/toy\",\"prompt\":\"a1 a2 a3\",\"tokens\":10}' http://$P/api/generate > o/sse; "
            + sse_text("o/sse") + " | tr -s ' ' | sed 's/^ //;s/ $//' > o/a; $G translate runs/toy --text 'a1 a2 a3' | tr -d '\\n' > o/b; "
            "if cmp -s o/a o/b && [ -s o/a ]; then echo SAME; else echo DIFF; head -c 300 o/sse; fi" + SERVE_END,
      stdout="SAME", allow=("o",))
    A("serve answers while a resume trains the run it shows, and the resume is unharmed", [], 0,
      shell="mkdir -p o; $G train c.toml --set train.max_steps=400 --set train.out=o/straight --quiet >/dev/null 2>&1; "
            + SERVE + "$G train --resume runs/c --set train.max_steps=400 --quiet > o/t.out 2>&1 & TP=$!; "
            "n=0; while kill -0 $TP 2>/dev/null; do q http://$P/api/runs >/dev/null; "
            "c=$(q -o /dev/null -w '%{http_code}' 'http://'$P'/api/run?id=runs/c'); [ \"$c\" = 200 ] || n=$((n+1)); "
            "q -X POST -d '{\"id\":\"runs/c\",\"prompt\":\"F\",\"tokens\":5}' http://$P/api/generate >/dev/null; done; wait $TP; "
            "if [ $? = 0 ] && [ $n = 0 ] && cmp -s o/straight/model.safetensors runs/c/model.safetensors; then echo SAME; else echo DIFF $n; cat o/t.out; fi"
            + SERVE_END,
      stdout="SAME", allow=("o", "runs/c"), timeout=240)
    A("serve: an ablation's mean and sd equal those computed from its runs' own metrics", [], 0,
      shell="mkdir -p o && cp c.toml o/d.toml && $G ablate c.toml o/d.toml --seeds 3 --out runs/ab >/dev/null 2>&1 || exit 3; " + SERVE
            + "q 'http://'$P'/api/compare?id=runs/ab' > o/cmp; python3 - <<'EOF'\nimport json,statistics as st\nd=json.load(open('o/cmp'))\nbad=0\n"
            "for v in d['variants']:\n    t=[[json.loads(l) for l in open(r+'/metrics.jsonl')][-1]['test_loss'] for r in v['runs']]\n"
            "    bad+=len(t)!=3 or abs(v['test']['mean'][-1]-st.mean(t))>1e-9 or abs(v['test']['sd'][-1]-st.stdev(t))>1e-9\n"
            "print('SAME' if not bad else 'DIFF')\nEOF" + SERVE_END,
      stdout="SAME", allow=("o", "runs/ab"), timeout=180)
    A("serve writes nothing in the runs it shows", [], 0,
      shell=SERVE + "q http://$P/api/runs >/dev/null; q 'http://'$P'/api/run?id=runs/c' >/dev/null; "
            "q 'http://'$P'/api/metrics?id=runs/words' >/dev/null; q 'http://'$P'/api/summary?id=runs/toy' >/dev/null; "
            "q -X POST -d '{\"id\":\"runs/words\",\"prompt\":\"the\",\"tokens\":5}' http://$P/api/generate >/dev/null; echo done" + SERVE_END,
      stdout="done", allow=("o",))

    A("train --init its own run folder with --force equals --init a copy of the model", [], 0,
      shell=files_same_sh("mkdir -p o && cp runs/c/model.safetensors o/m0 && $G train c.toml --init o/m0 --set train.out=o/r --quiet && "
                          "$G train c.toml --init runs/c --force --quiet", "o/r/model.safetensors", "runs/c/model.safetensors"),
      stdout="SAME", allow=("o", "runs/c"), timeout=120)
    A("eval --data /dev/stdin redirected from the corpus equals the logged loss", [], 0,
      shell="$G eval runs/c --data /dev/stdin < tiny.txt", check=same_as_logged("runs/c"))
    A("eval --data /dev/stdin from a pipe is refused, no hang", [], 2, shell="cat tiny.txt | $G eval runs/c --data /dev/stdin", timeout=30)
    A("eval --data - is refused with one line", ["eval", "runs/c", "--data", "-"], 2)
    A("translate keeps a blank input line as a blank output line", [], 0,
      shell="printf 'a1 a2\\n\\na3\\n' | $G translate runs/toy | awk 'END{print NR\" lines\"} NR==2{print \"second:\" $0 \":\"}'",
      stdout="second::\n3 lines")

    # ------------------------------------------ outputs of one command as inputs
    A("data toy --force over a hard link to the corpus leaves the corpus alone", [], 0,
      shell="ln tiny.txt hl.txt && $G data toy --out hl.txt --force --sentences 10 >/dev/null && echo ok", allow=("hl.txt",), stdout="ok")
    A("import --force over a hard link to a run's model leaves the run's model alone", [], 0,
      shell="ln runs/c/model.safetensors hl.safetensors && $G import nanogpt ckpt.pt --out hl.safetensors --force >/dev/null && echo ok",
      allow=("hl.safetensors",), stdout="ok")
    A("data toy --out over a run's model is refused", ["data", "toy", "--out", "runs/c/model.safetensors"], 2, "already exists")
    A("import --out over a run's checkpoint is refused", ["import", "nanogpt", "ckpt.pt", "--out", "runs/c/checkpoint.safetensors"], 2,
      "already exists")
    A("graph --dot over a run's metrics is refused", ["graph", "c.toml", "--dot", "runs/c/metrics.jsonl"], 2, "already exists")
    A("attention --out with the model's name is refused", ["attention", "runs/c", "--text", "Fi", "--out", "runs/c/model.safetensors"], 2)
    A("attention --out a .svg link to the corpus is refused", ["attention", "runs/c", "--text", "Fi", "--out", "x.svg"], 2,
      setup=h.symlink("tiny.txt", "x.svg"), allow=("x.svg",), check=h.unchanged("tiny.txt"))
    A("plot --out a .png link to the run's config is refused", ["plot", "runs/c", "--out", "p.png"], 2,
      setup=h.symlink("runs/c/config.toml", "p.png"), allow=("p.png",))
    A("plot --out a FIFO named loss.svg is refused, no hang", ["plot", "runs/c", "--out", "runs/c/loss.svg"], 2,
      setup=h.mkfifo("runs/c/loss.svg"), timeout=20)
    A("ablate --out an existing run folder is refused", ["ablate", "c.toml", "--seeds", "1", "--out", "runs/c"], 2)
    A("ablate --out a corpus file is refused", ["ablate", "c.toml", "--seeds", "1", "--out", "tiny.txt"], 2)
    A("train.out a run's checkpoint file is refused", ["train", "c.toml", "--set", "train.out=runs/c/checkpoint.safetensors"], 2)
    A("train.out . (the project folder) with --force is refused", ["train", "c.toml", "--set", "train.out=.", "--force"], 2)
    A("train.out .. with --force is refused", ["train", "c.toml", "--set", "train.out=..", "--force"], 2)
    A("a toy corpus written over the run's corpus: eval refuses the changed text",
      [], (1, 2), shell="$G data toy --out tiny.txt --force --sentences 300 >/dev/null 2>&1 && $G eval runs/c", allow=("tiny.txt",))
    A("a toy corpus written over the run's corpus: resume refuses the changed text",
      [], (1, 2), shell="$G data toy --out tiny.txt --force --sentences 300 >/dev/null 2>&1 && $G train --resume runs/c --set train.max_steps=6",
      allow=("tiny.txt", "runs/c/.gptg.lock"), check=h.unchanged("runs/c/model.safetensors"))
    A("sample --prompt-file a model file (binary) is refused", ["sample", "runs/c", "--prompt-file", "runs/c/model.safetensors"], 2)
    A("eval --data a metrics.jsonl (other vocabulary) is refused", ["eval", "runs/c", "--data", "runs/c/metrics.jsonl"], (1, 2))
    A("eval --data a graph's DOT output is refused", [], (1, 2),
      shell="$G graph c.toml --dot o/g.dot >/dev/null 2>&1; $G eval runs/c --data o/g.dot", allow=("o",))
    A("train on a toy corpus written by data toy, then sample it", [], 0,
      shell="$G data toy --out o/t.txt --sentences 400 >/dev/null && $G train c.toml --set data.path=o/t.txt --set train.out=o/r --quiet >/dev/null && $G sample o/r --tokens 5",
      allow=("o",))
    A("data pairs --out a trained run folder is refused even with --force (it would replace the run's config.toml)",
      ["data", "pairs", "toy.toml", "--out", "runs/c", "--force"], 2)
    A("data pairs --out a run folder without --force is refused", ["data", "pairs", "toy.toml", "--out", "runs/words"], 2)
    A("ablate of a config that is a link to /dev/stdin is refused before any run (the runs cannot read it)", [], 2,
      shell="mkdir -p o && ln -s /dev/stdin o/x.toml && $G ablate o/x.toml --seeds 1 --out o/ab < c.toml >/dev/null",
      allow=("o", "o/x.toml"))  # the probe makes o/ itself
    A("ablate /dev/stdin is refused before any run", [], 2, shell="$G ablate /dev/stdin --seeds 1 --out ab < c.toml >/dev/null")
    A("a sweep's manifest given to ablate is refused", [], 2,
      shell="mkdir -p o; $G ablate runs/c/metrics.jsonl --seeds 1 --out o/ab", allow=("o",))

    A("eval of the word run on the built-in toy corpus (other words) is refused", ["eval", "runs/words", "--data", "builtin:toy"], (1, 2),
      "vocabulary")
    A("sample of the word run with an unknown word names it", ["sample", "runs/words", "--prompt", "the zebra", "--tokens", "3"], 2, "zebra")
    A("attention of the word run with an unknown word names it", ["attention", "runs/words", "--text", "the zebra"], 2, "zebra")

    # ------------------------------------------------------ an imported model
    A("--init on a corpus with the same characters (fine-tuning on new text) trains", [], 0,
      shell="rev tiny.txt > rev.txt && $G train c.toml --init runs/c --set data.path=rev.txt --set train.out=o/r --quiet",
      allow=("o", "rev.txt"))
    A("--init on a corpus missing some of the model's characters: the message names the corpus, not model.vocab", [], 2, "half.txt",
      shell="head -c 3000 tiny.txt > half.txt && $G train c.toml --init runs/c --set data.path=half.txt --set train.out=o/r --quiet",
      allow=("o", "half.txt"))
    A("imported model: translate refuses a language model", [], 2, shell=IMP + "$G translate o/imp.safetensors --text hi", allow=("o",))
    A("imported model: eval without --data says it needs one", [], 2, shell=IMP + "$G eval o/imp.safetensors", allow=("o",))
    A("imported model: eval on a corpus of another vocabulary is refused", [], (1, 2),
      shell=IMP + "$G eval o/imp.safetensors --data words.txt", allow=("o",))
    A("imported model: plot refuses a model file", [], 2, shell=IMP + "$G plot o/imp.safetensors", allow=("o",))
    A("imported model: ablate refuses a model file as a config", [], 2, shell=IMP + "$G ablate o/imp.safetensors --seeds 1 --out o/ab", allow=("o",))
    A("imported model: sweep refuses a model file as a sweep", [], 2, shell=IMP + "$G sweep o/imp.safetensors --out o/sw", allow=("o",))
    A("imported model: graph refuses a model file as a config", [], 2, shell=IMP + "$G graph o/imp.safetensors", allow=("o",))
    A("imported model: --init into a config of another shape is refused", [], 2,
      shell=IMP + "$G train c.toml --init o/imp.safetensors --set train.out=o/r", allow=("o",))
    A("imported model: attention over a text longer than its context", [], 0,
      shell=IMP + "$G attention o/imp.safetensors --text 'First Citizen: Before we proceed'", allow=("o",))
    A("imported model: sample with a prompt longer than its context", [], 0,
      shell=IMP + "$G sample o/imp.safetensors --prompt 'First Citizen: Before we proceed any further' --tokens 5", allow=("o",))
    A("imported model: inspect names nanoGPT as its source", [], 0, shell=IMP + "$G inspect o/imp.safetensors",
      stdout="nanoGPT", allow=("o",))
    A("imported model over a run's model: resume continues from the checkpoint, as a straight run", [], 0,
      shell=files_same_sh(IMP + "cp o/imp.safetensors runs/c/model.safetensors && $G train c.toml --set train.max_steps=6 "
                          "--set train.out=o/straight --quiet && $G train --resume runs/c --set train.max_steps=6 --quiet",
                          "o/straight/model.safetensors", "runs/c/model.safetensors"), stdout="SAME", allow=("o", "runs/c"), timeout=120)
    A("imported model over a run's model: eval scores that model, saying its context", [], 0,
      shell=IMP + "cp o/imp.safetensors runs/c/model.safetensors && $G eval runs/c", allow=("o", "runs/c"), stdout="context 16")

    # ------------------------------------------- run folders edited or linked
    A("config.toml linked to another run's: eval refuses", [], (1, 2),
      shell="rm runs/c/config.toml && ln -s ../words/config.toml runs/c/config.toml && $G eval runs/c", allow=("runs/c",))
    A("config.toml linked to another run's: sample must not use the other's vocabulary silently", [], (0, 1, 2),
      shell="rm runs/c/config.toml && ln -s ../words/config.toml runs/c/config.toml && $G sample runs/c --tokens 3", allow=("runs/c",))
    A("config.toml linked to another run's: resume refuses", [], (1, 2),
      shell="rm runs/c/config.toml && ln -s ../words/config.toml runs/c/config.toml && $G train --resume runs/c --set train.max_steps=6",
      allow=("runs/c",), check=h.unchanged("runs/words/model.safetensors"))
    A("model.safetensors linked to another run's: eval refuses (vocabulary)", [], (1, 2),
      shell="rm runs/c/model.safetensors && ln -s ../words/model.safetensors runs/c/model.safetensors && $G eval runs/c", allow=("runs/c",))
    A("checkpoint linked to another run's: resume refuses and writes nothing there", [], (1, 2),
      shell="rm runs/c/checkpoint.safetensors && ln -s ../words/checkpoint.safetensors runs/c/checkpoint.safetensors && "
            "$G train --resume runs/c --set train.max_steps=6", allow=("runs/c",))
    A("a run folder copied: resuming the copy leaves the original alone", [], 0,
      shell="cp -r runs/c runs/c2 && $G train --resume runs/c2 --set train.max_steps=6 --quiet", allow=("runs/c2",))
    A("a run folder hard-linked (cp -al): resuming the copy is refused for its shared lock", [], 1, "hard link",
      shell="cp -al runs/c runs/c2 && $G train --resume runs/c2 --set train.max_steps=6 --quiet", allow=("runs/c2",))
    A("a run folder hard-linked (cp -al), lock removed: resuming the copy leaves the original's files alone", [], 0,
      shell="cp -al runs/c runs/c2 && rm runs/c2/.gptg.lock && $G train --resume runs/c2 --set train.max_steps=6 --quiet",
      allow=("runs/c2",))
    A("a run folder moved elsewhere: eval still finds the recorded corpus", [], 0,
      shell="mkdir -p o && mv runs/c o/moved && $G eval o/moved", allow=("o", "runs/c"), stdout="test loss 4.0150")
    A("corpus replaced by an identical copy (new inode, old mtime): resume continues bit-identical", [], 0,
      shell=files_same_sh("$G train c.toml --set train.max_steps=6 --set train.out=o/straight --quiet && cp tiny.txt x && rm tiny.txt && "
                          "mv x tiny.txt && touch -d 2001-01-01 tiny.txt && $G train --resume runs/c --set train.max_steps=6 --quiet",
                          "o/straight/model.safetensors", "runs/c/model.safetensors"), stdout="SAME", allow=("o", "runs/c", "tiny.txt"),
      timeout=120)
    A("the corpus moved beside the run folder (runs/tiny.txt): eval finds it, as its --help says", [], 0,
      shell="mv tiny.txt runs/tiny.txt && $G eval runs/c", check=same_as_logged("runs/c"), allow=("tiny.txt", "runs/tiny.txt"))
    A("the corpus moved into the run folder: eval finds it", [], 0,
      shell="mv tiny.txt runs/c/tiny.txt && $G eval runs/c", check=same_as_logged("runs/c"), allow=("tiny.txt", "runs/c/tiny.txt"))
    A("resume --set train.max_steps equal to the steps done says it is finished", ["train", "--resume", "runs/c", "--set", "train.max_steps=3"],
      1, "already finished")
    A("resume shortening the run is refused", ["train", "--resume", "runs/c", "--set", "train.max_steps=2"], (1, 2), "shortened")
    A("resume with --set data.stride is refused", ["train", "--resume", "runs/c", "--set", "data.stride=2"], 2)
    A("resume with --set model.heads is refused", ["train", "--resume", "runs/c", "--set", "model.heads=4"], 2)
    A("resume with --init is refused", ["train", "--resume", "runs/c", "--init", "runs/words"], 2)
    A("resume of a run nested in another run folder", [], 0,
      shell="$G train c.toml --set train.out=runs/c/sub --quiet >/dev/null && $G train --resume runs/c/sub --set train.max_steps=6 --quiet",
      allow=("runs/c/sub",))
    A("--force over a run keeps a run nested inside it", [], 0,
      shell="$G train c.toml --set train.out=runs/c/sub --quiet >/dev/null && $G train c.toml --force --quiet >/dev/null && test -f runs/c/sub/model.safetensors && echo kept",
      allow=("runs/c",), stdout="kept")
    A("--force keeps a corpus kept inside the run folder", [], 0,
      shell="cp tiny.txt runs/c/corpus.txt && $G train c.toml --set data.path=runs/c/corpus.txt --force --quiet >/dev/null && cmp tiny.txt runs/c/corpus.txt && echo kept",
      allow=("runs/c",), stdout="kept")

    A("eval and sample while train --force rebuilds the run: a result or one clean line, never a trace", [], 0,
      shell="mkdir -p o; $G train c.toml --force --set train.max_steps=3000 --quiet >/dev/null 2>&1 & TP=$!; bad=0; "
            "while kill -0 $TP 2>/dev/null; do $G eval runs/c >/dev/null 2>o/e; rc=$?; "
            "if grep -q 'panic\\|goroutine\\|fatal error' o/e || { [ $rc != 0 ] && [ $(wc -l < o/e) != 1 ]; }; then bad=$((bad+1)); fi; "
            "$G sample runs/c --tokens 3 >/dev/null 2>o/e; rc=$?; "
            "if grep -q 'panic\\|goroutine\\|fatal error' o/e || { [ $rc != 0 ] && [ $(wc -l < o/e) != 1 ]; }; then bad=$((bad+1)); fi; done; "
            "wait $TP && [ $bad = 0 ] && echo clean",
      stdout="clean", allow=("o", "runs/c"), timeout=180)
    A("attention --format png without --out does not replace a picture of the user's", ["attention", "runs/c", "--text", "Fi", "--format", "png"],
      2, "already exists", setup=h.write("att.png", "mypicture"))
    A("attention --format svg without --out does not write through att.svg linked to the corpus",
      ["attention", "runs/c", "--text", "Fi", "--format", "svg"], 2, setup=h.symlink("tiny.txt", "att.svg"))

    # --------------------------------------------- a read-only working folder
    # In the sandbox only the probe folder is writable: from / every write
    # to the working folder fails, so these commands must need none.
    for name, cmd in [("eval", "eval $D/runs/c"), ("sample", "sample $D/runs/c --tokens 5"),
                      ("attention", "attention $D/runs/c --text Fi"), ("inspect", "inspect $D/runs/c"),
                      ("translate", "translate $D/runs/toy --text 'a1 a2'"), ("graph", "graph $D/c.toml --set data.path=$D/tiny.txt"),
                      ("data toy to stdout", "data toy --out - --sentences 5"), ("version", "version")]:
        A("from a read-only folder: %s writes nothing" % name, [], 0, shell="D=$PWD; cd / && $G " + cmd + " >/dev/null")
    A("from a read-only folder: train --resume with an absolute run folder", [], 0,
      shell="D=$PWD; cd / && $G train --resume $D/runs/c --set train.max_steps=6 --quiet", allow=("runs/c",))
    A("from a read-only folder: train of an absolute config into an absolute out", [], 0,
      shell="D=$PWD; cd / && $G train $D/c.toml --set train.out=$D/o/r --set data.path=$D/tiny.txt --quiet", allow=("o",))
    A("from a read-only folder: ablate with the default out says it cannot write, one line", [], 1,
      shell="D=$PWD; cd / && $G ablate $D/c.toml --seeds 1")
    BIG = ("--set data.path=builtin:tinyshakespeare --set model.context=512 --set train.batch=32 --set model.embedding=256 "
           "--set model.blocks=4 --set model.heads=8 --set train.max_steps=2 --set train.out=o/big")
    A("a process limited to 2.5 GB (ulimit -v) and a config estimated at 3.1 GiB (under the default 8 GiB): one line, no OOM trace",
      [], 2, "memory", shell="mkdir -p o; ulimit -v 2500000; exec $G train c.toml " + BIG, allow=("o",), timeout=120)
    A("a process limited to 2.5 GB and train.max_memory raised past it: one line, no OOM trace",
      [], 2, "memory", shell="mkdir -p o; ulimit -v 2500000; exec $G train c.toml " + BIG.replace("batch=32", "batch=64")
      + " --set train.max_memory=20", allow=("o",), timeout=120)
    A("TMPDIR a missing folder: train still works", [], 0,
      shell="TMPDIR=/nonexistent $G train c.toml --set train.out=o/r --quiet", allow=("o",))
    A("HOME unset: sample still works", [], 0, shell="env -u HOME $G sample runs/c --tokens 3")
    A("LC_ALL=C: a unicode prompt outside the vocabulary is refused, one line", [], 2,
      shell="LC_ALL=C $G sample runs/c --prompt 'é' --tokens 3")
    return ps
