#!/usr/bin/env bash
# ./gptg.sh COMMAND [ARGUMENTS]: gptg from this checkout, rebuilt first when
# its sources changed (into bin/gptg), then run with the arguments as given.
#
# `go run ./cmd/gptg` prints nothing while the first build compiles gptg and
# its modules (about a minute on two cores, longer on a busy machine); this
# says so at once and counts the packages as they compile. When nothing
# changed, the build is a check of a fraction of a second and says nothing.
set -eo pipefail
root=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
bin=$root/bin/gptg
tty=false
[ -t 2 ] && tty=true
# The commit goes into the binary (`gptg version`) whenever git can read
# the checkout, even where GOFLAGS says -buildvcs=false; elsewhere (a
# tarball, a checkout git refuses) the build goes on without it.
vcs=-buildvcs=false
git -C "$root" status --porcelain >/dev/null 2>&1 && vcs=-buildvcs=auto
# Without cgo (which Go's net package takes when a C compiler is there):
# a C thread reserves 72 MiB of address space, a Go one 8, and under
# `ulimit -v` that decides what fits (internal/memlimit).
n=0
(cd "$root" && CGO_ENABLED=0 go build "$vcs" -v -o "$bin" ./cmd/gptg 2>&1) | while IFS= read -r line; do
	case $line in
	*' '* | '') # go: downloading …, compiler errors: as they are
		$tty && [ "$n" -gt 0 ] && printf '\r\033[K' >&2
		printf '%s\n' "$line" >&2
		;;
	*) # a package compiling
		n=$((n + 1))
		if [ "$n" = 1 ]; then
			echo "gptg.sh: building gptg into bin/gptg (the first build compiles about 420 packages: 1-2 minutes on 2 idle cores, several on a busy machine; later ones start at once)" >&2
		fi
		if $tty; then
			printf '\r\033[K  %d compiled: %.60s' "$n" "$line" >&2
		fi
		;;
	esac
done || exit $?
$tty && printf '\r\033[K' >&2
exec "$bin" "$@"
