"""Translation models and serve under
process memory limits.

Every command that runs a translation model (translate greedy and beam,
--no-cache, attention, eval, inspect), a long sentence on a model of
sinusoidal positions, and serve (--model-memory 20, then generations) is
run under `ulimit -v` at limits from 150 MB above the lowest at which the Go
runtime starts (`gptg version`) up to 700 MB more, in 25 MB steps (serve: in
100 MB steps). Within those 150 MB the runtime itself may fail to start its
threads or first arenas, before gptg runs (pthread_create failed, or "out of
memory" with 4 MB in use): the runtime's minimum, not a model's need. Each
run must either succeed
(exit 0) or be refused in one line naming the limit (exit 2, "more than this
process may still use"), never end in the runtime's "fatal error: out of
memory" trace — and both must occur, so the sweep crosses the command's
need. The model is trained in the probe's folder: an encoder–decoder of
22M parameters (88 MB), from the toy pairs.

A cgroup memory limit is the other kind: run the whole file under
/work/cgrun (the machine's cgroup v1 controller), e.g.

    /work/cgrun 700M /work/sandbox /tmp/sbx-X python3 testdata/hostile/probe.py BIN --only memtrans

where the kernel's OOM kill (exit 137) shows as a WRONG probe.

Loaded by probe.py (probes(h) returns a list of h.Probe); run inside the
sandbox only:  /work/sandbox DIR python3 testdata/hostile/probe.py BIN --only memtrans
"""

import re

# A bigger translation model than the fixture's, trained for one step.
MID = ("$G train toy.toml --quiet --set train.out=runs/mid --set train.max_steps=1 "
       "--set model.embedding=512 --set model.heads=8 --set model.encoder_blocks=3 --set model.decoder_blocks=3 "
       "--set model.ff_hidden=2048 --set model.positions=%s >/dev/null 2>&1 || { echo TRAIN-FAILED; exit 0; }\n")

SWEEP = r"""
mkdir -p o
lo=1300000
while ! (ulimit -v $lo; $G version >/dev/null 2>&1); do lo=$((lo+25000)); [ $lo -gt 3000000 ] && { echo NO-START; exit 0; }; done
ok=0; refused=0; bad=0
start=$((lo+150000))  # just above the minimum the runtime itself may fail to start threads (not gptg's to check)
for v in $(seq $start 25000 $((start+700000))); do
  (ulimit -v $v; %s >/dev/null 2>o/err </dev/null); rc=$?
  if [ $rc = 0 ]; then ok=$((ok+1))
  elif [ $rc = 2 ] && [ "$(wc -l < o/err)" = 1 ] && grep -q "more than this process may still use" o/err; then refused=$((refused+1))
  else bad=$((bad+1)); echo "BAD at ulimit -v $v: exit $rc: $(head -c 300 o/err | tr '\n' '|')"; fi
done
echo "sweep from $start: ok=$ok refused=$refused bad=$bad"
"""

