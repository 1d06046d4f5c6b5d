#!/usr/bin/env bash
# docs/serve-shot.sh RUNS_DIR PAGE OUT.png READY ELEMENT [GPTG_SERVE_FLAG...]
# A screenshot for the docs: starts `gptg serve RUNS_DIR` on a free port,
# opens PAGE (such as "/run?id=runs/x") in headless Chromium
# (bench/webshot), waits until the JavaScript expression READY is true,
# writes the element ELEMENT (a CSS selector) as OUT.png and stops the
# server. The docs' `<!-- picture: -->` lines call it after their
# commands made RUNS_DIR; docs/pictures.sh remakes the pictures.
set -euo pipefail
[ $# -ge 5 ] || { echo "usage: docs/serve-shot.sh RUNS_DIR PAGE OUT.png READY ELEMENT [FLAG...]" >&2; exit 2; }
runs=$1 page=$2 out=$3 ready=$4 element=$5
shift 5
log=$(mktemp)
gptg serve "$runs" --addr 127.0.0.1:0 "$@" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$log"' EXIT
addr=
for _ in $(seq 600); do # gptg.sh may build gptg first
	addr=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -1) && [ -n "$addr" ] && break
	kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
	sleep 0.5
done
[ -n "$addr" ] || { echo "docs/serve-shot.sh: gptg serve printed no address:" >&2; cat "$log" >&2; exit 1; }
go run ./bench/webshot -url "$addr$page" -ready "$ready" -element "$element" -width 1600 -out "$out"
