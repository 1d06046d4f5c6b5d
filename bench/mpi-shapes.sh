#!/usr/bin/env bash
# bench/mpi-shapes.sh: gptg train --distributed against one process at the
# nanoGPT CPU shape (20 steps, grad_accum 4, dropout 0.1) and the 10.8M
# shape (2 steps of grad_accum 4 × batch 4): 1 process, mpirun -np 2 and
# -np 4 --oversubscribe must write the same model file, byte for byte.
# (The CI test, internal/mpi, does this at a small shape.) A few minutes
# on 2 cores, most of it the 10.8M steps.
#
#   bench/mpi-shapes.sh          # builds gptg with -tags mpi; Open MPI installed
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d /tmp/gptg-mpi-shapes.XXXXXX)
go build -tags mpi -o "$work/gptg" ./cmd/gptg
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$work"
shape() { # NAME CONFIG SETTINGS...
  local name=$1 config=$2
  shift 2
  ./gptg train "$config" "$@" --set train.out="$name-1" --quiet >/dev/null
  mpirun -np 2 ./gptg train "$config" "$@" --set train.out="$name-2" --quiet --distributed >/dev/null
  mpirun -np 4 --oversubscribe ./gptg train "$config" "$@" --set train.out="$name-4" --quiet --distributed >/dev/null
  cmp "$name-1/model.safetensors" "$name-2/model.safetensors"
  cmp "$name-1/model.safetensors" "$name-4/model.safetensors"
  echo "$name: 1 process, 2 and 4 ranks wrote the same model file"
}
shape cpu "$repo/configs/nanogpt/shakespeare-char-cpu.toml" --set train.grad_accum=4 --set train.max_steps=20 \
  --set train.eval_every=20 --set train.eval_batches=2 --set train.log_every=10 --set model.dropout=0.1
shape 10.8M "$repo/configs/nanogpt/shakespeare-char.toml" --set train.grad_accum=4 --set train.batch=4 \
  --set train.max_steps=2 --set train.eval_every=2 --set train.eval_batches=1 --set train.log_every=1
rm -rf "$work"
