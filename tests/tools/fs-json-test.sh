#!/bin/sh
# make check (TAP): tests/tools/fs-json, each case an input, the arguments,
# and the exact output and exit status expected (a message on stderr where
# the input or the path is wrong).
set -u
# The sanitized build when there is one (make check builds it).
fsj=${FLASHSALE_BINDIR:-.}/tests/tools/fs-json-san
[ -x "$fsj" ] || fsj=${FLASHSALE_BINDIR:-.}/tests/tools/fs-json
n=0
failed=0

# case NAME INPUT WANT_STATUS WANT_OUTPUT ARGS...: fs-json ARGS <INPUT.
case_is() {
	name=$1 input=$2 want_rc=$3 want=$4
	shift 4
	n=$((n + 1))
	got=$(printf '%s' "$input" | "$fsj" "$@" 2>"${TMPDIR:-/tmp}/fs-json-test.$$")
	rc=$?
	if [ "$rc" = "$want_rc" ] && [ "$got" = "$want" ]; then
		printf 'ok %d - %s\n' "$n" "$name"
	else
		failed=$((failed + 1))
		printf 'not ok %d - %s\n# expected: %s (exit %s)\n#      got: %s (exit %s)\n' "$n" "$name" \
		    "$want" "$want_rc" "$got" "$rc"
		sed 's/^/# stderr: /' "${TMPDIR:-/tmp}/fs-json-test.$$"
	fi
}
# says NAME INPUT TEXT ARGS...: fs-json fails (exit 1) and its message holds TEXT.
says() {
	name=$1 input=$2 text=$3
	shift 3
	n=$((n + 1))
	msg=$(printf '%s' "$input" | "$fsj" "$@" 2>&1 >/dev/null)
	rc=$?
	case "$rc $msg" in
	"1 fs-json: "*"$text"*) printf 'ok %d - %s\n' "$n" "$name" ;;
	*)
		failed=$((failed + 1))
		printf 'not ok %d - %s\n# expected exit 1 and: %s\n# got exit %s: %s\n' "$n" "$name" \
		    "$text" "$rc" "$msg"
		;;
	esac
}

doc='{"orderId":"0190-ab","saleId":7,"price":1.50,"ok":true,"none":null,
 "items":[{"itemId":11,"state":"on_sale","tags":["a","b"]},{"itemId":12,"state":"sold_out","tags":[]}],
 "url":"/api/x?a=1&b=2","text":"say \"hi\"\n"}'
case_is "a string member, bare" "$doc" 0 "0190-ab" .orderId
case_is "a number member as written" "$doc" 0 "7" .saleId
case_is "a fraction as written (1.50, not 1.5)" "$doc" 0 "1.50" .price
case_is "true as JSON" "$doc" 0 "true" .ok
case_is "null as JSON" "$doc" 0 "null" .none
case_is "a nested member through an index" "$doc" 0 "12" '.items[1].itemId'
case_is "every element: []" "$doc" 0 "11
12" '.items[].itemId'
case_is "[] within []" "$doc" 0 "a
b" '.items[].tags[]'
case_is "an object printed compact" "$doc" 0 '["a","b"]' '.items[0].tags'
case_is "slashes stay slashes" "$doc" 0 '/api/x?a=1&b=2' .url
case_is "escapes decoded" "$doc" 0 'say "hi"' .text
case_is "no member: nothing, exit 1" "$doc" 1 "" -q .orderid
case_is "an index past the end: exit 1" "$doc" 1 "" -q '.items[2].itemId'
case_is "a member of a string: exit 1" "$doc" 1 "" -q .orderId.x
case_is "[] over an empty array: nothing, exit 0" "$doc" 0 "" '.items[1].tags[]'
case_is "[] over an object: each member's value" '{"headers":{"reason":"NO_STOCK","x":"1"}}' 0 "NO_STOCK
1" '.headers[]'
case_is "-w with [] holds when one element matches" '{"h":["reason","NO_STOCK"],"p":"a"}
{"h":["reason","MALFORMED"],"p":"b"}' 0 "a" -w '.h[]=NO_STOCK' .p
says "a missing member is named, with the value's line" "$doc" "value 1 (line 1) has no .nope" .nope

lines='{"saleId":7,"userId":"a"}
{"saleId":8,"userId":"b"}
{"saleId":7,"userId":"c"}'
case_is "several values: one line each" "$lines" 0 "a
b
c" .userId
case_is "-w selects by a member" "$lines" 0 "a
c" -w .saleId=7 .userId
case_is "-w twice: both hold" "$lines" 0 "c" -w .saleId=7 -w .userId=c .userId
case_is "-w selecting nothing: nothing, exit 0" "$lines" 0 "" -w .saleId=9 .userId
case_is ". prints the value as it was written" '  {"a": 1,  "b":[1, 2]}  ' 0 '{"a": 1,  "b":[1, 2]}' .
case_is "values side by side without blanks" '{"a":1}{"a":2}[3]' 0 '{"a":1}
{"a":2}
[3]' .
case_is "a number at the very end" '1 2 30' 0 '1
2
30' .
says "a value without the member among others: exit 1, named" "$lines
{\"saleId\":9}" "value 4 (line 4) has no .userId" .userId
case_is "-l skips a line that is not JSON" '{"saleId":7}
not json at all
{"saleId":7,"x":1} trailing
{"saleId":8}' 0 '{"saleId":7}
{"saleId":8}' -l .
case_is "-l with -w" '{"saleId":7,"o":"x"}
junk
{"saleId":8,"o":"y"}' 0 "y" -l -w .saleId=8 .o

says "not JSON" 'not json' "value 1 (line 1) is not JSON" .a
says "a cut value" '{"a":[1,2' "is not JSON" .a
says "a trailing comma (strict)" '{"a":[1,2,]}' "is not JSON" .a
says "junk after a value" '{"a":1} x' "value 2 (line 1) is not JSON" .a
says "the second value broken, on line 2" '{"a":1}
{"a":' "value 2 (line 2) is not JSON" .a
says "a status before the JSON is a value of its own" '409 {"error":"X"}' "value 1 (line 1) has no .error" .error
says "empty input" '' "no JSON value on standard input" .a
says "blank input" '
  ' "no JSON value on standard input" .a
deep=$(awk 'BEGIN { for (i = 0; i < 70; i++) printf "["; for (i = 0; i < 70; i++) printf "]" }')
says "nesting deeper than 64" "$deep" "is not JSON" .
n=$((n + 1))
if head -c $((32 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' | "$fsj" . 2>&1 | grep -q 'input over 32 MiB'; then
	printf 'ok %d - input over 32 MiB is refused\n' "$n"
else
	failed=$((failed + 1))
	printf 'not ok %d - input over 32 MiB is refused\n' "$n"
fi
for bad_path in "" "x" ".." ".a." "[x]" "[1" "[-1]" ".a b"; do
	n=$((n + 1))
	printf '{}' | "$fsj" "$bad_path" >/dev/null 2>&1
	rc=$?
	if [ "$rc" = 2 ]; then
		printf 'ok %d - path "%s" is a usage error (exit 2)\n' "$n" "$bad_path"
	else
		failed=$((failed + 1))
		printf 'not ok %d - path "%s" is a usage error (exit 2, got %s)\n' "$n" "$bad_path" "$rc"
	fi
done
rm -f "${TMPDIR:-/tmp}/fs-json-test.$$"
echo "1..$n"
[ "$failed" = 0 ]
