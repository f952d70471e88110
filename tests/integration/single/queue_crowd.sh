# shellcheck shell=sh disable=SC2046 # set -- $(...) splits ids into words on purpose
# The waiting room under a crowd (docs/QUEUE.md): 5,000 shoppers against
# 300 units, every request through the edge. One in twenty is a scripted
# bot that joins from three connections at once, watches the status
# document as often as the generator polls it and presses Buy the instant
# its pass arrives; the others press after a reaction. The proofs of work
# are solved by the load generator (tests/load/load_queue.c); before the
# crowd, one account joins from 50 connections at once. Bounded: the sale
# opens 20 s after it is created and the crowd has 40 s from then.
# Asserted exactly: every unit sold, one place per account, no account
# holding two units, a pass per admitted account at most, queue verify
# clean, a purchase without a pass refused before Redis, and a pass of
# one account, sale or time useless for another.

qc_n=5000
qc_units=300
qc_dir=$FLASHSALE_STATE/queue-crowd
mkdir -p "$qc_dir"
loadgen=$FLASHSALE_BINDIR/tests/load/flashsale-load

# qc_sale NAME LEAD: a sale with a waiting room, opening LEAD s from now,
# joining open at once, warmed; prints "SALE ITEM".
qc_sale() {
	cat >"$qc_dir/$1.json" <<JSON
{"name":"queue crowd $1","startsInSeconds":$2,"durationSeconds":3600,"paymentWindowSeconds":600,
 "queue":{"preQueueSeconds":60,"passSeconds":30,"powBits":8,"admitMultiple":1.5,"capacityPerSecond":2000},
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":$qc_units}]}
JSON
	set -- $(sale_created "$qc_dir/$1.json")
	[ $# = 2 ] && admin sale warm "$1" >/dev/null || return 1
	echo "$1 $2"
}
# qc_buy PATH PASS [TOKEN]: "STATUS ERROR" of a purchase through the edge
# with that Flashsale-Pass ("-": none) and that bearer token (none).
qc_buy() {
	qb_pass=$2
	[ "$qb_pass" != - ] || qb_pass=
	qb_out=$(curl -s -X POST ${qb_pass:+-H} ${qb_pass:+"Flashsale-Pass: $qb_pass"} \
		${3:+-H} ${3:+"Authorization: Bearer $3"} -w ' %{http_code}' "$FLASHSALE_EDGE_URL$1")
	printf '%s %s' "${qb_out##* }" "$(json_get "${qb_out% *}" error)"
}
# b64url_text B64URL: the bytes it encodes; text_b64url: the other way.
b64url_text() {
	printf '%s' "$1" | tr '_-' '/+' |
		awk '{ n = length($0) % 4; printf "%s%s", $0, (n == 2 ? "==" : n == 3 ? "=" : "") }' | base64 -d
}
text_b64url() { printf '%s' "$1" | base64 -w0 | tr '/+' '_-' | tr -d '='; }

set -- $(qc_sale crowd 20)
sale=$1
path=$(purchase_path "$sale")
case $path in
*'&q=1'*) ok "queue crowd: the signed purchase URL of a queue sale carries q=1" ;;
*) not_ok "queue crowd: the signed purchase URL of a queue sale carries q=1" "path: $path" ;;
esac
admin token mint --user "qc$sale" --count "$qc_n" --alg HS256 --ttl 3600 >"$qc_dir/shoppers"
awk -v p="$path" '{ print $1, $2, p }' "$qc_dir/shoppers" >"$qc_dir/queue"
set -- $(head -n 1 "$qc_dir/shoppers")
first_sub=$1 first_tok=$2

# --- One account hammers the join from 50 connections at once, with its
# proof of work (8 bits: the first byte of the SHA-256 zero, found here
# the slow way): one place, the same ticket in every answer.
pow=0
until printf 'fsq1|%s|%s|%s' "$sale" "$first_sub" "$pow" | sha256sum | grep -q '^00'; do
	pow=$((pow + 1))
