#!/usr/bin/env bash
# bench/slurm-smoke.sh: a gptg sweep on a real Slurm cluster of one node,
# this machine, talking only to 127.0.0.1.
#
#   sudo bench/slurm-smoke.sh          # Debian/Ubuntu, root: installs slurm-wlm and munge
#   sudo bench/slurm-smoke.sh --mpi    # the distributed training alone (below)
#
# It installs Debian's slurm-wlm and munge (apt-get) when they are missing,
# starts munged, slurmctld and slurmd on localhost with a config of its own
# (SLURM_CONF, nothing in /etc/slurm is touched), builds gptg, and runs a
# sweep of 2 configs × 2 learning rates × 2 seeds (8 runs) as a job array
# made by `gptg sweep emit slurm` (4 tasks at once, one CPU each). While it
# runs, one task is requeued mid-run with `scontrol requeue` (what
# preemption does). Then it checks:
#   - every run folder holds a finished run (runs.csv: 8 × finished);
#   - no run was trained twice: one "fresh" start per entry in events.log,
#     and the requeued run was interrupted and resumed, its metrics.jsonl
#     has every logged step once, and its model equals an uninterrupted
#     training of the same entry (same test loss to all printed digits);
#   - the table was collected by a dependent job (`gptg sweep collect`).
# Then a distributed training (gptg built with -tags mpi; Debian's
# openmpi-bin and libopenmpi-dev installed when missing) as one job of 2
# tasks, mpirun inside the allocation starting one rank per task, and as
# a sweep entry of `gptg sweep emit slurm --ranks 2`: each must finish and
# give the model file of one process, byte for byte.
# Everything lives in a temporary folder (kept, its path printed); the
# daemons are stopped at the end. Exit 0 when every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d /tmp/gptg-slurm-smoke.XXXXXX)
say() { echo "slurm-smoke: $*"; }
fail() { echo "slurm-smoke: FAILED: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (apt-get, munged, slurmd)"

# --- Slurm and munge from Debian -------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
say "$(slurmctld -V), munge $(munged -V 2>&1 | awk '{print $2}')"

# --- munge: the key and the daemon ------------------------------------------
if [ ! -s /etc/munge/munge.key ]; then
  install -d -o munge -g munge -m 700 /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
install -d -o munge -g munge -m 755 /run/munge
started_munge=
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- munged
  started_munge=yes
fi
munge -n | unmunge >/dev/null || fail "munge does not work"

# --- a one-node cluster on localhost ------------------------------------------
node=$(hostname -s)
cpus=$(nproc)
# The node declares its memory: gptg's sweep scripts ask --mem, which a node
# without RealMemory (1 MiB by default) can never satisfy.
mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
mkdir -p "$work/slurm/state" "$work/slurm/spool"
export SLURM_CONF="$work/slurm/slurm.conf"
cat >"$SLURM_CONF" <<EOF
# One node, this machine; every address is 127.0.0.1.
ClusterName=gptg-smoke
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$work/slurm/state
SlurmdSpoolDir=$work/slurm/spool
SlurmctldPidFile=$work/slurm/slurmctld.pid
SlurmdPidFile=$work/slurm/slurmd.pid
SlurmctldLogFile=$work/slurm/slurmctld.log
SlurmdLogFile=$work/slurm/slurmd.log
# No cgroups in a container: track processes by their parents.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobRequeue=1
KillWait=30
MaxArraySize=1001
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=smoke Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
cleanup() {
  for d in slurmd slurmctld; do
    [ -s "$work/slurm/$d.pid" ] && kill "$(cat "$work/slurm/$d.pid")" 2>/dev/null || true
  done
  if [ -n "$started_munge" ] && [ -s /run/munge/munged.pid ]; then
    kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
  fi
  say "work folder kept: $work"
}
trap cleanup EXIT
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || { tail -20 "$work/slurm/slurmctld.log" "$work/slurm/slurmd.log" >&2; fail "node not idle (state '$state')"; }
say "cluster up: node $node, $cpus CPUs, partition smoke"

# --- gptg and the sweep ---------------------------------------------------------
go build -o "$work/bin/gptg" ./cmd/gptg
if [ "${1:-}" != --mpi ]; then
gptg="$work/bin/gptg"
proj="$work/proj"
mkdir -p "$proj/data" "$proj/configs"
cp testdata/tiny.txt "$proj/data/tiny.txt"
# Long enough (a few thousand steps) to be caught mid-run, with a
# checkpoint every 100 steps.
cat >"$proj/configs/small.toml" <<'EOF'
[data]
path = "data/tiny.txt"
stride = 4
[model]
context = 16
embedding = 16
blocks = 1
[train]
batch = 4
epochs = 100
max_steps = 3000
log_every = 50
eval_every = 1000
checkpoint_every = 100
EOF
printf 'extends = "small.toml"\n[model]\nheads = 2\n' >"$proj/configs/small-heads.toml"
cat >"$proj/lr.toml" <<'EOF'
configs = ["configs/small.toml", "configs/small-heads.toml"]
seeds = 2
out = "sweep-lr"
[set]
"train.lr" = [0.001, 0.003]
EOF
cd "$proj"
"$gptg" sweep lr.toml
"$gptg" sweep emit slurm sweep-lr --parallel 4 --cpus 1
n=$(wc -l <sweep-lr/manifest.jsonl)
[ "$n" = 8 ] || fail "manifest has $n entries, want 8"

job=$(sbatch --parsable sweep-lr/sweep.sbatch)
say "submitted job array $job (8 tasks, 4 at a time)"
collect=$(sbatch --parsable --dependency=afterany:"$job" --output="$proj/sweep-lr/logs/collect.log" \
  --wrap "$gptg sweep collect sweep-lr")
say "submitted the collect job $collect, after the array"

# Requeue task 0 once its run is past its first checkpoints, not finished.
victim=0
vdir="sweep-lr/$(sed -n "$((victim + 1))p" sweep-lr/manifest.jsonl | sed 's/.*"dir":"\([^"]*\)".*/\1/')"
for _ in $(seq 600); do
  step=$(tail -1 "$vdir/metrics.jsonl" 2>/dev/null | sed -n 's/.*"step":\([0-9]*\).*/\1/p' || true)
  [ -n "$step" ] && [ "$step" -ge 400 ] && break
  sleep 0.2
done
[ -n "$step" ] && [ "$step" -ge 400 ] && [ "$step" -lt 3000 ] || fail "task $victim was not caught mid-run (step '$step')"
say "requeueing task ${job}_$victim at step $step"
scontrol requeue "${job}_$victim"

# Wait for the array and the collect job to leave the queue.
for _ in $(seq 1800); do
  [ -z "$(squeue -h -j "$job,$collect" -o %i 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h -j "$job,$collect" -o %i)" ] || fail "jobs still queued after 30 minutes"
say "queue empty"
cat sweep-lr/logs/task-$victim.log

# --- checks -------------------------------------------------------------------
finished=$(grep -c ',finished,' sweep-lr/runs.csv || true)
[ "$finished" = 8 ] || { cat sweep-lr/runs.csv; fail "$finished of 8 runs finished"; }
say "all 8 run folders finished (runs.csv)"
for i in $(seq 0 7); do
  fresh=$(grep -c "entry $i host .*: fresh$" sweep-lr/events.log || true)
  [ "$fresh" = 1 ] || fail "entry $i started fresh $fresh times (events.log)"
done
grep -q "entry $victim host .*: interrupted$" sweep-lr/events.log || fail "entry $victim was not interrupted"
grep -q "entry $victim host .*: resume$" sweep-lr/events.log || fail "entry $victim was not resumed"
say "one fresh start per entry; entry $victim: $(grep -c "entry $victim " sweep-lr/events.log) events (fresh, interrupted, resume, finished)"
steps=$(sed -n 's/.*"step":\([0-9]*\).*/\1/p' "$vdir/metrics.jsonl")
[ "$(echo "$steps" | sort -n | uniq -d)" = "" ] || fail "$vdir/metrics.jsonl repeats steps"
[ "$(echo "$steps" | tail -1)" = 3000 ] || fail "$vdir/metrics.jsonl ends at step $(echo "$steps" | tail -1)"
# The same entry trained without interruption must give the same model.
sets=$(sed -n "$((victim + 1))p" sweep-lr/manifest.jsonl | sed 's/.*"sets":\[\([^]]*\)\].*/\1/' | tr -d '"' | tr ',' '\n' | sed 's/^/--set /' | tr '\n' ' ')
vconfig=$(sed -n "$((victim + 1))p" sweep-lr/manifest.jsonl | sed 's/.*"config":"\([^"]*\)".*/\1/')
seed=$(sed -n "$((victim + 1))p" sweep-lr/manifest.jsonl | sed -n 's/.*"seed":\([0-9]*\).*/\1/p')
# shellcheck disable=SC2086
"$gptg" train "sweep-lr/$vconfig" $sets --set train.seed="$seed" --set train.out=reference --quiet >/dev/null
a=$("$gptg" eval "$vdir/model.safetensors" --data data/tiny.txt)
b=$("$gptg" eval reference/model.safetensors --data data/tiny.txt)
[ "$a" = "$b" ] || fail "requeued run: $a; uninterrupted: $b"
say "requeued run equals an uninterrupted one: $a"
[ -s sweep-lr/summary.md ] && [ -s sweep-lr/loss.png ] || fail "the collect job wrote no table"
grep -q "| 2/2 |" sweep-lr/summary.md || fail "summary.md has no row with both seeds"
cat sweep-lr/summary.md
say "OK: 8 runs on Slurm, one requeued mid-run and resumed, table collected"
cd "$repo"
fi

# --- one training on 2 tasks (MPI) ------------------------------------------------
if ! command -v mpirun >/dev/null || ! command -v gcc >/dev/null || ! pkg-config --exists ompi-c 2>/dev/null; then
  say "installing openmpi-bin and libopenmpi-dev"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev gcc pkg-config >/dev/null
fi
CGO_ENABLED=1 go build -tags mpi -o "$work/bin/gptg-mpi" ./cmd/gptg
dist="$work/dist"
mkdir -p "$dist"
cp testdata/tiny.txt "$dist/tiny.txt"
# A step of 4 batches, 2 per rank; dropout, so each batch's masks must
# follow it to its rank.
cat >"$dist/small.toml" <<'EOF'
[data]
path = "tiny.txt"
stride = 4
[model]
context = 16
embedding = 16
blocks = 1
heads = 2
dropout = 0.1
[train]
batch = 2
grad_accum = 4
max_steps = 200
log_every = 50
eval_every = 100
checkpoint_every = 50
EOF
cd "$dist"
"$work/bin/gptg-mpi" train small.toml --set train.out=one --quiet >/dev/null
# mpirun finds the job's tasks in Slurm's environment (its ras/slurm).
djob=$(sbatch --parsable --ntasks=2 --cpus-per-task=1 --chdir="$dist" --output="$dist/job.log" \
  --wrap "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun $work/bin/gptg-mpi train small.toml --set train.out=two --distributed")
say "submitted the 2-task distributed training, job $djob"
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$djob" -o %i 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h -j "$djob" -o %i)" ] || fail "the distributed job is still queued after 10 minutes"
cat job.log
grep -q "distributed over 2 ranks" job.log || fail "the job did not train on 2 ranks"
grep -q "done: 200 steps" job.log || fail "the distributed job did not finish"
cmp one/model.safetensors two/model.safetensors || fail "2 ranks on Slurm gave another model than one process"
say "OK: a 2-task distributed training on Slurm finished with one process's model, byte for byte"
# The same training as a sweep entry: gptg sweep emit slurm --ranks 2
# makes the array task a job of 2 tasks whose sweep run starts mpirun.
printf 'configs = ["small.toml"]\nseeds = 1\nout = "sw"\n' >sw.toml
"$work/bin/gptg-mpi" sweep sw.toml >/dev/null
"$work/bin/gptg-mpi" sweep emit slurm sw --ranks 2 --cpus 1 --memory 0.5 >/dev/null
grep -q -- "--ntasks=2" sw/sweep.sbatch || fail "sweep emit slurm --ranks 2 did not ask for 2 tasks"
# sbatch passes this environment on: mpirun may run as root here.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
sjob=$(sbatch --parsable sw/sweep.sbatch)
say "submitted the sweep of one entry on 2 ranks, job $sjob"
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$sjob" -o %i 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h -j "$sjob" -o %i)" ] || fail "the sweep job is still queued after 10 minutes"
cat sw/logs/task-0.log
entry=$(find sw/runs -name model.safetensors | head -1)
[ -n "$entry" ] || fail "the sweep entry wrote no model"
"$work/bin/gptg-mpi" train small.toml --set train.seed=1 --set train.out=one-seed1 --quiet >/dev/null
cmp one-seed1/model.safetensors "$entry" || fail "the sweep entry on 2 ranks gave another model than one process"
say "OK: a sweep entry on 2 ranks (sweep emit slurm --ranks 2) finished with one process's model, byte for byte"
