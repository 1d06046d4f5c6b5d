#!/usr/bin/env bash
# docs/serve-shot.sh RUNS_DIR PAGE OUT.png [WEBSHOT_FLAG...] [-- GPTG_SERVE_FLAG...]
# A picture of gptg serve for the docs: starts `gptg serve RUNS_DIR` on a
# free port, opens PAGE (such as "/run?id=runs/x") still (the page's
# `still` mode: drawn once, without the speeds, times and run ids that
# differ between two runs of the same commands) in headless Chromium
# (bench/webshot), clicks what -click names, waits each time until the
# page says it is drawn, writes the element -element (a CSS selector;
# the whole page by default) as OUT.png and stops the server. The docs'
# `<!-- picture: -->` lines call it after their commands made RUNS_DIR;
# docs/pictures.sh remakes the pictures and .ci/examples checks them.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: docs/serve-shot.sh RUNS_DIR PAGE OUT.png [WEBSHOT_FLAG...] [-- GPTG_SERVE_FLAG...]" >&2; exit 2; }
runs=$1 page=$2 out=$3
shift 3
shot=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do shot+=("$1"); shift; done
[ $# -eq 0 ] || shift
case $page in *\?*) page="$page&still" ;; *) page="$page?still" ;; esac
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
go run ./bench/webshot -url "$addr$page" -width 1280 "${shot[@]}" -out "$out"
