# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; top_srcdir is the caller's (sh -u stops without it)
# Helpers for the integration tests: TAP output, HTTP through the edge or
# the origin, JSON read with tests/tools/fs-json, and direct looks into
# PostgreSQL, Redis and Kafka to assert exact outcomes. suite.sh sources it,
# and so does the shell of its own that each test file runs in.

# Cases are numbered on from FLASHSALE_TAP_FIRST (the cases of the files
# before); FLASHSALE_TAP_COUNTS, when set, keeps "cases failed" for suite.sh.
tap_n=${FLASHSALE_TAP_FIRST:-0}
tap_failed=0
# shellcheck disable=SC2034 # for the test files
stack=$top_srcdir/deploy/stack

diag() { printf '# %s\n' "$*"; }

tap_count() {
	[ -z "${FLASHSALE_TAP_COUNTS:-}" ] || echo "$tap_n $tap_failed" >"$FLASHSALE_TAP_COUNTS"
}

ok() {
	tap_n=$((tap_n + 1))
	printf 'ok %d - %s\n' "$tap_n" "$1"
	tap_count
}

not_ok() {
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	printf 'not ok %d - %s\n' "$tap_n" "$1"
	tap_count
	shift
	for line in "$@"; do diag "  $line"; done
}

# is ACTUAL EXPECTED NAME: passes when the two strings are equal.
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "expected: $2" "     got: $1"; fi
}

# check NAME CMD...: passes when the command succeeds.
check() {
	name=$1
	shift
	if out=$("$@" 2>&1); then ok "$name"; else not_ok "$name" "command: $*" "$out"; fi
}

# refuse NAME CMD...: passes when the command fails.
refuse() {
	name=$1
	shift
	if out=$("$@" 2>&1); then not_ok "$name" "command succeeded: $*" "$out"; else ok "$name"; fi
}

admin() { "$FLASHSALE_BINDIR/flashsale-admin" "$@"; }

# flashsale-admin dlq replay ARGS as the stack runs it: the replayer's
# environment (deploy/stack env replayer: Kafka principal flashsale-replayer,
# least privilege), not the operator's.
dlq_replay() {
	(eval "$("$stack" env replayer)" && "$FLASHSALE_BINDIR/flashsale-admin" dlq replay "$@")
}

psql_q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$FLASHSALE_PG" -c "$1"; }

