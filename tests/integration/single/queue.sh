# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A sale's waiting room through the real stack (docs/QUEUE.md): joining
# before the opening (no score shown, one place per account whatever the
# devices), the status document through the edge and its cache headers,
# the draw recomputed from the published seed, admission by the pacer and
# the pass (issued once, the same again), late joiners behind in arrival
# order, joins that cost PostgreSQL nothing, and bad input refused with a
# clear 4xx that changes nothing.

q_origin=$FLASHSALE_ORIGIN_URL
q_edge=$FLASHSALE_EDGE_URL
LATE=4503599627370496

# q_post PATH TOKEN BODY [BASE]: "STATUS BODY" of a POST with BODY (a JSON
# text) and, unless TOKEN is empty, the bearer token.
q_post() {
	printf '%s' "$3" >"$FLASHSALE_STATE/q-req"
	if [ -n "$2" ]; then
		curl -s -o "$FLASHSALE_STATE/body" -w '%{http_code}' -X POST \
		    -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
		    --data-binary @"$FLASHSALE_STATE/q-req" "${4:-$q_origin}$1" >"$FLASHSALE_STATE/status"
	else
		curl -s -o "$FLASHSALE_STATE/body" -w '%{http_code}' -X POST \
		    -H 'Content-Type: application/json' \
		    --data-binary @"$FLASHSALE_STATE/q-req" "${4:-$q_origin}$1" >"$FLASHSALE_STATE/status"
	fi
	printf '%s %s' "$(cat "$FLASHSALE_STATE/status")" "$(cat "$FLASHSALE_STATE/body")"
}
# q_join SALE TOKEN BODY [BASE]; q_pass SALE TICKET: the join and the pass request.
q_join() { q_post "/api/flash-sales/sales/$1/queue" "$2" "$3" "${4:-}"; }
q_pass() { q_post "/api/flash-sales/sales/$1/queue/pass" "" "{\"ticket\":\"$2\"}"; }
# q_status SALE [BASE]: the status document's body.
q_status() { http GET "/api/flash-sales/sales/$1/queue" "" "${2:-$q_origin}" | cut -d' ' -f2-; }
# q_code ANSWER: "STATUS ERROR" of an answer.
q_code() { printf '%s %s' "${1%% *}" "$(json_get "${1#* }" error)"; }
# q_header NAME URL: one header of a GET.
q_header() { curl -s -o /dev/null -D - "$2" | tr -d '\r' | sed -n "s/^$1: //Ip" | head -n 1; }
# q_pow SALE SUB: a nonce whose SHA-256("fsq1|SALE|SUB|nonce") starts with 8
# zero bits (bounded: 20000 tries); q_bad_pow SALE SUB: one that does not.
q_pow() {
	qp_n=0
	while [ $qp_n -lt 20000 ]; do
		[ "$(printf 'fsq1|%s|%s|n%s' "$1" "$2" $qp_n | sha256sum | cut -c1-2)" = 00 ] &&
			echo "n$qp_n" && return 0
		qp_n=$((qp_n + 1))
	done
	return 1
}
q_bad_pow() {
	qp_n=0
	while [ "$(printf 'fsq1|%s|%s|b%s' "$1" "$2" $qp_n | sha256sum | cut -c1-2)" = 00 ]; do
		qp_n=$((qp_n + 1))
	done
	echo "b$qp_n"
}
# q_with_queue SALE SETTINGS: gives the sale a waiting room (what `sale create`
# writes for a "queue" member); prints its seed (hex).
q_with_queue() {
	qw_seed=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	psql_q "UPDATE sales SET queue = '$2', queue_seed = decode('$qw_seed', 'hex') WHERE id = $1" >/dev/null
	echo "$qw_seed"
}
# q_draw SEED SUB: the first 52 bits of HMAC-SHA256(seed, sub), in decimal.
q_draw() {
	qd_h=$(printf '%s' "$2" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$1" | awk '{ print $NF }')
	echo $((0x$(printf '%s' "$qd_h" | cut -c1-13)))
}

# --- Sale A opens in 10 minutes; joining opened 5 minutes ago (900 s before).
set -- $(new_sale 600 5)
qa=$1
# claimSeconds 120: the first place is admitted at the opening and asks for
# its pass only after the late join's proof of work (a shell loop), which
# took more than the default 15 s on a loaded machine (410 PASS_LAPSED).
qa_seed=$(q_with_queue "$qa" '{"preQueueSeconds":900,"passSeconds":120,"powBits":8,"claimSeconds":120}')
qa_doc=$(q_status "$qa")
is "$(json_get "$qa_doc" sale) $(json_get "$qa_doc" state) $(json_get "$qa_doc" seed) $(json_get "$qa_doc" joined) $(json_get "$qa_doc" admitted) $(json_get "$qa_doc" through) $(json_get "$qa_doc" powBits) $(json_get "$qa_doc" passSeconds) $(json_get "$qa_doc" unitsLeft)" \
    "$qa prequeue null 0 0 -1 8 120 5" "status before the opening: prequeue, no seed, nobody, 5 units left"
is "$(json_get "$qa_doc" seedCommit)" "$(printf '%s' "$qa_seed" | xxd -r -p | sha256sum | cut -d' ' -f1)" \
    "seedCommit is SHA-256 of the seed"
is "$(q_header Cache-Control "$q_origin/api/flash-sales/sales/$qa/queue")" "public, max-age=1, s-maxage=1" \
    "the status document: public, max-age=1"

# --- Joining before the opening: one place per account, whatever the device.
qa_u1=qa1-$qa qa_u2=qa2-$qa
qa_t1=$(admin token mint --user "$qa_u1")
qa_t2=$(admin token mint --user "$qa_u2")
qa_pow1=$(q_pow "$qa" "$qa_u1")
qa_j1=$(q_join "$qa" "$qa_t1" "{\"pow\":\"$qa_pow1\"}")
qa_ticket1=$(json_get "${qa_j1#* }" ticket)
is "${qa_j1%% *} $(json_get "${qa_j1#* }" sale) $(json_get "${qa_j1#* }" score) $(json_get "${qa_j1#* }" rank) $(json_get "${qa_j1#* }" drawn)" \
    "200 $qa null null true" "a join before the opening: 200, drawn, score and rank not shown"
qa_score1=$(redis ZSCORE "fs:{$qa}:q:places" "$qa_u1")
qa_d1=$(admin token mint --user "$qa_u1" --ttl 600)
qa_j1b=$(q_join "$qa" "$qa_d1" "{\"pow\":\"$qa_pow1\"}" "$q_edge")
is "${qa_j1b%% *} $(json_get "${qa_j1b#* }" ticket)" "200 $qa_ticket1" \
    "the same account from another device, through the edge: 200, the same ticket"
is "$(redis ZSCORE "fs:{$qa}:q:places" "$qa_u1") $(redis ZCARD "fs:{$qa}:q:places")" "$qa_score1 1" \
    "the same place: one place, its score unchanged"
qa_j2=$(q_join "$qa" "$qa_t2" "{\"pow\":\"$(q_pow "$qa" "$qa_u2")\"}")
is "${qa_j2%% *} $(redis ZCARD "fs:{$qa}:q:places")" "200 2" "a second account: a second place"

# --- A pass before admission: 409 NOT_YET, no rank before the opening.
qa_p=$(q_pass "$qa" "$qa_ticket1")
is "$(q_code "$qa_p") $(json_get "${qa_p#* }" rank) $(json_get "${qa_p#* }" admitted)" \
    "409 NOT_YET null 0" "a pass before admission: 409 NOT_YET, rank not shown before the opening"

# --- Bad input: a clear 4xx, nothing changed.
qa_bad=$(q_bad_pow "$qa" "$qa_u2")
qa_t3=$(admin token mint --user "qa3-$qa")
is "$(q_code "$(q_join "$qa" "" '{}')")" "401 UNAUTHENTICATED" "no token: 401"
is "$(q_code "$(q_join "$qa" "not.a.token" '{}')")" "401 UNAUTHENTICATED" "a malformed token: 401"
is "$(q_code "$(q_join "$qa" "$qa_t3" '{}')")" "400 BAD_POW" "no proof of work: 400 BAD_POW"
is "$(q_code "$(q_join "$qa" "$qa_t3" "{\"pow\":\"$qa_bad\"}")")" "400 BAD_POW" "a weak proof of work: 400 BAD_POW"
is "$(q_code "$(q_join "$qa" "$qa_t3" "{\"pow\":\"$qa_pow1\"}")")" "400 BAD_POW" \
    "another account's proof of work: 400 BAD_POW"
is "$(q_code "$(q_join "$qa" "$qa_t3" '{"pow":"a b"}')")" "400 BAD_POW" "a nonce not of the alphabet: 400 BAD_POW"
is "$(q_code "$(q_join "$qa" "$qa_t3" '{"pow":7}')")" "400 BAD_POW" "a nonce not a string: 400 BAD_POW"
is "$(q_code "$(q_join "$qa" "$qa_t3" '{')")" "400 BAD_REQUEST" "malformed JSON: 400 BAD_REQUEST"
is "$(q_code "$(q_join "$qa" "$qa_t3" '[]')")" "400 BAD_REQUEST" "not an object: 400 BAD_REQUEST"
is "$(q_code "$(q_join "$qa" "$qa_t3" '{"pow":"n1","x":1}')")" "400 BAD_REQUEST" "another member: 400 BAD_REQUEST"
is "$(q_code "$(q_join "$qa" "$qa_t3" "{\"pow\":\"$(head -c 300 /dev/zero | tr '\0' a)\"}")")" \
    "413 PAYLOAD_TOO_LARGE" "a 300-byte body: 413"
is "$(q_code "$(q_join "$qa" "$qa_t3" "{\"pow\":\"$(head -c 10000 /dev/zero | tr '\0' a)\"}")" | cut -d' ' -f1)" \
    "413" "a 10 KB body: 413 (nginx)"
is "$(q_code "$(q_join 987654321 "$qa_t3" '{}')")" "404 NO_QUEUE" "an unknown sale: 404 NO_QUEUE"
set -- $(new_sale 600 5)
qn=$1
is "$(q_code "$(q_join "$qn" "$qa_t3" '{}')")" "404 NO_QUEUE" "a sale without a waiting room: 404 NO_QUEUE"
is "$(q_code "$(http GET "/api/flash-sales/sales/$qn/queue" "" "$q_edge")")" "404 NO_QUEUE" \
    "its status document: 404 NO_QUEUE (through the edge)"
is "$(q_code "$(q_pass "$qa" "garbage")")" "403 BAD_TICKET" "a forged ticket: 403 BAD_TICKET"
is "$(q_code "$(q_post "/api/flash-sales/sales/$qa/queue/pass" "" '{}')")" "400 BAD_REQUEST" \
    "a pass request without a ticket: 400"
is "$(q_code "$(http GET "/api/flash-sales/sales/$qa/queue/pass")")" "405 METHOD_NOT_ALLOWED" "GET of the pass: 405"
is "$(q_code "$(http DELETE "/api/flash-sales/sales/$qa/queue")")" "405 METHOD_NOT_ALLOWED" "DELETE of the queue: 405"
is "$(q_code "$(http GET "/api/flash-sales/sales/$qa/queue/x")")" "404 SALE_NOT_FOUND" "another path: 404"
is "$(redis ZCARD "fs:{$qa}:q:places") $(redis LLEN "fs:{$qa}:q:journal" | awk '{ print ($1 <= 2) }')" "2 1" \
    "the refused requests changed nothing: still two places"

# --- Joining not open yet: a sale whose waiting room opens in the future.
set -- $(new_sale 3600 5)
qb=$1
q_with_queue "$qb" '{"preQueueSeconds":60,"powBits":0}' >/dev/null
is "$(json_get "$(q_status "$qb")" state)" "before" "an hour before, joining 60 s before: state before"
is "$(q_code "$(q_join "$qb" "$qa_t3" '{}')")" "409 QUEUE_NOT_OPEN" "a join then: 409 QUEUE_NOT_OPEN"

# --- Joins cost no PostgreSQL: 40 accounts join sale C at once; each worker
# thread reads the sale at most once a second.
set -- $(new_sale 600 5)
qc=$1
q_with_queue "$qc" '{"powBits":0}' >/dev/null
qc_i=0
while [ $qc_i -lt 40 ]; do
	[ $qc_i -gt 0 ] && echo next
	printf 'url = "%s/api/flash-sales/sales/%s/queue"\nrequest = "POST"\nheader = "Authorization: Bearer %s"\ndata = "{}"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
	    "$q_origin" "$qc" "$(admin token mint --user "qc$qc_i-$qc")"
	qc_i=$((qc_i + 1))
done >"$FLASHSALE_STATE/q-burst.cfg"
qc_reads=$(metric_total flashsale_queue_sale_reads_total)
qc_t0=$(date +%s%N)
curl -s -Z --parallel-max 40 -K "$FLASHSALE_STATE/q-burst.cfg" >"$FLASHSALE_STATE/q-burst.out" 2>/dev/null
qc_ms=$((($(date +%s%N) - qc_t0) / 1000000))
qc_reads=$(($(metric_total flashsale_queue_sale_reads_total) - qc_reads))
is "$(grep -c '^200$' "$FLASHSALE_STATE/q-burst.out") $(redis ZCARD "fs:{$qc}:q:places")" "40 40" \
    "40 joins at once: 40 places"
# Two processes of four threads: at most 8 reads per second begun.
diag "40 joins in $qc_ms ms: $qc_reads PostgreSQL reads of the sale"
if [ "$qc_reads" -le $((8 * (qc_ms / 1000 + 1))) ] && [ "$qc_reads" -lt 40 ]; then
	ok "the joins cost PostgreSQL $qc_reads read(s), at most one per thread and second"
else
	not_ok "joins cost no PostgreSQL beyond the per-thread cache" "$qc_reads reads in $qc_ms ms"
fi

# --- The status document through the edge: cached a second, counts exact.
qc_doc=$(q_status "$qc" "$q_edge")
is "$(json_get "$qc_doc" joined) $(json_get "$qc_doc" drawn)" "40 40" "through the edge: 40 joined, 40 drawn"
q_status "$qc" "$q_edge" >/dev/null
is "$(q_header X-Cache "$q_edge/api/flash-sales/sales/$qc/queue") $(q_header Cache-Control "$q_edge/api/flash-sales/sales/$qc/queue")" \
    "HIT public, max-age=1, s-maxage=1" "the edge keeps it (HIT), public, max-age=1"

# --- The opening: sale A starts now; the seed is published, the places drawn.
psql_q "UPDATE sales SET starts_at = now() - interval '1 second' WHERE id = $qa" >/dev/null
q_opened() { [ "$(json_get "$(q_status "$qa")" state)" = open ]; }
poll_until 0.2 5 q_opened
qa_doc=$(q_status "$qa")
is "$(json_get "$qa_doc" state) $(json_get "$qa_doc" seed) $(json_get "$qa_doc" drawn) $(json_get "$qa_doc" joined)" \
    "open $qa_seed 2 2" "after the opening: the seed is published, 2 places drawn"
qa_j1=$(q_join "$qa" "$qa_t1" "{\"pow\":\"$qa_pow1\"}")
qa_draw1=$(q_draw "$qa_seed" "$qa_u1")
qa_draw2=$(q_draw "$qa_seed" "$qa_u2")
qa_rank1=$([ "$qa_draw1" -lt "$qa_draw2" ] && echo 0 || echo 1)
is "${qa_j1%% *} $(json_get "${qa_j1#* }" score) $(json_get "${qa_j1#* }" rank) $(json_get "${qa_j1#* }" drawn)" \
    "200 $qa_draw1 $qa_rank1 true" \
    "the place taken before: its score is HMAC-SHA256(seed, sub)'s first 52 bits, anyone can check it"
qa_t4=$(admin token mint --user "qa4-$qa")
qa_j4=$(q_join "$qa" "$qa_t4" "{\"pow\":\"$(q_pow "$qa" "qa4-$qa")\"}")
is "${qa_j4%% *} $(json_get "${qa_j4#* }" score) $(json_get "${qa_j4#* }" rank) $(json_get "${qa_j4#* }" drawn)" \
    "200 $((LATE + 1)) 2 false" "a join after the opening: 2^52 + 1, behind every drawn place"

# --- Admission by the pacer (a thread of flashsale-queue), then the pass.
q_admitted() { [ "$(json_get "$(q_status "$qa")" admitted)" -ge 3 ]; }
if poll_until 0.2 15 q_admitted; then
	ok "the pacer admits the places (5 units left, 1 x 5 at the opening)"
else
	not_ok "the pacer admits the places" "$(q_status "$qa")"
fi
qa_p=$(q_pass "$qa" "$qa_ticket1")
qa_pass1=$(json_get "${qa_p#* }" pass)
qa_exp=$(json_get "${qa_p#* }" expiresAt)
qa_now=$(($(date +%s%N) / 1000000))
is "${qa_p%% *} $([ $((qa_exp - qa_now)) -gt 115000 ] && [ $((qa_exp - qa_now)) -le 120000 ] && echo fresh)" \
    "200 fresh" "an admitted place's pass: 200, valid passSeconds"
qa_p=$(q_pass "$qa" "$qa_ticket1")
is "${qa_p%% *} $(json_get "${qa_p#* }" pass) $(json_get "${qa_p#* }" expiresAt)" "200 $qa_pass1 $qa_exp" \
    "asked again: the same pass, the same expiry"
is "$(q_code "$(q_pass "$qc" "$qa_ticket1")")" "403 BAD_TICKET" "a ticket of another sale: 403 BAD_TICKET"
is "$(json_get "$(q_status "$qa")" passesOut)" "1" "the status document counts the pass out"

# --- SIGTERM: every flashsale-queue process exits (its workers drained, its
# pacer thread stopped); started again, it answers the places Redis kept.
q_pids=$(cat "$FLASHSALE_STATE/run/flashsale-queue.pid")
# shellcheck disable=SC2086 # one word per PID
kill -TERM $q_pids
q_gone() {
	for qg_p in $q_pids; do
		kill -0 "$qg_p" 2>/dev/null && return 1
	done
	return 0
}
if poll_until 0.2 10 q_gone; then
	ok "SIGTERM: every flashsale-queue process exits (pacer thread included)"
else
	not_ok "SIGTERM: every flashsale-queue process exits" "still running: $q_pids"
fi
"$stack" start flashsale-queue >/dev/null 2>&1
qa_j1=$(q_join "$qa" "$qa_t1" "{\"pow\":\"$qa_pow1\"}")
is "${qa_j1%% *} $(json_get "${qa_j1#* }" score) $(json_get "${qa_j1#* }" ticket)" "200 $qa_draw1 $qa_ticket1" \
    "started again: the same place and ticket"
