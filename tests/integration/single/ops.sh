# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# What operators see: GET /metrics counting a small burst exactly (handler
# answers by code, nginx's own sold-out answers, Kafka deliveries, the
# consumer's orders, the latency histogram), promtool accepting it, the
# health and readiness endpoints and the edge's probe through a Redis
# outage, request ids from nginx to the error body and the handler's log,
# the one log format, and no secret in any log.

origin=$FLASHSALE_ORIGIN_URL
edge=$FLASHSALE_EDGE_URL
ops=$FLASHSALE_STATE/ops
mkdir -p "$ops"

# scrape NAME: GET /metrics into $ops/NAME; prints the status.
scrape() { curl -s -m 10 -o "$ops/$1" -w '%{http_code}' "$origin/metrics"; }
# metric NAME SERIES: the series' value in scrape NAME (0 when absent).
metric() { awk -v s="$2" '$1 == s { v = $2 } END { print v == "" ? 0 : v }' "$ops/$1"; }
# delta A B SERIES: how much the series grew from scrape A to scrape B.
delta() { echo $(($(metric "$2" "$3") - $(metric "$1" "$3"))); }
code_of() { curl -s -o /dev/null -w '%{http_code}' -m 10 "$@"; }
P='program="flashsale-purchase"'
answers() { echo "flashsale_http_requests_total{$P,code=\"$1\"}"; }
nginx_sold_out='flashsale_answers_without_handler_total{by="nginx",answer="sold_out"}'
nginx_401='flashsale_answers_without_handler_total{by="nginx",answer="unauthenticated"}'
handler_sold_out() { echo $(($(delta m1 "$1" "$(answers 410)") + $(delta m1 "$1" "$nginx_sold_out"))); }

# Prometheus (optional part of the stack) scrapes the origin during this
# file; at the end its API must return what the origin counted.
prom=http://127.0.0.1:$((FLASHSALE_PORT_BASE + 9))
check "prometheus: deploy/stack start prometheus (ready)" "$stack" start prometheus

# --- Where /metrics, /healthz and /readyz answer.
is "$(scrape m0)" 200 "metrics: GET /metrics on the origin answers 200"
check "metrics: promtool check metrics accepts the text" promtool check metrics <"$ops/m0"
is "$(code_of -H 'X-Forwarded-For: 203.0.113.9' "$origin/metrics")" 403 \
    "metrics: refused on the origin for what came through a proxy"
for p in /metrics /healthz /readyz /readyz/flashsale-order; do
	is "$(code_of "$edge$p")" 403 "edge refuses $p"
done
is "$(http GET /healthz)" '200 {"status":"alive"}' "healthz: nginx answers alive"
is "$(http GET /readyz)" '200 {"status":"ready"}' "readyz: the purchase handler is ready"
for prog in purchase order sale signin expire payment metrics queue; do
	is "$(http GET "/healthz/flashsale-$prog")" '200 {"status":"alive"}' "healthz of flashsale-$prog"
	is "$(http GET "/readyz/flashsale-$prog")" '200 {"status":"ready"}' "readyz of flashsale-$prog"
done
status_out=$("$stack" status 2>&1)
is "$?:$(printf '%s\n' "$status_out" | grep -c '^flashsale-.*processes, ready)$')" "0:8" \
    "stack status: every handler up and ready"

