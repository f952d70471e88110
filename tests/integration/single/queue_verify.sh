# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A waiting room from the sale file to `queue verify` (docs/QUEUE.md):
# `sale create` stores the queue with a fresh seed (bad settings refused,
# nothing written), the sale document shows the commitment and, from the
# opening on, the seed; the pacer copies the places to PostgreSQL and admits
# as many places as units are left (the effective multiple is 1 until 20
# turns have ended); admitted shoppers buy with their passes; `queue
# verify` finds the whole order right from PostgreSQL alone, and names an
# order planted before its admission; `queue status` shows both stores.

qv_origin=$FLASHSALE_ORIGIN_URL

# qv_post PATH TOKEN BODY: "STATUS BODY" of a POST of BODY (TOKEN may be empty).
qv_post() {
	qv_auth="X-Qv-None: 1"
	[ -z "$2" ] || qv_auth="Authorization: Bearer $2"
	curl -s -o "$FLASHSALE_STATE/qv-body" -w '%{http_code}' -X POST -H "$qv_auth" \
	    -H 'Content-Type: application/json' --data-binary "$3" "$qv_origin$1" >"$FLASHSALE_STATE/qv-status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/qv-status")" "$(cat "$FLASHSALE_STATE/qv-body")"
}
qv_doc() { curl -s "$qv_origin/api/flash-sales/sales/$1"; }
qv_status() { curl -s "$qv_origin/api/flash-sales/sales/$1/queue"; }

# --- Bad settings: refused with the member named, no sale written.
qv_before=$(psql_q "SELECT count(*) FROM sales")
cat >"$FLASHSALE_STATE/qv-bad.json" <<JSON
{"name":"bad queue","startsInSeconds":60,"durationSeconds":600,
 "items":[{"name":"Phone","priceMinor":1,"currency":"VND","quantity":3}],
 "queue":{"powBits":99}}
JSON
if admin sale create "$FLASHSALE_STATE/qv-bad.json" >/dev/null 2>"$FLASHSALE_STATE/qv-err"; then
	not_ok "a queue with powBits 99 is refused" "it was created"
else
	is "$(grep -c '"queue"' "$FLASHSALE_STATE/qv-err") $(psql_q "SELECT count(*) FROM sales")" \
	    "1 $qv_before" "a queue with powBits 99 is refused, \"queue\" named, nothing written"
fi

# --- A queue sale opening in a minute (joining open already), 3 units.
cat >"$FLASHSALE_STATE/qv-sale.json" <<JSON
{"name":"queue verify","startsInSeconds":60,"durationSeconds":3600,
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":3}],
 "queue":{"preQueueSeconds":300,"passSeconds":60,"powBits":0}}
JSON
qv_created=$(admin sale create "$FLASHSALE_STATE/qv-sale.json" --json)
qv=$(json_get "$qv_created" saleId)
qv_commit=$(json_get "$qv_created" .queue.seedCommit)
admin sale warm "$qv" >/dev/null || not_ok "the queue sale warms"
is "$(json_get "$qv_created" .queue.admitMultiple) $(json_get "$qv_created" .queue.capacityPerSecond) $(psql_q "SELECT encode(sha256(queue_seed), 'hex') FROM sales WHERE id = $qv")" \
    "1.5 2000 $qv_commit" "sale create --json: the settings whole, seedCommit = SHA-256 of the stored seed"
qv_d=$(qv_doc "$qv")
is "$(json_get "$qv_d" .queue.seedCommit) $(json_get "$qv_d" .queue.seed) $(json_get "$qv_d" .queue.passSeconds) $(json_get "$qv_d" .queue.powBits)" \
    "$qv_commit null 60 0" "the sale document before the opening: the commitment, no seed"
set -- $(new_sale 60 3)
if json_get "$(qv_doc "$1")" queue >/dev/null 2>&1; then
	not_ok "a sale without a queue: no queue member" "$(qv_doc "$1")"
else
	ok "a sale without a queue: its document has no queue member"
