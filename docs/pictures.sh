#!/usr/bin/env bash
# docs/pictures.sh [FILE.md...]: draws the docs' pictures again from the runs
# their own commands make. Each `<!-- picture: PATH: COMMAND -->` line of README.md
# and docs/*.md names the command that draws one; .ci/examples runs the
# file's sh blocks in a fresh copy of the tree, then the commands, and here
# copies the pictures back (CI runs the same and requires them unchanged).
# Look at the new pictures before committing: the text beside them
# describes them.
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(grep -l '^<!-- picture: ' README.md docs/*.md)
GPTG_UPDATE_PICTURES=1 exec bash .ci/examples "${files[@]}"
