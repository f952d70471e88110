#!/bin/sh
# make check's fuzzing: builds the libFuzzer harnesses (ASan + UBSan) and runs
# each for FUZZ_CHECK_SECONDS (10) from the committed seeds and what earlier
# runs found (tests/fuzz/run). One TAP case per harness; a finding fails it
# and its input stays in tests/fuzz/findings/ of the build tree.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "${FLASHSALE_BINDIR:-.}" || exit 1
seconds=${FUZZ_CHECK_SECONDS:-10}
n=0
failed=0
if ! out=$(${MAKE:-make} fuzz-harnesses 2>&1); then
	echo "1..1"
	echo "not ok 1 - the fuzz harnesses build"
	printf '%s\n' "$out" | tail -n 20 | sed 's/^/# /'
	exit 1
fi
for h in $FUZZ_HARNESSES; do
	n=$((n + 1))
	if line=$(sh "$top_srcdir/tests/fuzz/run" "$seconds" "$top_srcdir/tests/fuzz" "$h"); then
		echo "ok $n - $line"
	else
		failed=$((failed + 1))
		echo "not ok $n - $(printf '%s\n' "$line" | head -n 1)"
		printf '%s\n' "$line" | tail -n +2 | sed 's/^/# /'
	fi
done
echo "1..$n"
[ "$failed" -eq 0 ]
