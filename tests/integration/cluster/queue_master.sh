# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The Redis master that holds a waiting room (every fs:{S}:q:* key, in the
# sale's hash tag with its stock) is SIGKILLed mid-admission. 300 shoppers
# joined before the opening and go on through the load generator's journey
# (status polls, pass, purchase with Flashsale-Pass a moment later, retries
# after a 503); 60 more join late: 30 just before the kill, 30 from the
# instant after, while the master is dead. Its replica is
# promoted and nothing is restarted: joins, admission, passes and purchases
# resume by themselves. Asserted exactly: every place the master had a
# moment before the kill is on the promoted replica with its score; every
# shopper joining again is answered the place Redis and PostgreSQL both
# have (300 drawn, 60 late 2^52+1..60, one per account); Redis' admitted
# count is PostgreSQL's last step, which admitted the units (more only in
# the stead of places silent past 5 s, within admitMultiple);
# every unit sold once, to an account that holds one; queue verify and
# reconcile clean.
# The stack leaves FLASHSALE_REDIS_WAIT_MS unset: a write the master
# answered and had not yet sent to its replica may be lost (docs/QUEUE.md,
# docs/CLUSTER.md). The kill lands after the master has answered: each
# loss the promoted replica shows is printed; what a loss would cost is in
# the holds' line of defence (the database refuses a unit sold twice:
# reconcile --repair then, as cluster/redis_master.sh does).

. "$top_srcdir/tests/integration/cluster_lib.sh"

qm_pre=300 qm_late=60 qm_wave=30 qm_units=150
qm_dir=$FLASHSALE_STATE/queue-master
mkdir -p "$qm_dir"
loadgen=$FLASHSALE_BINDIR/tests/load/flashsale-load
LATE=4503599627370496

# qm_redis PORT ARGS...: redis-cli as the operator to the node on PORT,
# following redirects (the suite's `redis` names the first node, which
# may be the one killed).
qm_redis() {
	qr_port=$1
	shift
	REDISCLI_AUTH=$(cat "$FLASHSALE_REDIS_PASSWORD_FILE") redis-cli --no-auth-warning \
		--user "$FLASHSALE_REDIS_USER" -c -p "$qr_port" "$@" | tr -d '\r'
}
# qm_places PORT: "SUB SCORE" of every place of the sale, sorted.
qm_places() {
	qm_redis "$1" ZRANGE "fs:{$sale}:q:places" 0 -1 WITHSCORES | paste -d' ' - - |
		awk 'NF == 2 { printf "%s %.0f\n", $1, $2 }' | sort
}
# qm_admitted PORT: Redis' count of places admitted.
qm_admitted() { qm_redis "$1" HGET "fs:{$sale}:q:state" admitted | grep . || echo 0; }
# qm_pids PROGRAM: the pids of PROGRAM on both origins (spawn-fcgi writes
# no final newline), one line.
qm_pids() {
	for qp_f in "$FLASHSALE_STATE"/origin-[ab]/run/flashsale-"$1".pid; do
		cat "$qp_f"
		echo
	done | grep . | tr '\n' ' '
}
qm_admitting() { [ "$(qm_admitted "$master")" -ge 30 ]; }
# qm_journey FILE OUT [OPTIONS...]: the load generator's waiting-room
# journey of the shoppers of FILE through the edge, retrying every 503
# (a 503 without Retry-After, the edge's while both origins are out, after
# 0.5-1 s, then 1-2 s: ten retries outlast the failover).
qm_journey() {
	qj_file=$1 qj_out=$2
	shift 2
	"$loadgen" --queue "$qj_file" --sale "$sale" --port "$FLASHSALE_PORT_BASE" --source-ips 16 \
		--retries 10 --backoff-ms 1000 --duration-max 45 "$@" >"$qj_out" 2>"$qj_out.err"
}