# --- A small burst, counted exactly: 5 units, one shopper twice, a bad
# token, a tampered URL, a sale not started, then 3 shoppers too many.
set -- $(new_sale -5 5)
sale=$1
path=$(purchase_path "$sale")
set -- $(new_sale 3600 5)
later_path=$(purchase_path "$1")
admin token mint --user "ops$sale" --count 8 >"$ops/tokens"
tok() { sed -n "${1}p" "$ops/tokens" | cut -d' ' -f2; }
st() { http POST "$1" "${2:-}" | cut -d' ' -f1; }
is "$(scrape m1)" 200 "metrics: scrape before the burst"
is "$(st "$path" "$(tok 1)")" 202 "burst: a shopper buys"
is "$(st "$path" "$(tok 1)")" 409 "burst: the same shopper again"
ans=$(http POST "$path" not-a-token)
is "${ans%% *}" 401 "burst: a bad token"
rid401=$(json_get "${ans#* }" requestId)
is "$(st "${path%sig=*}sig=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" "$(tok 2)")" 403 "burst: a tampered URL"
is "$(st "$later_path" "$(tok 2)")" 425 "burst: a sale not started"
for i in 2 3 4 5; do st "$path" "$(tok "$i")"; done >"$ops/wins"
is "$(grep -c '^202$' "$ops/wins")" 4 "burst: four more shoppers buy the last units"
for i in 6 7 8; do st "$path" "$(tok "$i")"; done >"$ops/losses"
is "$(grep -c '^410$' "$ops/losses")" 3 "burst: three shoppers find it sold out"
# nginx writes its ticks within a second (buffer flush=1s): wait for them.
deadline=$(($(date +%s) + 10))
until [ "$(scrape m2)" = 200 ] && [ "$(handler_sold_out m2)" = 3 ] &&
	[ "$(($(delta m1 m2 "$(answers 401)") + $(delta m1 m2 "$nginx_401")))" = 1 ]; do
	[ "$(date +%s)" -ge "$deadline" ] && break
	sleep 0.2
done
is "$(delta m1 m2 "$(answers 202)")" 5 "metrics: five 202 counted"
is "$(delta m1 m2 "$(answers 409)")" 1 "metrics: one 409 counted"
is "$(($(delta m1 m2 "$(answers 401)") + $(delta m1 m2 "$nginx_401")))" 1 \
    "metrics: one 401 counted (a malformed token is refused by nginx itself)"
is "$(delta m1 m2 "$(answers 403)")" 1 "metrics: one 403 counted"
is "$(delta m1 m2 "$(answers 425)")" 1 "metrics: one 425 counted"
is "$(handler_sold_out m2)" 3 "metrics: three 410, by the handler or by nginx's marker"
is "$(delta m1 m2 "flashsale_kafka_deliveries_total{$P,outcome=\"delivered\"}")" 5 \
    "metrics: five order messages delivered to Kafka"
# Where the five 202s' time went, stage by stage: each was answered once
# its order's produce request left after the producer's linger (2 ms) and
# came back, and the stages fit in the handler's own time for them.
stage() { echo "flashsale_purchase_stage_seconds_total{$P,stage=\"$1\"}"; }
is "$(delta m1 m2 "flashsale_purchase_staged_total{$P}")" 5 "metrics: the five 202s' stages counted"
for s in queued redis broker answer; do
	if grep -q "^$(stage "$s") " "$ops/m2"; then
		ok "metrics: stage $s is a series"
	else
		not_ok "metrics: stage $s is a series"
	fi
done
check "metrics: the 202s' Redis round trips took time, and their broker stages each the linger or more" \
    awk -v r1="$(metric m1 "$(stage redis)")" -v r2="$(metric m2 "$(stage redis)")" \
    -v b1="$(metric m1 "$(stage broker)")" -v b2="$(metric m2 "$(stage broker)")" \
    'BEGIN { exit !(r2 > r1 && b2 - b1 >= 5 * 0.002) }'
# stages SCRAPE: the four stages' seconds together.
stages() { awk -v p="flashsale_purchase_stage_seconds_total{$P," 'index($1, p) == 1 { t += $2 } END { print t + 0 }' "$ops/$1"; }
check "metrics: the four stages fit in the handler's time for its requests" \
    awk -v a="$(stages m1)" -v b="$(stages m2)" \
    -v t1="$(metric m1 "flashsale_http_request_duration_seconds_sum{$P}")" \
    -v t2="$(metric m2 "flashsale_http_request_duration_seconds_sum{$P}")" \
    'BEGIN { exit !(b > a && b - a <= t2 - t1) }'