SERVE_SWEEP = r"""
mkdir -p o
lo=1300000
while ! (ulimit -v $lo; $G version >/dev/null 2>&1); do lo=$((lo+25000)); [ $lo -gt 3000000 ] && { echo NO-START; exit 0; }; done
ok=0; refused=0; bad=0
start=$((lo+150000))
for v in $(seq $start 100000 $((start+700000))); do
  (ulimit -v $v; exec $G serve runs --addr 127.0.0.1:0 --model-memory 20 > o/sv.out 2> o/sv.err) &
  SP=$!
  P=
  for i in $(seq 100); do P=$(grep -ho '127.0.0.1:[0-9]*' o/sv.out 2>/dev/null | head -1); [ -n "$P" ] && break; sleep 0.1; done
  if [ -z "$P" ]; then
    if grep -q "fatal error\|goroutine " o/sv.err; then bad=$((bad+1)); echo "BAD start at $v: $(head -c 200 o/sv.err | tr '\n' '|')"; fi
    kill $SP 2>/dev/null; wait $SP 2>/dev/null; continue
  fi
  for id in mid toy mid; do
    st=$(curl -s -m 60 -o o/body -w '%%{http_code}' -H 'Content-Type: application/json' \
      -d '{"id":"runs/'$id'","prompt":"a1 a2 a3","tokens":1}' http://$P/api/generate)
    case $st in
      200) ok=$((ok+1));;
      507) grep -q "ulimit -v" o/body && refused=$((refused+1)) || { bad=$((bad+1)); echo "BAD 507 at $v: $(head -c 200 o/body)"; };;
      *) bad=$((bad+1)); echo "BAD at $v: HTTP $st $(head -c 200 o/body) | $(head -c 300 o/sv.err | tr '\n' '|')";;
    esac
  done
  if ! kill -0 $SP 2>/dev/null; then bad=$((bad+1)); echo "BAD at $v: the server exited: $(head -c 300 o/sv.err | tr '\n' '|')"; fi
  st=$(curl -s -m 20 -o /dev/null -w '%%{http_code}' http://$P/api/runs)
  [ "$st" = 200 ] || { bad=$((bad+1)); echo "BAD at $v: /api/runs answered $st after the generations"; }
  head -1 o/sv.err | grep -q "is more than this process may use" || { bad=$((bad+1)); echo "BAD at $v: no note of the capped --model-memory: $(head -c 200 o/sv.err)"; }
  kill $SP; wait $SP 2>/dev/null
done
echo "sweep from $start: ok=$ok refused=$refused bad=$bad"
"""


def crossed(d, code, out, err):
    """The sweep must have found no crash, and both answers."""
    m = re.search(r"ok=(\d+) refused=(\d+) bad=(\d+)", out)
    if not m:
        return "no sweep result: %s" % out[-300:]
    ok, refused, bad = map(int, m.groups())
    if bad:
        return "%d runs crashed or answered badly: %s" % (bad, out[:600].replace("\n", " | "))
    if ok == 0 or refused == 0:
        return "the sweep did not cross the need (ok=%d refused=%d): widen it" % (ok, refused)
    return None


def probes(h):
    P = []

    def sweep(name, command, positions="learned", serve=False, timeout=900):
        script = (MID % positions) + ((SERVE_SWEEP if serve else SWEEP % command).replace("%%", "%"))
        P.append(h.Probe("memtrans: " + name, [], 0, shell=script, check=crossed, allow=("o", "runs/mid"),
                         timeout=timeout, max_mb=3000))

    sweep("translate under ulimit -v from the runtime's minimum up (crosses the need)",
          "$G translate runs/mid --text 'a1 a2 a3 a4'")
    sweep("translate --beam 4 under ulimit -v", "$G translate runs/mid --beam 4 --text 'a1 a2 a3 a4'")
    sweep("translate --no-cache --beam 4 under ulimit -v", "$G translate runs/mid --no-cache --beam 4 --text 'a1 a2 a3 a4'")
    sweep("attention of a translation model under ulimit -v", "$G attention runs/mid --text 'a1 a2 a3 a4'")
    sweep("eval of a translation run under ulimit -v", "$G eval runs/mid")
    sweep("inspect of a translation model under ulimit -v", "$G inspect runs/mid")
    # Sinusoidal positions: a sentence of 3,000 words, whose encoder holds
    # 8 heads × 9M attention weights per block.
    sweep("translate of a 3,000-word sentence (sinusoidal positions) under ulimit -v",
          "$G translate runs/mid --text \"$(printf 'a1 a2 a3 %.0s' $(seq 1000))\"", positions="sinusoidal")
    sweep("serve --model-memory 20 under ulimit -v: generations on two translation models", None, serve=True)
    # GPTG_MAX_MEMORY applies to translation models as to GPT ones.
    for args, what in ((["translate", "runs/toy", "--text", "a1"], "translating with this model needs about"),
                       (["attention", "runs/toy", "--text", "a1"], "drawing the attention of this model needs about"),
                       (["eval", "runs/toy"], "evaluating this model needs about"),
                       (["inspect", "runs/toy"], "inspecting this model needs about")):
        P.append(h.Probe("memtrans: GPTG_MAX_MEMORY=0.0001 " + args[0] + " of a translation model", args, 2,
                         msg=what, env={"GPTG_MAX_MEMORY": "0.0001"}))
    return P
