#!/bin/sh
# Runs shellcheck (Debian's package) over every shell file of the tree, at
# its default severity (style): one TAP case per file, its findings printed
# as diagnostics. A shell file is autogen.sh, or a file under .ci/, deploy/
# or tests/ that is named *.sh, or whose first line runs sh, dash or bash
# (deploy/stack, tests/run, tests/bench/purchase ...), or says its shell
# to shellcheck: a file that is only sourced starts with "# shellcheck
# shell=sh" (tests/load/rehearse-queue).
# Every exception is a "# shellcheck disable=SCnnnn # reason" line of the
# file it concerns (a directive without its reason fails the check):
# nothing is disabled here.
# Usage: tests/install/shellcheck.sh (top_srcdir from the environment, else
# this file's ../..); `make check TESTS=tests/install/shellcheck.sh`.
set -u

top_srcdir=$(cd "${top_srcdir:-$(dirname "$0")/../..}" && pwd)
. "$top_srcdir/tests/integration/lib.sh"

# The shell files, relative to top_srcdir, sorted; node_modules holds the
# browser tests' packages, not ours.
shell_files() {
	cd "$top_srcdir" &&
		find autogen.sh .ci deploy tests -name node_modules -prune -o -type f -print 2>/dev/null |
		while read -r sf; do
			case $sf in
			*.sh) echo "$sf" ;;
			*) head -n 1 "$sf" 2>/dev/null |
				grep -Eq '^(#! *(/usr)?/bin/(env +)?(sh|dash|bash)( |$)|# shellcheck shell=)' &&
				echo "$sf" ;;
			esac
		done | LC_ALL=C sort
}

if ! command -v shellcheck >/dev/null 2>&1; then
	not_ok "shellcheck finds nothing in the shell files" "no shellcheck: run deploy/install-deps"
	echo "1..$tap_n"
	exit 1
fi
tmp=$(mktemp -d /tmp/flashsale-shellcheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
shell_files >"$tmp/files"
# The finder itself: scripts without an extension, a sourced file (files
# that the distributed tree holds too).
is "$(grep -cx 'deploy/stack\|tests/bench/purchase\|tests/load/rehearse-queue\|deploy/stack.d/redis.sh' "$tmp/files")" 4 \
	"the shell files include deploy/stack, tests/bench/purchase, tests/load/rehearse-queue and deploy/stack.d/redis.sh"
# One run over all (-x: the "# shellcheck source=" directives are followed
# from top_srcdir, so that what one file defines for another is seen), then
# one case per file.
# shellcheck disable=SC2046 # the file names hold no space
(cd "$top_srcdir" && shellcheck -x -f gcc $(cat "$tmp/files") >"$tmp/findings" 2>&1)
while read -r f; do
	findings=$(grep -F "$f:" "$tmp/findings" | grep "^$f:")
	if [ -z "$findings" ]; then
		ok "shellcheck finds nothing in $f"
	else
		not_ok "shellcheck finds nothing in $f"
		printf '%s\n' "$findings" | sed 's/^/#   /'
	fi
done <"$tmp/files"
# Each exception says why on its line: "disable=SCnnnn # reason".
unexplained=$(cd "$top_srcdir" && while read -r f; do
	grep -Hn '^[[:space:]]*# shellcheck .*disable=' "$f" | grep -v 'disable=[A-Z0-9,]* # [^ ]'
done <"$tmp/files")
is "$unexplained" "" "every shellcheck disable directive gives its reason on its line"
# Whatever shellcheck said of no file (it could not run, say).
is "$(grep -v ':[0-9]*:[0-9]*: ' "$tmp/findings")" "" "shellcheck ran over every file"
echo "1..$tap_n"
[ "$tap_failed" -eq 0 ]