done
: >"$qc_dir/hammer.cfg"
i=0
while [ $i -lt 50 ]; do
	[ $i -eq 0 ] || echo next >>"$qc_dir/hammer.cfg"
	printf 'url = "%s/api/flash-sales/sales/%s/queue"\nrequest = "POST"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata = "{\\"pow\\":\\"%s\\"}"\nsilent\nwrite-out = "%%{http_code}\\n"\noutput = "%s/hammer.%d"\n' \
		"$FLASHSALE_EDGE_URL" "$sale" "$first_tok" "$pow" "$qc_dir" "$i" >>"$qc_dir/hammer.cfg"
	i=$((i + 1))
done
curl -s --no-progress-meter -Z --parallel-max 50 -K "$qc_dir/hammer.cfg" >"$qc_dir/hammer.out"
is "$(sort "$qc_dir/hammer.out" | uniq -c | sed 's/^ *//')" "50 200" "queue crowd: one account joins 50 times at once: 200 each"
is "$(for f in "$qc_dir"/hammer.[0-9]*; do json_get "$(cat "$f")" ticket; done | sort -u | wc -l | tr -d ' ')" 1 \
	"queue crowd: ... the same ticket in all 50 answers"
is "$(redis ZCARD "fs:{$sale}:q:places")" 1 "queue crowd: ... and one place"

# --- In a queue sale that is open, a purchase without a pass is refused
# before any store: the purchase handlers' Redis pipelines do not move.
set -- $(qc_sale gate -5)
gate_sale=$1
gate_path=$(purchase_path "$gate_sale")
rounds0=$(metric_total flashsale_purchase_reserve_rounds_total)
n=0
nopass=
while [ $n -lt 20 ]; do
	nopass="$nopass$(qc_buy "$gate_path" - "$first_tok");"
	n=$((n + 1))
done
is "$(printf '%s' "$nopass" | tr ';' '\n' | sort | uniq -c | sed 's/^ *//')" "20 403 NOT_ADMITTED" \
	"queue crowd: 20 purchases with a token but no pass: 403 NOT_ADMITTED each"
is "$(qc_buy "$gate_path" -)" "403 NOT_ADMITTED" "queue crowd: a purchase with neither pass nor token: 403 NOT_ADMITTED"
is "$(metric_total flashsale_purchase_reserve_rounds_total)" "$rounds0" \
	"queue crowd: ... and not one reached Redis (reserve pipelines unchanged)"

# --- The crowd.
"$loadgen" --queue "$qc_dir/queue" --sale "$sale" --port "$FLASHSALE_PORT_BASE" --connections 64 \
	--source-ips 64 --retries 3 --duration-max 40 --bots-permille 50 --bot-joins 3 --poll-rate 20 \
	--page-poll-ms 500 --react-min-ms 0 --react-max-ms 500 --queue-csv "$qc_dir/timeline.csv" \
	>"$qc_dir/crowd.out" 2>"$qc_dir/crowd.err"
diag "$(grep -E '^(fairness|queue)' "$qc_dir/crowd.out" | tr '\n' ';')"
bots=$(load_sum "$qc_dir/crowd.out" bots)
is "$(load_sum "$qc_dir/crowd.out" final_202)" "$qc_units" "queue crowd: every unit sold ($qc_units purchases answered 202)"
is "$(load_sum "$qc_dir/crowd.out" joins_200)" "$((qc_n + 2 * bots))" \
	"queue crowd: every join answered 200 ($qc_n shoppers, $bots bots twice more)"
is "$(load_sum "$qc_dir/crowd.out" mismatch)" 0 "queue crowd: every repeat join (a bot's other connections) named the same place"
is "$(redis ZCARD "fs:{$sale}:q:places")" "$qc_n" "queue crowd: one place per account in Redis ($qc_n)"
is "$(redis ZCARD "fs:{$sale}:q:passes")" "$(load_sum "$qc_dir/crowd.out" passes_200)" \
	"queue crowd: one pass per admitted account (passes issued = passes answered)"