# Every purchase process's restock listener subscribed (the suite restarts
# the handlers between files: the retired ones count too), and says so.
check "metrics: the restock listeners' subscriptions counted" \
    awk -v n="$(metric m2 "flashsale_soldout_listener_subscriptions_total{$P}")" 'BEGIN { exit !(n >= 1) }'
# librdkafka's statistics come each second: the five messages' waits in
# the producer's queue, and the round trips of the requests that took them.
waits="flashsale_kafka_queue_waits_total{$P}"
rtts="flashsale_kafka_broker_rtts_total{$P}"
deadline=$(($(date +%s) + 10))
until [ "$(scrape m2k)" = 200 ] && [ "$(delta m1 m2k "$waits")" -ge 5 ] && [ "$(delta m1 m2k "$rtts")" -ge 1 ]; do
	[ "$(date +%s)" -ge "$deadline" ] && break
	sleep 0.2
done
is "$(delta m1 m2k "$waits")" 5 "metrics: the five messages' waits in the producer's queue counted"
rtt_s="flashsale_kafka_broker_rtt_seconds_total{$P}"
check "metrics: the brokers' round trips counted, with their seconds" \
    awk -v n="$(delta m1 m2k "$rtts")" -v a="$(metric m1 "$rtt_s")" -v b="$(metric m2k "$rtt_s")" \
    'BEGIN { exit !(n >= 1 && b > a) }'
handled=0
for code in 202 409 401 403 425 410; do
	handled=$((handled + $(delta m1 m2 "$(answers "$code")")))
done
is "$(delta m1 m2 "flashsale_http_request_duration_seconds_count{$P}")" "$handled" \
    "metrics: the latency histogram counts every request the handler answered"
is "$(delta m1 m2 "flashsale_http_request_duration_seconds_bucket{$P,le=\"+Inf\"}")" "$handled" \
    "metrics: its +Inf bucket holds them all"
# The edge keeps the sold-out answer a second: five more purchases through
# it are each answered by the edge's cache, nginx's marker or the handler,
# and counted once (the edge's by varnishncsa into edge-sold_out.ticks).
edge_sold_out='flashsale_answers_without_handler_total{by="edge",answer="sold_out"}'
all_sold_out() { echo $(($(handler_sold_out "$1") + $(delta m1 "$1" "$edge_sold_out"))); }
for i in 1 2 3 4 5; do
	code_of -X POST -H "Authorization: Bearer $(tok 8)" "$edge$path"
	echo
done >"$ops/edge"
is "$(grep -c '^410$' "$ops/edge")" 5 "edge: five more purchases answered 410"
deadline=$(($(date +%s) + 10))
until [ "$(scrape m2e)" = 200 ] && [ "$(all_sold_out m2e)" = 8 ]; do
	[ "$(date +%s)" -ge "$deadline" ] && break
	sleep 0.2
done
is "$(all_sold_out m2e)" 8 "metrics: eight 410, each counted once by the edge, nginx or the handler"
# Sequential requests within the second the answer is kept: at least the
# last ones are cache hits.
if [ "$(delta m1 m2e "$edge_sold_out")" -ge 1 ]; then
	ok "metrics: the edge's own sold-out answers are counted"
else
	not_ok "metrics: the edge's own sold-out answers are counted" "$(grep edge "$ops/m2e")"
fi
consumer_caught_up 30
scrape m3 >/dev/null
is "$(delta m1 m3 'flashsale_consumer_orders_total{program="flashsale-consumer",result="recorded"}')" 5 \
    "metrics: the consumer recorded five orders"
is "$(metric m3 flashsale_consumer_lag_messages)" 0 "metrics: consumer lag 0 at rest"
# Other files leave PENDING orders behind (no expiry runs here): the gauge
# must say what PostgreSQL says, read while that count stays put.
overdue_sql="SELECT count(*) FROM orders WHERE status = 'PENDING' AND expires_at < now()"
for _ in 1 2 3; do
	db_before=$(psql_q "$overdue_sql")
	scrape m3o >/dev/null
	db_after=$(psql_q "$overdue_sql")
	[ "$db_before" = "$db_after" ] && break