# redis-cli as the operator (the stack's admin ACL user), or as USER with
# PASSWORD_FILE: redis_as USER PASSWORD_FILE ARGS...
# A cluster's address list names its first node (-c follows redirects).
redis_as() {
	ra_user=$1 ra_file=$2
	shift 2
	case $FLASHSALE_REDIS in
	/*) set -- -s "$FLASHSALE_REDIS" "$@" ;;
	*)
		ra_first=${FLASHSALE_REDIS%%,*}
		set -- -c -h "${ra_first%:*}" -p "${ra_first##*:}" "$@"
		;;
	esac
	REDISCLI_AUTH=$(cat "$ra_file") redis-cli --no-auth-warning --user "$ra_user" "$@"
}
redis() { redis_as "$FLASHSALE_REDIS_USER" "$FLASHSALE_REDIS_PASSWORD_FILE" "$@"; }

# fs_json [-l] [-q] [-w PATH=VALUE]... PATH: the values at PATH of the
# JSON on standard input, one a line (tests/tools/fs-json.c says more).
fs_json() { "$FLASHSALE_BINDIR/tests/tools/fs-json" "$@"; }

# json_get JSON NAME: the value of the member NAME of each JSON value in
# JSON (a path such as .items[0].itemId reaches deeper), one a line: a
# string bare, anything else as JSON. Nothing, and status 1, when a value
# has no such member; a message too when JSON is not JSON.
json_get() {
	case $2 in
	.* | \[*) printf '%s' "$1" | fs_json -q "$2" ;;
	*) printf '%s' "$1" | fs_json -q ".$2" ;;
	esac
}

# sale_created SALE_FILE: `sale create` of the file; prints "SALE ITEM..."
# (its ids, read from the JSON it answers).
sale_created() {
	sc_ids=$(admin sale create "$1") || return 1
	printf '%s %s\n' "$(json_get "$sc_ids" saleId)" "$(json_get "$sc_ids" '.itemIds[]' | tr '\n' ' ')"
}

# A new sale from a template's items, starting S seconds from now (may be
# negative), with N units of one item. Prints "SALE ITEM".
new_sale() {
	starts=${1:--5}
	qty=${2:-10}
	window=${3:-600}
	f=$FLASHSALE_STATE/sale-$$.json
	cat >"$f" <<JSON
{"name":"test sale","startsInSeconds":$starts,"durationSeconds":3600,
 "paymentWindowSeconds":$window,
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":$qty}]}
JSON
	set -- $(sale_created "$f")
	[ $# = 2 ] && admin sale warm "$1" >/dev/null || return 1
	echo "$1 $2"
}

# fire_all PATH TOKENS_FILE OUT [IN_FLIGHT] [BASE]: one POST per token
# ("USER TOKEN" lines) to BASE (the origin) + PATH, IN_FLIGHT (200) at
# once; OUT gets one "STATUS USER" line per request, in the order they were
# answered.
fire_all() {
	cfg=$FLASHSALE_STATE/curl-$$-$(basename "$3").cfg
	# -w on the command line covers the first block only: each block says it.
	awk -v base="${5:-$FLASHSALE_ORIGIN_URL}$1" '{
		if (NR > 1) print "next"
		printf "url = \"%s\"\nrequest = \"POST\"\nheader = \"Authorization: Bearer %s\"\n", base, $2
		printf "output = \"/dev/null\"\nsilent\nwrite-out = \"%%{http_code} %s\\n\"\n", $1
	}' "$2" >"$cfg"
	curl -s --no-progress-meter -Z --parallel-max "${4:-200}" -K "$cfg" >"$3"
}

# count_of STATUS FILE: how many lines of FILE (fire_all's) are STATUS.
count_of() { grep -c "^$1\( \|\$\)" "$2"; }

# load_sum FILE KEY: a value of the load generator's (tests/load/flashsale-load)
# summary or qsummary line in FILE, its output.
load_sum() {
	sed -n 's/^q\{0,1\}summary //p' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# poll_until STEP SECONDS COMMAND...: COMMAND every STEP seconds until it
# succeeds; 1 once SECONDS pass first (every wait of the tests is bounded).
poll_until() {
	pu_step=$1
	pu_end=$(($(date +%s) + $2))
	shift 2
	until "$@"; do
		[ "$(date +%s)" -ge "$pu_end" ] && return 1
		sleep "$pu_step"
	done
}
# buy_until PATH TOKEN: presses Buy again and again (bounded: 300 times)
# until a 202; bu_st is the last status, buy_tries how many came before.
buy_until() {
	buy_tries=0
	bu_st=""
	while [ $buy_tries -lt 300 ]; do
		bu_st=$(http POST "$1" "$2" | cut -d' ' -f1)
		[ "$bu_st" = 202 ] && break
		buy_tries=$((buy_tries + 1))
	done
}

# purchase_path SALE [ITEM]: the signed purchase path of the sale's ITEM
# (the sale's one item if none is named).
purchase_path() {
	pp_paths=$(admin sale urls "$1") || return 1
	if [ -n "${2:-}" ]; then
		printf '%s\n' "$pp_paths" | grep "^/api/flash-sales/items/$2/purchase?"
	elif [ "$(printf '%s\n' "$pp_paths" | wc -l)" = 1 ]; then
		printf '%s\n' "$pp_paths"
	else
		echo "purchase_path: sale $1 has several items: name one" >&2
		return 1
	fi
}

# http METHOD PATH [TOKEN] [BASE]: prints "STATUS BODY" (BASE: origin by default).
http() {
	base=${4:-$FLASHSALE_ORIGIN_URL}
	if [ -n "${3:-}" ]; then
		curl -s -o "$FLASHSALE_STATE/body" -w '%{http_code}' -X "$1" \
		    -H "Authorization: Bearer $3" "$base$2" >"$FLASHSALE_STATE/status"
	else
		curl -s -o "$FLASHSALE_STATE/body" -w '%{http_code}' -X "$1" "$base$2" \
		    >"$FLASHSALE_STATE/status"
	fi
	printf '%s %s' "$(cat "$FLASHSALE_STATE/status")" "$(cat "$FLASHSALE_STATE/body")"
}

# kcat as the stack's Kafka operator: SASL_SSL with SCRAM-SHA-512, the
# brokers' certificates checked against the stack's authority (deploy/stack
# writes this configuration, with the password, 0600: never an argument).
fs_kcat() {
	kcat -F "$FLASHSALE_STATE/secrets/kafka-operator.kcat" "$@"
}

# Messages on the order topic, or on TOPIC (reads to the end, then exits).
# shellcheck disable=SC2120 # callers may name another topic
topic_messages() {
	fs_kcat -C -b "$FLASHSALE_KAFKA_BROKERS" -t "${1:-flash-sale-orders}" -e -q -f '%s\n' 2>/dev/null
}

# The order messages of SALE on the topic, one a line (the topic's junk,
# put there by the pipeline tests, is no sale's).
sale_messages() { topic_messages | fs_json -l -w .saleId="$1" .; }

# metric_total NAME: counter NAME summed over every program and process
# (GET /metrics on the origin).
metric_total() {
	curl -s -m 10 "$FLASHSALE_ORIGIN_URL/metrics" |
		awk -v m="$1" '$1 == m || index($1, m "{") == 1 { n += $2 } END { print n + 0 }'
}

# Polls (bounded: SECONDS, 30) until the consumer group has committed every
# message: each order recorded, confirmed in Redis and pushed. 0 or 1.
consumer_caught_up() {
	cc_deadline=$(($(date +%s) + ${1:-30}))
	until [ "$("$FLASHSALE_BINDIR/flashsale-consumer" --lag 2>/dev/null)" = 0 ]; do
		[ "$(date +%s)" -ge "$cc_deadline" ] && return 1
		sleep 0.2
	done
}

# relay_browser TAP_FILE STATUS: relays a browser test program's TAP lines
# (tests/browser/*.test.mjs); its diagnostics follow the case they explain.
relay_browser() {
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "browser: ${line#ok - }" ;;
		"not ok - "*) not_ok "browser: ${line#not ok - }" ;;
		"# "*) diag "  ${line#\# }" ;;
		*) diag "  $line" ;;
		esac
	done <"$1"
	if [ "$2" -ne 0 ] && ! grep -q '^not ok - ' "$1"; then
		not_ok "browser: the test program ended cleanly" "exit status $2"
	fi
}
