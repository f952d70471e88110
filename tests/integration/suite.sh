#!/bin/sh
# The integration suite: starts the real stack (Redis, PostgreSQL, Kafka,
# nginx, the handlers, Varnish) in a temporary state directory on its own
# loopback ports, runs every tests/integration/t_*.sh against it, and stops
# it at the end, even when a test fails. Speaks TAP: one line per case.
# With FLASHSALE_TOPOLOGY=cluster (tests/integration/cluster.sh) it starts
# the cluster topology and runs the c_*.sh files (FLASHSALE_SUITE: the
# prefix, t or c) instead.
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
# The contention test wants at least four purchase processes.
export FLASHSALE_PURCHASE_PROCS=${FLASHSALE_PURCHASE_PROCS:-4}
export FLASHSALE_ARTIFACTS=${FLASHSALE_ARTIFACTS:-$FLASHSALE_BINDIR/tests/artifacts}
mkdir -p "$FLASHSALE_ARTIFACTS"

suite_prefix=${FLASHSALE_SUITE:-t}
# FLASHSALE_TEST_ONLY: space-separated parts of file names ("t_30 t_99").
suite_files=
for t in "$top_srcdir"/tests/integration/"$suite_prefix"_*.sh; do
	if [ -n "${FLASHSALE_TEST_ONLY:-}" ]; then
		only_hit=0
		for only in $FLASHSALE_TEST_ONLY; do
			case "$t" in *"$only"*) only_hit=1 ;; esac
		done
		[ "$only_hit" = 1 ] || continue
	fi
	suite_files="$suite_files $t"
done
if [ -z "$suite_files" ]; then
	rmdir "$FLASHSALE_STATE" 2>/dev/null || true
	echo "1..0 # SKIP no ${suite_prefix}_*.sh file selected"
	exit 0
fi

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

# After every test file, at rest (the consumer has committed everything, a
# bounded wait), invariants 1-5 must hold for every sale: one TAP case.
invariants_hold_after() {
	consumer_caught_up 20
	inv_tries=0
	until inv_out=$("$FLASHSALE_BINDIR/flashsale-admin" reconcile --all --check 2>&1); do
		inv_tries=$((inv_tries + 1))
		[ $inv_tries -lt 3 ] || break
		sleep 1
	done
	if [ $inv_tries -lt 3 ]; then
		ok "invariants 1-5 hold after $1"
	else
		not_ok "invariants 1-5 hold after $1" "$(printf '%s\n' "$inv_out" | grep -v ': ok (' | head -n 20)"
	fi
}

for t in $suite_files; do
	suite_file=$(basename "$t")
	diag "=== $suite_file"
	. "$t"
	invariants_hold_after "$suite_file"
done
echo "1..$tap_n"
[ "$tap_failed" -eq 0 ]
