#!/bin/sh
# Remakes golden/, the token ids gptg's bpe tests compare against, with
# tiktoken and js-tiktoken at the versions package-lock.json pins. Needs
# node and npm (Debian: apt-get install nodejs npm); run from anywhere.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
npm ci --no-audit --no-fund --silent
builtin=../../corpus/builtin
node mkgolden.js "$builtin/tinyshakespeare.txt" "$builtin/bible-en-es.tsv" "$builtin/toy.txt" stress.txt
