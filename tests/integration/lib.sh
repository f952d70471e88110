# Helpers for the integration tests (sourced by suite.sh): TAP output,
# HTTP through the edge or the origin, and direct looks into PostgreSQL,
# Redis and Kafka to assert exact outcomes.

tap_n=0
tap_failed=0

diag() { printf '# %s\n' "$*"; }

ok() {
	tap_n=$((tap_n + 1))
	printf 'ok %d - %s\n' "$tap_n" "$1"
}

not_ok() {
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	printf 'not ok %d - %s\n' "$tap_n" "$1"
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
	ids=$(admin sale create "$f") || return 1
	sale=$(printf '%s' "$ids" | sed 's/.*"saleId":\([0-9]*\).*/\1/')
	item=$(printf '%s' "$ids" | sed 's/.*"itemIds":\[\([0-9]*\).*/\1/')
	admin sale warm "$sale" >/dev/null || return 1
	echo "$sale $item"
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

# The signed purchase path of a sale's first item.
purchase_path() { admin sale urls "$1" | head -n 1; }

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

# Messages on the order topic (reads to the end, then exits).
topic_messages() {
	kcat -C -b "$FLASHSALE_KAFKA_BROKERS" -t "${1:-flash-sale-orders}" -e -q -f '%s\n' 2>/dev/null
}

# metric_total NAME: counter NAME summed over every program and process
# (GET /metrics on the origin).
metric_total() {
	curl -s -m 10 "$FLASHSALE_ORIGIN_URL/metrics" |
		awk -v m="$1" '$1 == m || index($1, m "{") == 1 { n += $2 } END { print n + 0 }'
}

# The value of one JSON string or number member in a flat document.
json_get() {
	printf '%s' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p"
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