fi

# --- Six shoppers join before the opening.
qv_i=1
while [ $qv_i -le 6 ]; do
	eval "qv_t$qv_i=\$(admin token mint --user qv$qv_i-$qv)"
	eval "qv_j=\$(qv_post /api/flash-sales/sales/$qv/queue \"\$qv_t$qv_i\" '{}')"
	eval "qv_ticket$qv_i=\$(json_get \"\${qv_j#* }\" ticket)"
	[ "${qv_j%% *}" = 200 ] || not_ok "shopper $qv_i joins" "$qv_j"
	qv_i=$((qv_i + 1))
done
qv_copied() { [ "$(psql_q "SELECT count(*) FROM queue_places WHERE sale_id = $qv AND drawn")" = 6 ]; }
if poll_until 0.2 10 qv_copied; then
	ok "the pacer copies the six drawn places to PostgreSQL before the opening"
else
	not_ok "the pacer copies the places" "$(psql_q "SELECT count(*) FROM queue_places WHERE sale_id = $qv")"
fi

# --- The opening: the seed in the document, 3 units x 1 = 3 admitted
# (admitMultiple 1.5 is a cap: no turn has ended yet, the multiple is 1).
psql_q "UPDATE sales SET starts_at = now() WHERE id = $qv" >/dev/null
# Redis keeps the start reserve.lua checks (by its own clock): a start
# moved by hand is warmed again, or the purchases below are told 425.
admin sale warm "$qv" >/dev/null || not_ok "the queue sale warms again with its new start"
qv_admitted() { [ "$(json_get "$(qv_status "$qv")" admitted)" = 3 ]; }
if poll_until 0.2 15 qv_admitted; then
	ok "the pacer admits 3 places (3 units x the effective multiple 1)"
else
	not_ok "the pacer admits 3 places" "$(qv_status "$qv")"
fi
is "$(admin queue status "$qv" | grep -c 'admitting 1.000 x the units left (effective multiple)') $(json_get "$(qv_status "$qv")" multiple)" \
    "1 1.0" "queue status and the status document: the effective multiple, 1"

