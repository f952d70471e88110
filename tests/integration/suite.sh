#!/bin/sh
# The integration suite: starts the real stack (Redis, PostgreSQL, Kafka,
# nginx, the handlers, Varnish) in a temporary state directory on its own
# loopback ports, runs the test files of tests/integration/ORDER against it,
# each in a shell of its own, and stops the stack at the end, even when a
# test fails. Speaks TAP: one line per case, numbered across the files.
# With FLASHSALE_TOPOLOGY=cluster (tests/integration/cluster.sh) it starts
# the cluster topology and runs the files of cluster/ instead of single/.
# FLASHSALE_TEST_ONLY: space-separated parts of file paths ("purchase
# single/edge"): only the files whose path holds one of them run.
# FLASHSALE_TEST_STACK=up: a stack kept between runs, to run one file again
# and again in seconds: the first run starts it in FLASHSALE_TEST_STATE
# (default /tmp/flashsale-test-TOPOLOGY-PORTBASE), every run leaves it up,
# and a run that finds it up (deploy/stack status) uses it as it is.
# `FLASHSALE_STATE=DIR deploy/stack down` stops it (docs/TESTING.md).
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
export top_srcdir
export FLASHSALE_BINDIR=${FLASHSALE_BINDIR:-$(pwd)}
export FLASHSALE_PORT_BASE=${FLASHSALE_TEST_PORT_BASE:-28080}
keep_stack=${FLASHSALE_TEST_STACK:-}
case $keep_stack in
up)
	FLASHSALE_STATE=${FLASHSALE_TEST_STATE:-/tmp/flashsale-test-${FLASHSALE_TOPOLOGY:-single}-$FLASHSALE_PORT_BASE}
	mkdir -p "$FLASHSALE_STATE" ;;
'') FLASHSALE_STATE=${FLASHSALE_TEST_STATE:-$(mktemp -d /tmp/flashsale-test.XXXXXX)} ;;
*) echo "1..1"; echo "not ok 1 - FLASHSALE_TEST_STACK is up or unset, not '$keep_stack'"; exit 1 ;;
esac
export FLASHSALE_STATE
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

here=$top_srcdir/tests/integration
. "$here/lib.sh"
topology=${FLASHSALE_TOPOLOGY:-single}

# The files to run, paths relative to tests/integration: those ORDER lists
# under this topology's directory, in its order, then any other file of that
# directory, or of the old t_NN_*.sh (c_NN_*.sh) form, that ORDER does not
# list yet.
listed=$(grep -x "$topology/[^ #]*\.sh" "$here/ORDER")
case $topology in cluster) old_form=c ;; *) old_form=t ;; esac
unlisted=$(cd "$here" && for f in "$topology"/*.sh "$old_form"_[0-9][0-9]_*.sh; do
	[ -f "$f" ] && ! printf '%s\n' "$listed" | grep -qxF "$f" && echo "$f"
done)
suite_files=
for f in $listed $unlisted; do
	[ -f "$here/$f" ] || continue
	if [ -n "${FLASHSALE_TEST_ONLY:-}" ]; then
		only_hit=0
		for only in $FLASHSALE_TEST_ONLY; do
			case "$f" in *"$only"*) only_hit=1 ;; esac
		done
		[ "$only_hit" = 1 ] || continue
	fi
	suite_files="$suite_files $f"
done
if [ -z "$suite_files" ]; then
	rmdir "$FLASHSALE_STATE" 2>/dev/null || true
	echo "1..0 # SKIP no $topology test file selected (tests/integration/ORDER)"
	exit 0
fi

cleanup() {
	"$stack" down >"$FLASHSALE_STATE/stack-down.log" 2>&1 || true
	case "${FLASHSALE_TEST_KEEP:-}" in 1) ;; *) rm -rf "$FLASHSALE_STATE" ;; esac
}
start_stack=1
if [ "$keep_stack" = up ] && "$stack" status >/dev/null 2>&1; then
	diag "using the stack that is up in $FLASHSALE_STATE (FLASHSALE_TEST_STACK=up)"
	start_stack=0
elif [ "$keep_stack" = up ]; then
	diag "starting a stack kept up in $FLASHSALE_STATE (FLASHSALE_TEST_STACK=up)"
else
	trap cleanup EXIT
fi
trap 'exit 130' INT TERM

if [ "$start_stack" = 1 ] && ! "$stack" up >"$FLASHSALE_STATE/stack-up.log" 2>&1; then
	echo "1..1"
	echo "not ok 1 - deploy/stack up (see below)"
	sed 's/^/# /' "$FLASHSALE_STATE/stack-up.log"
	for f in "$FLASHSALE_STATE"/log/*; do
		[ -f "$f" ] && { echo "# --- $f"; tail -n 20 "$f" | sed 's/^/# /'; }
	done
	exit 1
fi
eval "$("$stack" env)"

for f in $listed; do
	[ -f "$here/$f" ] || not_ok "every file tests/integration/ORDER lists exists: $f does not"
done
[ -z "$unlisted" ] || diag "not in tests/integration/ORDER yet, run last:" $unlisted

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

# run_file PATH: the file in a shell of its own (lib.sh sourced, set -u),
# its cases numbered on from here; lib.sh's ok and not_ok keep the counts
# in $FLASHSALE_TAP_COUNTS, which carry on here. A shell that stops before
# the file's end (an unset variable, exit) is a failed case.
run_file() {
	rf_start=$(date +%s)
	rf_first=$tap_n
	diag "=== $1"
	echo "$tap_n 0" >"$FLASHSALE_STATE/tap-counts"
	FLASHSALE_TAP_FIRST=$tap_n FLASHSALE_TAP_COUNTS=$FLASHSALE_STATE/tap-counts \
	    FLASHSALE_TEST_FILE=$here/$1 sh -u -c '. "$top_srcdir/tests/integration/lib.sh"
		. "$FLASHSALE_TEST_FILE"
		exit 0'
	rf_rc=$?
	read -r rf_n rf_failed <"$FLASHSALE_STATE/tap-counts"
	tap_n=$rf_n
	tap_failed=$((tap_failed + rf_failed))
	[ "$rf_rc" = 0 ] || not_ok "$1 runs to its end" "its shell exited with status $rf_rc"
	invariants_hold_after "$1"
	diag "--- $1: $((tap_n - rf_first)) cases, $(($(date +%s) - rf_start)) s"
}

for f in $suite_files; do
	run_file "$f"
done
echo "1..$tap_n"
[ "$tap_failed" -eq 0 ]