# --- A queue sale of 150 units opening in 12 s; 30 admissions a second,
# so that admission lasts about five seconds and the kill lands within.
cat >"$qm_dir/sale.json" <<JSON
{"name":"queue master","startsInSeconds":12,"durationSeconds":600,"paymentWindowSeconds":600,
 "queue":{"preQueueSeconds":60,"passSeconds":30,"powBits":0,"admitMultiple":1.5,"capacityPerSecond":30},
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":$qm_units}]}
JSON
set -- $(sale_created "$qm_dir/sale.json")
sale=$1 item=$2
admin sale warm "$sale" >/dev/null
path=$(purchase_path "$sale")
master=$(k_master_port "fs:{$sale}:q:places")
replica=$(k_replica_port "$master")
is "$(redis CLUSTER KEYSLOT "fs:{$sale}:q:places") $(k_role "$master") $(k_role "$replica")" \
	"$(redis CLUSTER KEYSLOT "fs:{$sale}:stock") master slave" \
	"the waiting room's keys share the stock's slot: a master (redis-$(k_redis_node "$master")) and its replica (redis-$(k_redis_node "$replica"))"
diag "FLASHSALE_REDIS_WAIT_MS=${FLASHSALE_REDIS_WAIT_MS:-0} (unset in the cluster stack: no WAIT after a join or a pass)"

admin token mint --user "qm$sale" --count "$qm_pre" --alg HS256 --ttl 3600 >"$qm_dir/pre.tokens"
admin token mint --user "qml$sale" --count "$qm_late" --alg HS256 --ttl 3600 >"$qm_dir/late.tokens"
awk -v p="$path" '{ print $1, $2, p }' "$qm_dir/pre.tokens" >"$qm_dir/pre"
awk -v p="$path" -v n=$qm_wave 'NR <= n { print $1, $2, p }' "$qm_dir/late.tokens" >"$qm_dir/late1"
awk -v p="$path" -v n=$qm_wave 'NR > n { print $1, $2, p }' "$qm_dir/late.tokens" >"$qm_dir/late2"

# --- Before the opening: 300 join.
qm_journey "$qm_dir/pre" "$qm_dir/prejoin.out" --connections 16 --join-only
is "$(load_sum "$qm_dir/prejoin.out" joins_200) $(qm_redis "$master" ZCOUNT "fs:{$sale}:q:places" 0 "($LATE")" \
	"$qm_pre $qm_pre" "$qm_pre shoppers join before the opening: $qm_pre drawn places"

# --- The journey: the same 300 join again, wait, ask for their pass once
# admitted and buy within 3 s (every one admitted buys: admission is
# exactly the units then; the purchases of those admitted before the kill
# meet it).
handlers=$(qm_pids purchase)
queues=$(qm_pids queue)
qm_journey "$qm_dir/pre" "$qm_dir/journey.out" --connections 32 --poll-rate 20 --page-poll-ms 250 \
	--react-min-ms 0 --react-max-ms 3000 --queue-csv "$qm_dir/timeline.csv" &
journey_pid=$!
if poll_until 0.05 40 qm_admitting; then
	ok "admission begins: $(qm_admitted "$master") places admitted"
else
	not_ok "admission begins" "admitted $(qm_admitted "$master")"
fi

# --- The first 30 late joiners; once they are in, the master dies (a
# snapshot of its places and count a moment before) and the other 30 set
# off at once.
k_pids_of "redis-$(k_redis_node "$master")"
qm_journey "$qm_dir/late1" "$qm_dir/late1.out" --connections 2 --join-only
qm_places "$master" >"$qm_dir/places.before"
admitted0=$(qm_admitted "$master")
k_kill_master
qm_journey "$qm_dir/late2" "$qm_dir/late2.out" --connections 2 --join-only &
late_pid=$!
k_wait_promotion "$replica"
is "$(k_role "$replica")" "master" "the replica is promoted ($k_promoted_ms ms after the kill)"
admitted1=$(qm_admitted "$replica")
qm_places "$replica" >"$qm_dir/places.promoted"
places_lost=$(comm -23 "$qm_dir/places.before" "$qm_dir/places.promoted" | wc -l | tr -d ' ')
diag "at the kill: $(wc -l <"$qm_dir/places.before" | tr -d ' ') places, $admitted0 admitted on the master; the promoted replica at its first read: $(wc -l <"$qm_dir/places.promoted" | tr -d ' ') places, $admitted1 admitted"
is "$places_lost $([ "$admitted1" -ge "$admitted0" ] && echo kept)" "0 kept" \
	"the promoted replica has every place the master had a moment before the kill, with its score, and its admissions"
if [ "$admitted0" -gt 0 ] && [ "$admitted0" -lt "$qm_units" ]; then
	ok "the master died mid-admission ($admitted0 of $qm_units admitted)"
else
	not_ok "the master died mid-admission" "admitted $admitted0 of $qm_units"
fi

# --- Nothing restarted: the journeys go on by themselves.
wait "$journey_pid"
wait "$late_pid"
diag "journey: $(grep -E '^queue (join|pass|buy|poll|shoppers|admitted|opening)' "$qm_dir/journey.out" | tr '\n' ';')"
diag "journey's purchases: $(grep -E '^shoppers. final outcome' "$qm_dir/journey.out"), $(load_sum "$qm_dir/journey.out" n_503) answered 503"
is "$(load_sum "$qm_dir/late1.out" joins_200) $(load_sum "$qm_dir/late2.out" joins_200)" "$qm_wave $qm_wave" \
	"the $qm_late late joiners, $qm_wave before the kill and $qm_wave after: each answered 200"
late2_503=$(sed -n 's/^queue join:.* 503=\([0-9]*\).*/\1/p' "$qm_dir/late2.out" | grep . || echo 0)
if [ "$late2_503" -gt 0 ]; then
	ok "the joins the dead master could not take were refused (503 x $late2_503) and taken on a retry"
else
	not_ok "the joins during the failover were refused (503) and taken on a retry" "$(grep '^queue join' "$qm_dir/late2.out")"
fi
is "$(load_sum "$qm_dir/journey.out" joins_200) $(load_sum "$qm_dir/journey.out" mismatch)" "$qm_pre 0" \
	"the $qm_pre join again: 200 each, no repeat named another place"
# shellcheck disable=SC2086 # one word per PID
is "$(qm_pids purchase)$(qm_pids queue)$(k_alive $handlers $queues)" \
	"$handlers$queues$(echo $handlers $queues | wc -w | tr -d ' ')" \
	"no purchase or queue handler was restarted: the same processes, all alive"
final=$(qm_admitted "$replica")
if [ "$final" -gt "$admitted1" ]; then
	ok "admission resumed on the promoted replica ($admitted1 -> $final)"
else
	not_ok "admission resumed on the promoted replica" "$admitted1 -> $final"
fi
consumer_caught_up 60

# --- Every shopper joins once more, after the failover (the edge, eight
# source addresses: the per-address limit): the place Redis has, which is
# the place PostgreSQL has, one per account, none added.
i=0
cat "$qm_dir/pre.tokens" "$qm_dir/late.tokens" | while read -r sub tok; do
	[ $i -eq 0 ] || echo next
	printf 'url = "%s/api/flash-sales/sales/%s/queue"\nrequest = "POST"\ninterface = "127.100.0.%d"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata = "{}"\nsilent\nwrite-out = "%%{http_code}\\n"\noutput = "%s/rejoin.%s"\n' \
		"$FLASHSALE_EDGE_URL" "$sale" $((i % 8 + 1)) "$tok" "$qm_dir" "$sub"
	i=$((i + 1))
done >"$qm_dir/rejoin.cfg"
curl -s --no-progress-meter -Z --parallel-max 16 -K "$qm_dir/rejoin.cfg" >"$qm_dir/rejoin.codes"
is "$(sort "$qm_dir/rejoin.codes" | uniq -c | sed 's/^ *//')" "$((qm_pre + qm_late)) 200" \
	"after the failover all $((qm_pre + qm_late)) shoppers join again: 200 each"
cut -d' ' -f1 "$qm_dir/pre.tokens" "$qm_dir/late.tokens" | while read -r sub; do
	printf '%s %s\n' "$sub" "$(json_get "$(cat "$qm_dir/rejoin.$sub")" score)"
done | sort >"$qm_dir/places.answered"
qm_places "$replica" >"$qm_dir/places.after"
psql_q "SELECT user_id || ' ' || score FROM queue_places WHERE sale_id = $sale" | sort >"$qm_dir/places.pg"
is "$(wc -l <"$qm_dir/places.after" | tr -d ' ') $(cmp -s "$qm_dir/places.answered" "$qm_dir/places.after" && echo same) $(cmp -s "$qm_dir/places.pg" "$qm_dir/places.after" && echo same)" \
	"$((qm_pre + qm_late)) same same" \
	"one place per account in Redis ($((qm_pre + qm_late))): each the one its join answers, each the one PostgreSQL has"
is "$(join "$qm_dir/places.before" "$qm_dir/places.answered" | awk '$2 != $3' | wc -l | tr -d ' ')" 0 \
	"every place taken before the kill is answered again with its score"
is "$(awk -v b="$LATE" '$2 < b' "$qm_dir/places.after" | wc -l | tr -d ' ') $(awk -v b="$LATE" '$2 >= b { print $2 - b }' "$qm_dir/places.after" | sort -n | tr '\n' ' ')" \
	"$qm_pre $(seq 1 "$qm_late" | tr '\n' ' ')" \
	"$qm_pre drawn places, and the $qm_late late ones are 2^52 + 1 .. $qm_late: no late number lost or given twice"

# --- Admission: Redis' threshold is PostgreSQL's last step, a pass per place admitted.
pg_last=$(psql_q "SELECT admitted || ' ' || through FROM queue_admissions WHERE sale_id = $sale ORDER BY step DESC LIMIT 1")
is "$final $(qm_redis "$replica" HGET "fs:{$sale}:q:state" through | awk '{ printf "%.0f", $1 }') $(qm_redis "$replica" ZCARD "fs:{$sale}:q:passes")" \
	"$pg_last $final" \
	"Redis admitted $final through the place PostgreSQL's last step names ($pg_last); a pass per admitted account"
# Exactly the units unless some admitted place did not ask for its pass
# within FS_QUEUE_PACER_EXPECT_MS (5 s) of its admission: a pass request
# that met the dead master is answered 503 and retried after the failover,
# and the pacer, taking the silent place for one that walked away, admits
# the next in its stead (docs/QUEUE.md). Never beyond admitMultiple (1.5)
# times the units; each place over the units is one that found them sold.
if [ "$final" -ge "$qm_units" ] && [ "$final" -le $((qm_units * 3 / 2)) ]; then
	ok "admission: $final places admitted for $qm_units units (at least the units, at most admitMultiple times them)"
else
	not_ok "admission: at least the units, at most admitMultiple times them" "$final places for $qm_units units"
fi
[ "$final" = "$qm_units" ] || diag "$((final - qm_units)) place(s) admitted in the stead of places silent past 5 s (their pass requests met the failover)"

# --- The units: every one sold once, to an account that holds one.
set -- $(k_sale_item "$sale" "$item")
left=$2
failed=$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $sale AND status = 'FAILED'")
is "$(psql_q "SELECT count(*) || ' ' || count(DISTINCT user_id) FROM orders WHERE sale_id = $sale AND status IN ('PENDING', 'PAID')") $left" \
	"$qm_units $qm_units 0" "$qm_units live orders, no account holding two units, none left: no oversell, none stranded"
diag "sold $qm_units: the journey's 202s $(load_sum "$qm_dir/journey.out" final_202), FAILED orders $failed (a hold the promoted replica lacked sells twice; the database refuses the second)"
is "$(psql_q "SELECT count(*) FROM orders o WHERE o.sale_id = $sale AND NOT EXISTS (SELECT 1 FROM queue_places p WHERE p.sale_id = o.sale_id AND p.user_id = o.user_id)")" 0 \
	"every order belongs to a place"
if verify=$(admin queue verify "$sale" --json 2>&1); then
	ok "queue verify $sale exits 0"
else
	not_ok "queue verify $sale exits 0" "$verify"
fi
is "$(json_get "$verify" violations) $(json_get "$verify" places) $(json_get "$verify" drawn) $(json_get "$verify" admitted) $(json_get "$verify" orders)" \
	"0 $((qm_pre + qm_late)) $qm_pre $final $((qm_units + failed))" \
	"queue verify: no violation (every order admitted before it, steps through the places in draw order)"
# A hold lost in the failover leaves Redis' stock behind PostgreSQL's; none
# lost, the check alone passes (no --repair).
if [ "$failed" = 0 ]; then
	check "reconcile --all --check passes, no repair" admin reconcile --all --check
else
	out=$(admin reconcile --all --repair 2>&1)
	case $out in
	*" 0 violations"*) ok "reconcile --all --repair leaves no violation ($failed holds lost)" ;;
	*) not_ok "reconcile --all --repair leaves no violation" "$out" ;;
	esac
fi
diag "queue master: failover $k_promoted_ms ms; places $(wc -l <"$qm_dir/places.before" | tr -d ' ') at the kill, $(wc -l <"$qm_dir/places.after" | tr -d ' ') after; admitted $admitted0 at the kill, $admitted1 on the promoted replica, $final at the end; sold $qm_units"

check "the killed node restarts and rejoins as a replica" "$stack" start "redis-$(k_redis_node "$master")"
is "$(k_role "$master")" "slave" "redis-$(k_redis_node "$master") is now a replica"