done
is "$(metric m3o flashsale_orders_overdue)" "$db_after" "metrics: PENDING orders past their expiry, as PostgreSQL counts them"
check "metrics: promtool check metrics accepts the text after the burst" promtool check metrics <"$ops/m3"

# --- Request ids: nginx makes one, the handler answers it, the log has it.
case $rid401 in
[0-9a-f]*) is "${#rid401}" 32 "request id: a 401's body carries nginx's 32-hex requestId" ;;
*) not_ok "request id: a 401's body carries nginx's 32-hex requestId" "$ans" ;;
esac
check "request id: the access log names the same id" grep -q "rid=$rid401\$" "$FLASHSALE_STATE/log/nginx-access.log"
ans=$(http POST "$path" "$(tok 8)")
rid410=$(json_get "${ans#* }" requestId)
case "${ans%% *} $(json_get "${ans#* }" error) $(json_get "${ans#* }" message) ${#rid410}" in
"410 SOLD_OUT This item is sold out. 32") ok "request id: nginx's own sold-out answer carries one too" ;;
*) not_ok "request id: nginx's own sold-out answer carries one too" "$ans" ;;
esac

# --- Readiness through a Redis outage: the handler says why, the stack
# status shows it. The edge's probe asks whether the origin answers at all
# (its nginx's /healthz, as in the cluster): an origin whose Redis is away
# stays in and answers its own 503s; one whose nginx is gone goes out and
# comes back. (Guards the probe: until 2026-12-05 the single edge probed
# /readyz and the origin went sick with Redis, every request then the
# edge's own 503.)
backend_is() {
	varnishadm -n "$FLASHSALE_STATE/varnish" backend.list 2>/dev/null | grep -q "origin.*$1"
}
ready_is() { [ "$(code_of "$origin/readyz/$1")" = "$2" ]; }
check "edge probe: the origin is healthy" backend_is healthy
set -- $(new_sale -5 1)
down_sale=$1
"$stack" stop redis >/dev/null
ans=$(http GET /readyz/flashsale-order)
rid=$(json_get "${ans#* }" requestId)
case "${ans%% *} $(json_get "${ans#* }" error) $(json_get "${ans#* }" detail)" in
"503 NOT_READY redis "*) ok "readyz: 503 NOT_READY naming Redis while it is down" ;;
*) not_ok "readyz: 503 NOT_READY naming Redis while it is down" "$ans" ;;
esac
check "request id: the handler's log line of that request carries it" \
    grep -q "level=warn prog=flashsale-order pid=[0-9]* req=$rid msg=\"not ready: redis" \
    "$FLASHSALE_STATE/log/flashsale-order.log"
status_out=$("$stack" status 2>&1)
case "$?:$status_out" in
[1-9]*"flashsale-order"*"NOT READY: redis"*) ok "stack status: non-zero, the handler not ready because of Redis" ;;
*) not_ok "stack status: non-zero, the handler not ready because of Redis" "$status_out" ;;
esac
# Three probes at least (one a second): the origin is still in, and a
# document that needs Redis is the origin's own 503, not the edge's.
n=0
while [ $n -lt 4 ] && backend_is healthy; do
	n=$((n + 1))
	sleep 1
