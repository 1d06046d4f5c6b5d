#!/usr/bin/env bash
# bench/slowtests.sh: where the test suite's time goes.
#
#   bench/slowtests.sh [PACKAGES...]       default ./...
#   bench/slowtests.sh --from FILE.json    the table of a saved go test -json
#
# Runs `go test -count=1 -json` on PACKAGES (with GPTG_GOLDEN set as
# .ci/run sets it, when ../shared/golden is there), keeps its output in
# ${SLOWTESTS_JSON:-/tmp/slowtests.json}, and prints the packages by wall
# time and the slowest tests with their slowest subtests
# (bench/slowtests/main.go). The machine's load before and after is
# printed too: a busy machine stretches every figure, so say the load
# with the times.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ "${1:-}" = --from ]; then
  go run ./bench/slowtests <"$2"
  exit
fi
json=${SLOWTESTS_JSON:-/tmp/slowtests.json}
if [ -z "${GPTG_GOLDEN:-}" ] && [ -d ../shared/golden ]; then
  export GPTG_GOLDEN="$(cd .. && pwd)/shared/golden"
fi
echo "before: $(uptime)"
start=$SECONDS
status=0
go test -count=1 -json "${@:-./...}" >"$json" || status=$?
echo "after:  $(uptime)"
echo "go test took $((SECONDS - start)) s (building included), exit $status; its events are in $json"
echo
go run ./bench/slowtests <"$json"
exit $status
