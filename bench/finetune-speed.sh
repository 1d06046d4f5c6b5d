#!/usr/bin/env bash
# bench/finetune-speed.sh: a fine-tuning step of GPT-2 124M at the recipe's
# shape (configs/nanogpt/finetune-shakespeare.toml: block 256, batch 4,
# grad_accum 8, 8,192 tokens a step), gptg against PyTorch, float32.
#
#   bench/finetune-speed.sh [ROUNDS [STEPS]]      defaults: 1 2
#
# Each round runs, at 1 thread and at 2, gptg and bench/gpt2ref.py
# finetune (PyTorch with OpenBLAS, jemalloc preloaded, every pool pinned
# to the thread count), both under taskset on as many cores, who goes
# first alternating, from the same random-weight GPT-2 file (mkgpt2.py,
# imported) on nanoGPT's BPE shakespeare. A line per run: the time of
# each step after the first (gptg: the difference of metrics.jsonl's
# elapsed_s, which leaves out evaluation and file writes; the reference:
# its own step_s, forward, backward, clipping and AdamW), the peak RSS of
# the whole process (/usr/bin/time), and the share of the core's fp32
# peak a step reaches (per second of the step, and per CPU second: gptg's
# utime + stime from /proc at each metrics row, the reference's
# process_time; on a shared machine the CPU time is the fairer figure): nanoGPT's estimate_mfu count of a step's work,
# (6·N + 12·L·H·(C/H)·T) · 8,192 = 6.31e12 flop with N = 123.65M
# parameters (those of the position table left out), over
# PEAK_GFLOPS (default 232.8: graph's BenchmarkPeak on this Zen 5, 64 fp32
# flop a cycle from two 512-bit FMA pipes, docs/performance.md) times the
# threads.
#
# Work files go to ${FINETUNE_SPEED_DIR:-/tmp/finetune-speed}, removed at
# the end. FINETUNE_THREADS (default "1 2") lists the thread counts;
# FINETUNE_ACCUM (default 8, the recipe's) the batches of a step, for a
# shorter step on a busy machine (the flop count follows it).
set -euo pipefail
rounds=${1:-1}
steps=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${FINETUNE_SPEED_DIR:-/tmp/finetune-speed}
peak=${PEAK_GFLOPS:-232.8}
accum=${FINETUNE_ACCUM:-8}
py=/usr/bin/python3
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
cd "$root" && go build -o "$work/gptg" ./cmd/gptg
cd "$work"
[ -d gpt2 ] || $py "$root/bench/mkgpt2.py" gpt2 --shape gpt2 --dtype F32 --seed 7 >/dev/null
[ -f init.safetensors ] || ./gptg import hf gpt2 --out init.safetensors >/dev/null
[ -f data/shakespeare/train.bin ] || ./gptg data prepare shakespeare --out data/shakespeare >/dev/null
flop=$($py -c "N=123849984-256*768; print(1024*$accum*(6*N+12*12*12*64*256))")

cpus() { [ "$1" = 1 ] && echo 0 || echo "0-$(( $1 - 1 ))"; }

run_gptg() { # threads
	rm -rf run
	$py - "$1" "$flop" "$peak" "$(cpus "$1")" "$root/configs/nanogpt/finetune-shakespeare.toml" "$steps" "$accum" <<'PY'
# gptg's CPU time per step: /proc/PID/stat's utime + stime read whenever
# metrics.jsonl gains a row (polled every 50 ms).
import json, os, subprocess, sys, time
t, flop, peak, cpus, recipe, steps, accum = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7]
p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", "rss.txt", "taskset", "-c", cpus, "./gptg", "train", recipe,
    "--init", "init.safetensors", "--threads", str(t), "--quiet", "--set", f"train.max_steps={steps}", "--set", "train.out=run",
    "--set", "train.eval_every=0", "--set", "train.eval_batches=1", "--set", f"train.grad_accum={accum}"], stdout=subprocess.DEVNULL)
tick = os.sysconf("SC_CLK_TCK")
def gptg_cpu():
    for pid in os.listdir("/proc"):
        try:
            if open(f"/proc/{pid}/cmdline", "rb").read().startswith(b"./gptg\0train") and os.readlink(f"/proc/{pid}/cwd") == os.getcwd():
                f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                return (int(f[11]) + int(f[12])) / tick
        except (OSError, ValueError):
            pass
    return None
cpu, rows = [], 0
while p.poll() is None:
    try:
        n = sum(1 for _ in open("run/metrics.jsonl"))
    except OSError:
        n = 0
    if n > rows:
        rows = n
        cpu.append(gptg_cpu())
    time.sleep(0.05)
assert p.returncode == 0, f"gptg exited {p.returncode}"
rss = int(open("rss.txt").read().split()[-1])
el = [json.loads(l)["elapsed_s"] for l in open("run/metrics.jsonl")]
steps_s = [b - a for a, b in zip(el, el[1:])]
cpu_s = [b - a for a, b in zip(cpu, cpu[1:])]
best = min(steps_s)
print(f"gptg     threads {t}: step 1 {el[0]:.1f} s, then {' '.join(f'{s:.1f}' for s in steps_s)} s (CPU {' '.join(f'{s:.1f}' for s in cpu_s)} s); "
      f"peak RSS {rss/1024:.0f} MB; {flop/best/1e9:.1f} GFLOP/s, {100*flop/best/1e9/(peak*t):.1f} % of the fp32 peak; "
      f"per CPU second {100*flop/min(cpu_s)/1e9/peak:.1f} %", flush=True)
PY
}

run_torch() { # threads
	/usr/bin/time -f "%M" -o rss.txt taskset -c "$(cpus "$1")" $py "$root/bench/gpt2ref.py" finetune gpt2 \
		--data data/shakespeare/train.bin --context 256 --batch 4 --accum "$accum" --steps "$steps" --dtype float32 \
		--threads "$1" > torch.jsonl
	$py - "$1" "$(cat rss.txt)" "$flop" "$peak" <<'PY'
import json, sys
t, rss, flop, peak = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rows = [json.loads(l) for l in open("torch.jsonl") if '"step"' in l]
steps = [r["step_s"] for r in rows]
cpu = [r["cpu_s"] for r in rows]
best = min(steps[1:])
print(f"pytorch  threads {t}: step 1 {steps[0]:.1f} s, then {' '.join(f'{s:.1f}' for s in steps[1:])} s (CPU {' '.join(f'{s:.1f}' for s in cpu[1:])} s); "
      f"peak RSS {rss/1024:.0f} MB; {flop/best/1e9:.1f} GFLOP/s, {100*flop/best/1e9/(peak*t):.1f} % of the fp32 peak; "
      f"per CPU second {100*flop/min(cpu[1:])/1e9/peak:.1f} %", flush=True)
PY
}

for r in $(seq "$rounds"); do
	for t in ${FINETUNE_THREADS:-1 2}; do
		echo "# round $r, $t threads; load: $(cut -d' ' -f1-3 /proc/loadavg)"
		if [ $(( (r + t) % 2 )) = 0 ]; then run_gptg "$t"; run_torch "$t"; else run_torch "$t"; run_gptg "$t"; fi
	done
done
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