done
is "$n" 4 "edge probe: the origin stays healthy while Redis is down (its nginx answers)"
ans=$(http GET "/api/flash-sales/sales/$down_sale/stock" "" "$edge")
rid=$(json_get "${ans#* }" requestId)
is "${ans%% *} $(json_get "${ans#* }" error) ${#rid}" "503 TRY_AGAIN 32" \
    "edge: a document that needs Redis gets the origin's own 503 TRY_AGAIN (no edge- id)"
"$stack" start redis >/dev/null
check "readyz: ready again once Redis is back" poll_until 0.2 20 ready_is flashsale-order 200
"$stack" stop nginx >/dev/null
check "edge probe: the origin turns sick when its nginx does not answer" poll_until 0.2 20 backend_is sick
"$stack" start nginx >/dev/null
check "edge probe: the origin is healthy again" poll_until 0.2 20 backend_is healthy
scrape m4 >/dev/null
if [ "$(delta m3 m4 'flashsale_redis_errors_total{program="flashsale-order"}')" -ge 1 ]; then
	ok "metrics: the outage shows as Redis errors of flashsale-order"
else
	not_ok "metrics: the outage shows as Redis errors of flashsale-order"
fi

# --- One log format, no secret in any log.
# (flashsale-provider.log is the payment provider simulator's, not ours.)
# shellcheck disable=SC2010 # our log files, named flashsale-PROGRAM.log
bad=$(ls "$FLASHSALE_STATE"/log/flashsale-*.log | grep -v /flashsale-provider.log | xargs cat |
	grep -Ev '^ts=[0-9T:.-]+Z level=(debug|info|warn|error) prog=flashsale-[a-z-]+ pid=[0-9]+( req=[0-9a-f]+)? msg=".*"$' |
	head -n 5)
is "$bad" "" "logs: every handler line is ts= level= prog= pid= [req=] msg=\"...\""
{
	cat "$FLASHSALE_STATE/expire.token"
	echo
	echo 'eyJ'
	for k in "$FLASHSALE_STATE"/keys/*; do
		od -An -tx1 -v "$k" | tr -d ' \n'
		echo
		base64 -w0 "$k" | tr '+/' '-_' | tr -d '='
		echo
	done
} | grep -v '^$' >"$ops/secrets"
leaks=$(grep -rlF -f "$ops/secrets" "$FLASHSALE_STATE/log" 2>/dev/null)
is "$leaks" "" "logs: no token, key or expire token in any log"

# --- Prometheus's HTTP API has the counters; the dashboard's queries run.
# promq QUERY: the value of a one-sample instant query (empty otherwise).
promq() {
	curl -s -m 5 --get --data-urlencode "query=$1" "$prom/api/v1/query" | fs_json -q '.data.result[].value[1]'
}
scrape m5 >/dev/null
want202=$(metric m5 "$(answers 202)")
want_recorded=$(metric m5 'flashsale_consumer_orders_total{program="flashsale-consumer",result="recorded"}')
prom_has() {
	[ "$(promq "sum(flashsale_http_requests_total{$P,code=\"202\"})")" = "$want202" ] &&
		[ "$(promq 'sum(flashsale_consumer_orders_total{result="recorded"})')" = "$want_recorded" ]
}
check "prometheus: its API returns the origin's counts (202: $want202, recorded: $want_recorded)" \
    poll_until 0.2 30 prom_has
is "$(promq 'up{job="flashsale"}')" 1 "prometheus: the origin target is up"
is "$(curl -s -m 5 "$prom/api/v1/rules" | fs_json '.data.groups[].rules[].name' | grep '^Flashsale' | sort -u |
	wc -l | tr -d ' ')" "$(grep -c '^ *- alert: Flashsale' "$top_srcdir/deploy/prometheus/alerts.yml")" \
    "prometheus: every alerting rule of deploy/prometheus/alerts.yml is loaded"
failed_q=""
fs_json '.panels[].targets[].expr' <"$top_srcdir/deploy/grafana/flashsale.json" >"$ops/exprs"
while IFS= read -r q; do
	promtool query instant "$prom" "$q" >/dev/null 2>&1 || failed_q="$failed_q
$q"
done <"$ops/exprs"
is "$failed_q" "" "prometheus: every dashboard query runs (promtool query instant)"
check "prometheus: deploy/stack stop prometheus" "$stack" stop prometheus
