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
# qv_until SECONDS COMMAND...: COMMAND every 0.2 s until it succeeds (bounded).
qv_until() {
	qvu_end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -ge "$qvu_end" ] && return 1
		sleep 0.2
	done
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
if qv_until 10 qv_copied; then
	ok "the pacer copies the six drawn places to PostgreSQL before the opening"
else
	not_ok "the pacer copies the places" "$(psql_q "SELECT count(*) FROM queue_places WHERE sale_id = $qv")"
fi

# --- The opening: the seed in the document, 3 units x 1 = 3 admitted
# (admitMultiple 1.5 is a cap: no turn has ended yet, the multiple is 1).
psql_q "UPDATE sales SET starts_at = now() WHERE id = $qv" >/dev/null
qv_admitted() { [ "$(json_get "$(qv_status "$qv")" admitted)" = 3 ]; }
if qv_until 15 qv_admitted; then
	ok "the pacer admits 3 places (3 units x the effective multiple 1)"
else
	not_ok "the pacer admits 3 places" "$(qv_status "$qv")"
fi
is "$(admin queue status "$qv" | grep -c 'admitting 1.000 x the units left (effective multiple)') $(json_get "$(qv_status "$qv")" multiple)" \
    "1 1.0" "queue status and the status document: the effective multiple, 1"

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
if [ $qv_bought = 3 ] && qv_until 15 qv_recorded; then
	ok "three admitted shoppers buy with their passes, recorded"
else
	not_ok "three admitted shoppers buy" "bought $qv_bought"
fi

# --- queue verify: clean; then an order planted before its admission.
qv_v=$(admin queue verify "$qv" --json)
is "$? $(json_get "$qv_v" places) $(json_get "$qv_v" drawn) $(json_get "$qv_v" admitted) $(json_get "$qv_v" orders) $(json_get "$qv_v" violations)" \
    "0 6 6 3 3 0" "queue verify --json: 6 places drawn, 3 admitted, 3 orders, no violation"
is "$(admin queue verify "$qv")" "queue verify: 6 places, 3 admitted, 0 violations" \
    "queue verify: the summary line"
qv_s=$(admin queue status "$qv" --json)
is "$(json_get "$qv_s" .redis.joined) $(json_get "$qv_s" .redis.admitted) $(json_get "$qv_s" .redis.journal) $(json_get "$qv_s" .postgresql.places) $(json_get "$qv_s" .postgresql.admitted)" \
    "6 3 0 6 3" "queue status --json: both stores agree"
psql_q "UPDATE orders SET reserved_at = reserved_at - interval '1 hour' WHERE sale_id = $qv AND
    id = (SELECT id FROM orders WHERE sale_id = $qv ORDER BY id LIMIT 1)" >/dev/null
qv_out=$(admin queue verify "$qv")
qv_rc=$?
is "$qv_rc $(printf '%s\n' "$qv_out" | grep -c '^out of order: user qv[0-9]-') $(printf '%s\n' "$qv_out" | tail -n 1)" \
    "1 1 queue verify: 6 places, 3 admitted, 1 violations" \
    "an order planted before its admission: named, exit 1"
psql_q "UPDATE orders SET reserved_at = reserved_at + interval '1 hour' WHERE sale_id = $qv AND
    id = (SELECT id FROM orders WHERE sale_id = $qv ORDER BY id LIMIT 1)" >/dev/null