# Every admitted shopper buys: the effective multiple stays 1 and the pacer
# admits exactly as many places as there are units (fair by design).
is "$(redis HGET "fs:{$sale}:q:state" admitted) $(redis HGET "fs:{$sale}:q:state" multiple)" "$qc_units 1000" \
	"queue crowd: everyone admitted bought: multiple 1, exactly $qc_units places admitted"
consumer_caught_up 30
is "$(psql_q "SELECT count(*) || ' ' || count(DISTINCT user_id) FROM orders WHERE sale_id = $sale AND status IN ('PENDING', 'PAID')")" \
	"$qc_units $qc_units" "queue crowd: $qc_units live orders, no account holding two units"
is "$(psql_q "SELECT count(*) FROM queue_places WHERE sale_id = $sale")" "$qc_n" \
	"queue crowd: every place copied to PostgreSQL ($qc_n)"
is "$(psql_q "SELECT count(*) FROM orders o WHERE o.sale_id = $sale AND NOT EXISTS (SELECT 1 FROM queue_places p WHERE p.sale_id = o.sale_id AND p.user_id = o.user_id)")" 0 \
	"queue crowd: every order belongs to a place"
# queue verify (flashsale-admin) recomputes the order from the seed and
# checks admissions and orders against it.
if admin --help 2>&1 | grep -q '^  queue verify'; then
	if verify=$(admin queue verify "$sale" --json 2>&1); then
		ok "queue crowd: flashsale-admin queue verify $sale exits 0"
	else
		not_ok "queue crowd: flashsale-admin queue verify $sale exits 0" "$verify"
	fi
	is "$(json_get "$verify" violations)" 0 "queue crowd: queue verify --json: 0 violations"
	is "$(json_get "$verify" places)" "$qc_n" "queue crowd: queue verify --json: $qc_n places"
	is "$(json_get "$verify" orders)" "$qc_units" "queue crowd: queue verify --json: $qc_units orders"
else
	for c in "exits 0" "0 violations" "$qc_n places" "$qc_units orders"; do
		ok "queue crowd: queue verify: $c # SKIP flashsale-admin has no queue verify"
	done
fi

# --- Passes bind their account, sale and time, in the open sale with
# units (the crowd's is sold out: its answer comes before any pass).
winner=$(psql_q "SELECT user_id FROM orders WHERE sale_id = $sale ORDER BY user_id LIMIT 1")
loser=$(psql_q "SELECT p.user_id FROM queue_places p WHERE p.sale_id = $sale AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = p.sale_id AND o.user_id = p.user_id) ORDER BY p.user_id LIMIT 1")
loser_tok=$(awk -v u="$loser" '$1 == u { print $2 }' "$qc_dir/shoppers")
wpass=$(admin queue pass "$gate_sale" "$winner")
is "$(qc_buy "$gate_path" "$wpass" "$loser_tok")" "202 " \
	"queue crowd: one account's pass shown with another's token: 202"
consumer_caught_up 30
is "$(psql_q "SELECT string_agg(user_id, ',') FROM orders WHERE sale_id = $gate_sale")" "$winner" \
	"queue crowd: ... the order is the pass's account's, not the token's"
is "$(qc_buy "$gate_path" "$wpass" "$loser_tok")" "409 ALREADY_PURCHASED" \
	"queue crowd: ... and the same again: 409 (the pass's account holds its unit)"
# The pass's signed text ("p1|sale|sub|expiry") naming the other account,
# with the first one's tag.
forged=$(text_b64url "$(b64url_text "${wpass%%.*}" | sed "s/|$winner|/|$loser|/")").${wpass#*.}
is "$(qc_buy "$gate_path" "$forged")" "403 NOT_ADMITTED" "queue crowd: a pass altered to name another account: 403"
is "$(qc_buy "$gate_path" "$(admin queue pass "$sale" "$loser")")" "403 NOT_ADMITTED" \
	"queue crowd: another sale's pass: 403"
is "$(qc_buy "$gate_path" "$(admin queue pass "$gate_sale" "$loser" --seconds 30 --age 60)")" "403 NOT_ADMITTED" \
	"queue crowd: an expired pass: 403"
is "$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $gate_sale")" 1 \
	"queue crowd: ... one order in that sale in all"
