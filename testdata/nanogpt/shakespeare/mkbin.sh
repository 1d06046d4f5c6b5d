#!/bin/sh
# Remakes train.bin.gz and val.bin.gz here: what nanoGPT's
# data/shakespeare/prepare.py writes for gptg's built-in tiny-shakespeare
# (corpus/builtin/tinyshakespeare.txt, the input.txt it downloads), the
# golden files `gptg data prepare shakespeare` is tested against
# (cmd/gptg, TestDataPrepareShakespeare).
#
# It runs nanoGPT's own prepare.py, unchanged, from a checkout of nanoGPT
# (its first argument), with `import tiktoken` answered by tiktoken.py
# here: a stand-in that encodes with the npm package tiktoken (the WASM
# build of tiktoken's Rust core) at the version package-lock.json pins.
# Nothing of nanoGPT is kept here. Needs node and npm (Debian: apt-get
# install nodejs npm) and python3 with numpy and requests (which
# prepare.py imports; it downloads nothing, input.txt being in place).
#
# Usage: testdata/nanogpt/shakespeare/mkbin.sh NANOGPT_DIR
set -eu
nanogpt=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$here"
npm ci --no-audit --no-fund --silent
cp "$nanogpt/data/shakespeare/prepare.py" "$work/prepare.py"
cp "$here/../../../corpus/builtin/tinyshakespeare.txt" "$work/input.txt"
cp "$here/tiktoken.py" "$work/tiktoken.py" # beside prepare.py: found before any installed tiktoken
GPTG_GOLDEN_DIR=$here python3 "$work/prepare.py"
for f in train.bin val.bin; do
	gzip -9n <"$work/$f" >"$here/$f.gz"
	echo "$(sha256sum <"$work/$f" | cut -d' ' -f1)  $f"
done >"$here/SHA256SUMS"
cat "$here/SHA256SUMS"