# --- Two late joiners after the opening: behind, 2^52+1 and 2^52+2, not
# admitted (the 3 admitted hold the 3 units' budget).
for qv_i in 7 8; do
	qv_j=$(qv_post "/api/flash-sales/sales/$qv/queue" "$(admin token mint --user "qv$qv_i-$qv")" '{}')
	[ "$(printf '%s' "${qv_j#* }" | fs_json .drawn)" = false ] || not_ok "late shopper $qv_i joins" "$qv_j"
done
qv_late_copied() { [ "$(psql_q "SELECT count(*) FROM queue_places WHERE sale_id = $qv AND NOT drawn")" = 2 ]; }
poll_until 0.2 10 qv_late_copied || not_ok "the pacer copies the two late places" \
    "$(psql_q "SELECT count(*) FROM queue_places WHERE sale_id = $qv")"

qv_seed=$(json_get "$(qv_doc "$qv")" .queue.seed)
is "$(printf '%s' "$qv_seed" | xxd -r -p | sha256sum | cut -d' ' -f1)" "$qv_commit" \
    "the sale document from the opening: the seed, whose SHA-256 is the commitment"

# --- The admitted buy with their passes (3 units for 3 passes).
qv_path=$(purchase_path "$qv")
qv_bought=0
qv_i=1
while [ $qv_i -le 6 ]; do
	eval "qv_p=\$(qv_post /api/flash-sales/sales/$qv/queue/pass '' \"{\\\"ticket\\\":\\\"\$qv_ticket$qv_i\\\"}\")"
	if [ "${qv_p%% *}" = 200 ] && [ $qv_bought -lt 3 ]; then
		qv_pass=$(json_get "${qv_p#* }" pass)
		qv_b=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Flashsale-Pass: $qv_pass" "$qv_origin$qv_path")
		[ "$qv_b" = 202 ] && qv_bought=$((qv_bought + 1))
	fi
	qv_i=$((qv_i + 1))
done
qv_recorded() { [ "$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $qv")" = 3 ]; }
if [ $qv_bought = 3 ] && poll_until 0.2 15 qv_recorded; then
	ok "three admitted shoppers buy with their passes, recorded"
else
	not_ok "three admitted shoppers buy" "bought $qv_bought"
fi

# --- queue verify: clean; then an order planted before its admission.
qv_v=$(admin queue verify "$qv" --json)
is "$? $(json_get "$qv_v" places) $(json_get "$qv_v" drawn) $(json_get "$qv_v" admitted) $(json_get "$qv_v" orders) $(json_get "$qv_v" violations)" \
    "0 8 6 3 3 0" "queue verify --json: 8 places, 6 drawn, 3 admitted, 3 orders, no violation"
is "$(admin queue verify "$qv")" "queue verify: 8 places, 3 admitted, 0 violations" \
    "queue verify: the summary line"
qv_s=$(admin queue status "$qv" --json)
is "$(json_get "$qv_s" .redis.joined) $(json_get "$qv_s" .redis.admitted) $(json_get "$qv_s" .redis.journal) $(json_get "$qv_s" .postgresql.places) $(json_get "$qv_s" .postgresql.admitted)" \
    "8 3 0 8 3" "queue status --json: both stores agree"
# Issue 35: a step tampered in PostgreSQL to admit more than the units and
# the budget allow (3 units x admitMultiple 1.5: 5 places at most) is found.
# The pacer is stopped meanwhile: it would make the step in Redis.
qv_pacer() {
	FLASHSALE_QUEUE_PACER=$1 "$stack" restart flashsale-queue >>"$FLASHSALE_STATE/qv-stack.log" 2>&1 ||
		not_ok "deploy/stack restart flashsale-queue (FLASHSALE_QUEUE_PACER=$1)" \
		    "$(tail -n 5 "$FLASHSALE_STATE/qv-stack.log")"
}
qv_pacer 0
set -- $(psql_q "SELECT step || ' ' || admitted || ' ' || through FROM queue_admissions WHERE sale_id = $qv ORDER BY step DESC LIMIT 1")
psql_q "UPDATE queue_admissions SET admitted = 6, through = (SELECT score FROM queue_places WHERE sale_id = $qv
    ORDER BY score, user_id COLLATE \"C\" OFFSET 5 LIMIT 1) WHERE sale_id = $qv AND step = $1" >/dev/null
qv_out=$(admin queue verify "$qv")
is "$? $(printf '%s\n' "$qv_out" | grep -c "^step: step $1 admits [0-9]* places, over its budget of [0-5] (3 units left at most x admitMultiple 1.500")" \
    "1 1" "a step tampered to admit 6 places for 3 units: over its budget, named, exit 1"
psql_q "UPDATE queue_admissions SET admitted = $2, through = $3 WHERE sale_id = $qv AND step = $1" >/dev/null
qv_pacer 1
psql_q "UPDATE orders SET reserved_at = reserved_at - interval '1 hour' WHERE sale_id = $qv AND
    id = (SELECT id FROM orders WHERE sale_id = $qv ORDER BY id LIMIT 1)" >/dev/null
qv_out=$(admin queue verify "$qv")
qv_rc=$?
is "$qv_rc $(printf '%s\n' "$qv_out" | grep -c '^out of order: user qv[0-9]-') $(printf '%s\n' "$qv_out" | tail -n 1)" \
    "1 1 queue verify: 8 places, 3 admitted, 1 violations" \
    "an order planted before its admission: named, exit 1"
psql_q "UPDATE orders SET reserved_at = reserved_at + interval '1 hour' WHERE sale_id = $qv AND
    id = (SELECT id FROM orders WHERE sale_id = $qv ORDER BY id LIMIT 1)" >/dev/null

# --- Issue 35: an operator's pass is recorded (who, when, why) before it is
# printed, and queue verify counts an order made with it as the operator's,
# not as an order of an account never admitted.
qv_op=$(admin queue pass "$qv" "qv-helped-$qv" --reason "ticket 4711" --by support-ann)
is "$? $(printf '%s' "$qv_op" | cut -c1-4) $(psql_q "SELECT issued_by || '|' || reason || '|' || (expires_at > now()) FROM queue_operator_passes WHERE sale_id = $qv AND user_id = 'qv-helped-$qv'")" \
    "0 cDF8 support-ann|ticket 4711|true" "queue pass: printed, and recorded with who, why and its expiry"
# The sale is sold out: one of its orders stands for the one the pass made.
qv_oid=$(psql_q "SELECT id FROM orders WHERE sale_id = $qv ORDER BY id LIMIT 1")
qv_was=$(psql_q "SELECT user_id || ' ' || reserved_at FROM orders WHERE id = '$qv_oid'")
psql_q "UPDATE orders SET user_id = 'qv-helped-$qv', reserved_at = now() WHERE id = '$qv_oid'" >/dev/null
is "$(admin queue verify "$qv")" \
    "queue verify: 8 places, 3 admitted, 0 violations (1 orders by operators' recorded passes)" \
    "queue verify: the order by the operator's recorded pass is no violation, and is counted"
psql_q "DELETE FROM queue_operator_passes WHERE sale_id = $qv" >/dev/null
qv_out=$(admin queue verify "$qv")
is "$? $(printf '%s\n' "$qv_out" | grep -c "^out of order: user qv-helped-$qv ")" "1 1" \
    "the same order without the record: a violation"
psql_q "UPDATE orders SET user_id = '${qv_was%% *}', reserved_at = '${qv_was#* }' WHERE id = '$qv_oid'" >/dev/null
is "$(admin queue verify "$qv")" "queue verify: 8 places, 3 admitted, 0 violations" "put back: clean"

# --- Issue 35: the last late place deleted from PostgreSQL: its numbering
# 2^52+1.. stays whole, Redis' count of late numbers given tells.
qv_row=$(psql_q "SELECT user_id || ' ' || score || ' ' || joined_at FROM queue_places WHERE sale_id = $qv ORDER BY score DESC LIMIT 1")
psql_q "DELETE FROM queue_places WHERE sale_id = $qv AND user_id = '${qv_row%% *}'" >/dev/null
qv_out=$(admin queue verify "$qv")
is "$? $(printf '%s\n' "$qv_out" | grep -c "^late: Redis gave 2 late places, PostgreSQL has 1")" "1 1" \
    "the last late place deleted: found by Redis' count, exit 1"
qv_rest=${qv_row#* }
psql_q "INSERT INTO queue_places VALUES ($qv, '${qv_row%% *}', ${qv_rest%% *}, false, '${qv_rest#* }')" >/dev/null
is "$(admin queue verify "$qv")" "queue verify: 8 places, 3 admitted, 0 violations" "put back: clean"

# --- Issue 35: Redis ahead of PostgreSQL (its admitted count set by hand):
# the pacer records Redis' count as a step marked from_redis, and queue
# verify names it. Last: the sale stays so.
redis HSET "fs:{$qv}:q:state" admitted 5 >/dev/null
qv_from_redis() { [ "$(psql_q "SELECT count(*) FROM queue_admissions WHERE sale_id = $qv AND from_redis")" = 1 ]; }
if poll_until 0.2 10 qv_from_redis; then
	ok "Redis' admitted count raised by hand: the pacer records it, marked from_redis"
else
	not_ok "the pacer records Redis' count" "$(psql_q "SELECT step, admitted, from_redis FROM queue_admissions WHERE sale_id = $qv")"
fi
qv_out=$(admin queue verify "$qv")
is "$? $(printf '%s\n' "$qv_out" | grep -c "^step: step [0-9]* (5 admitted) was recorded from Redis' count, not paced")" "1 1" \
    "queue verify names the step recorded from Redis' count, exit 1"
