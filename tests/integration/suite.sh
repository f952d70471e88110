#!/bin/sh
# The integration suite: starts the real stack (Redis, PostgreSQL, Kafka,
# nginx, the handlers, Varnish) in a temporary state directory on its own
# loopback ports, runs every tests/integration/t_*.sh against it, and stops
# it at the end, even when a test fails. Speaks TAP: one line per case.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
export FLASHSALE_BINDIR=${FLASHSALE_BINDIR:-$(pwd)}
export FLASHSALE_STATE=${FLASHSALE_TEST_STATE:-$(mktemp -d /tmp/flashsale-test.XXXXXX)}
export FLASHSALE_PORT_BASE=${FLASHSALE_TEST_PORT_BASE:-28080}
# The servers live long and exit by signal: leak reports would only be noise.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
# Rate limits would hide contention results; the limit tests set their own.
export FLASHSALE_RATE_PER_IP=${FLASHSALE_RATE_PER_IP:-100000r/s}
export FLASHSALE_RATE_PER_USER=${FLASHSALE_RATE_PER_USER:-100000r/s}
export FLASHSALE_DATADIR=$top_srcdir
export FLASHSALE_ARTIFACTS=${FLASHSALE_ARTIFACTS:-$FLASHSALE_BINDIR/tests/artifacts}
mkdir -p "$FLASHSALE_ARTIFACTS"

stack=$top_srcdir/deploy/stack
cleanup() {
	"$stack" down >"$FLASHSALE_STATE/stack-down.log" 2>&1 || true
	case "${FLASHSALE_TEST_KEEP:-}" in 1) ;; *) rm -rf "$FLASHSALE_STATE" ;; esac
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! "$stack" up >"$FLASHSALE_STATE/stack-up.log" 2>&1; then
	echo "1..1"
	echo "not ok 1 - deploy/stack up (see below)"
	sed 's/^/# /' "$FLASHSALE_STATE/stack-up.log"
	for f in "$FLASHSALE_STATE"/log/*; do
		[ -f "$f" ] && { echo "# --- $f"; tail -n 20 "$f" | sed 's/^/# /'; }
	done
	exit 1
fi
eval "$("$stack" env)"

. "$top_srcdir/tests/integration/lib.sh"
for t in "$top_srcdir"/tests/integration/t_*.sh; do
	case "${FLASHSALE_TEST_ONLY:-}" in
	"") ;;
	*) case "$t" in *"$FLASHSALE_TEST_ONLY"*) ;; *) continue ;; esac ;;
	esac
	diag "=== $(basename "$t")"
	. "$t"
done
echo "1..$tap_n"
[ "$tap_failed" -eq 0 ]
