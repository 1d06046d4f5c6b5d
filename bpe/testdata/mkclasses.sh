#!/bin/sh
# Remakes ../classes_table.go, the pre-split's letters and numbers as
# tiktoken sees them (mkclasses.js says how), with the versions
# package-lock.json pins. Needs node and npm; run from anywhere.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
npm ci --no-audit --no-fund --silent
node mkclasses.js
gofmt -l ../classes_table.go
