# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Helpers of the cluster suite (cluster/*.sh, FLASHSALE_TOPOLOGY=cluster),
# sourced by each of them after lib.sh. Names start with k_: the helpers
# of a topic, apart from the test file's own names.

# One collation for sort, join, comm and uniq.
export LC_ALL=C

k_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# k_backend NAME: "healthy" or "sick", as Varnish sees its backend NAME
# (origin_a, origin_b).
k_backend() {
	varnishadm -n "$FLASHSALE_STATE/varnish" backend.list 2>/dev/null |
		awk -v b="$1" '$1 ~ ("\\." b "$") { print ($0 ~ /[Hh]ealthy/ ? "healthy" : "sick") }'
}

# Requests that reached the origins' nginx so far (the probes are not
# logged): cheap enough to poll every few milliseconds.
k_purchases() {
	cat "$FLASHSALE_STATE"/origin-[ab]/log/nginx-access.log 2>/dev/null | wc -l
}

# k_burst NAME SALE SHOPPERS IN_FLIGHT [BASE]: mints SHOPPERS tokens
# (users NAME-SALE-i) into $k_tokens and fires one purchase each in the
# background ($k_burst_pid), answers into $k_out ("STATUS USER" lines).
k_burst() {
	k_tokens=$FLASHSALE_STATE/$1-tokens-$2
	k_out=$FLASHSALE_STATE/$1-out-$2
	admin token mint --user "$1-$2" --count "$3" >"$k_tokens"
	fire_all "$(purchase_path "$2")" "$k_tokens" "$k_out" "$4" "${5:-}" &
	k_burst_pid=$!
}

# k_until_purchases N: waits (bounded) until N more purchase requests than
# at the call reached the origins: the fault lands mid-burst.
k_until_purchases() {
	k_from=$(k_purchases)
	k_deadline=$(($(date +%s) + 30))
	until [ $(($(k_purchases) - k_from)) -ge "$1" ] || [ "$(date +%s)" -ge "$k_deadline" ]; do
		sleep 0.005
	done
}

# k_retry SALE OUT [BASE]: the shoppers of OUT answered neither 202, 409
# nor 410 (503 TRY_AGAIN, or no answer) press Buy once more; their answers
# are appended to OUT (and their names to OUT.retried, every round's).
# Prints how many retried.
k_retry() {
	k_again=$FLASHSALE_STATE/retry-tokens-$1
	awk '$1 != "202" && $1 != "409" && $1 != "410" { print $2 }' "$2" | sort >"$k_again.users"
	cat "$k_again.users" >>"$2.retried"
	sort "$k_tokens" | join "$k_again.users" - >"$k_again"
	: >"$k_again.out"
	if [ -s "$k_again" ]; then
		fire_all "$(purchase_path "$1")" "$k_again" "$k_again.out" 20 "${3:-}"
	fi
	# A shopper's last answer counts: drop the retried ones' first.
	awk 'FILENAME == ARGV[1] { again[$1] = 1; next } !($2 in again)' "$k_again.users" "$2" >"$2.kept"
	cat "$2.kept" "$k_again.out" >"$2"
	wc -l <"$k_again.users" | tr -d ' '
}

# k_retry_rounds SALE OUT [BASE]: k_retry until nobody is left to retry, at
# most eight rounds, each after the second a 503's Retry-After asks for (as
# the page does): a retry that meets its first attempt's hold still on its
# way to the broker is told 503 until that attempt's delivery timeout has
# passed (FLASHSALE_KAFKA_TIMEOUT_MS + 1 s), then gets the 409 the broker
# confirmed (issue 36, a 409 is a promise). Prints how many retries there
# were in all.
k_retry_rounds() {
	k_retried=0
	for k_round in 1 2 3 4 5 6 7 8; do
		[ "$k_round" = 1 ] || sleep 1
		k_n=$(k_retry "$@")
		[ "$k_n" = 0 ] && break
		k_retried=$((k_retried + k_n))
	done
	echo "$k_retried"
}

# k_unanswered OUT: the shoppers of OUT whose last answer is none of 202,
# 409 or 410.
k_unanswered() { awk '$1 != "202" && $1 != "410" && $1 != "409"' "$1" | wc -l | tr -d ' '; }

# k_alive PID...: how many of those processes are alive.
k_alive() {
	k_up=0
	for k_pid in "$@"; do
		kill -0 "$k_pid" 2>/dev/null && k_up=$((k_up + 1))
	done
	echo "$k_up"
}

# The users that know their order, sorted: a 202, or a 409 on a retry (the
# first attempt's order reached the broker though its answer was lost).
k_winners() { awk '$1 == "202" || $1 == "409" { print $2 }' "$1" | sort; }

# k_sale_item SALE ITEM: "QUANTITY LEFT HOLDS" of the item as `sale show`
# prints them (left and holds: what Redis has).
k_sale_item() {
	admin sale show "$1" | awk -v i="$2" '$1 == i { print $(NF - 5), $(NF - 1), $NF }'
}

# k_figures SALE ITEM OUT: the outcome of a burst, once the consumer caught
# up. Sets k_202 (202s), k_won (shoppers who know their order: 202, or 409
# on a retry), k_lost (of them, those with no order in PostgreSQL), k_dup
# (shoppers with more than one order), k_failed (FAILED orders), k_won_failed
# (of them, orders whose shopper had been told 202; a 409 may name a hold
# whose order never reached the broker, which the sweeper fails), k_unannounced
# (live orders of shoppers answered otherwise: a 503 whose message the
# broker had after all), k_live (PENDING + PAID), k_oversold (live orders
# beyond the quantity), k_stranded (units neither left in Redis nor held by
# a live order). Leaves the users, sorted, in OUT.202, OUT.won, OUT.failed,
# OUT.live (of the live orders) and OUT.unannounced.
k_figures() {
	k_202=$(count_of 202 "$3")
	awk '$1 == "202" { print $2 }' "$3" | sort >"$3.202"
	k_winners "$3" >"$3.won"
	k_won=$(wc -l <"$3.won" | tr -d ' ')
	psql_q "SELECT user_id FROM orders WHERE sale_id = $1" | sort >"$3.recorded"
	k_lost=$(comm -23 "$3.won" "$3.recorded" | wc -l | tr -d ' ')
	k_dup=$(uniq -d "$3.recorded" | wc -l | tr -d ' ')
	psql_q "SELECT user_id FROM orders WHERE sale_id = $1 AND status = 'FAILED'" | sort >"$3.failed"
	k_failed=$(wc -l <"$3.failed" | tr -d ' ')
	k_won_failed=$(comm -12 "$3.failed" "$3.202" | wc -l | tr -d ' ')
	psql_q "SELECT user_id FROM orders WHERE sale_id = $1 AND status IN ('PENDING', 'PAID')" | sort >"$3.live"
	comm -13 "$3.won" "$3.live" >"$3.unannounced"
	k_unannounced=$(wc -l <"$3.unannounced" | tr -d ' ')
	k_live=$(psql_q "SELECT count(*) FROM orders WHERE item_id = $2 AND status IN ('PENDING', 'PAID')")
	set -- $(k_sale_item "$1" "$2")
	k_quantity=$1
	k_left=$2
	k_oversold=$((k_live > k_quantity ? k_live - k_quantity : 0))
	k_stranded=$((k_quantity - k_live - k_left))
}

# k_topic SALE NAME: the sale's order messages on the topic, and whether
# each order is one message. An order may be there twice: librdkafka's
# idempotent producer can write a batch again across a leader change
# (confluentinc/librdkafka#4953, open; its maintainers: only transactions
# rule it out), and the consumer records it once (k_report: duplicated 0).
# What must hold is that every copy is the same message, never two orders
# under one id. Asserts that, naming the copies.
k_topic() {
	sale_messages "$1" >"$FLASHSALE_STATE/$2-messages-$1"
	k_on_topic=$(wc -l <"$FLASHSALE_STATE/$2-messages-$1" | tr -d ' ')
	k_topic_orders=$(fs_json .orderId <"$FLASHSALE_STATE/$2-messages-$1" | sort -u | wc -l | tr -d ' ')
	is "$(sort -u "$FLASHSALE_STATE/$2-messages-$1" | wc -l | tr -d ' ')" "$k_topic_orders" \
	    "each order on the topic is one message ($k_on_topic messages for $k_topic_orders orders: $((k_on_topic - k_topic_orders)) written twice by the producer)"
}

# k_report NAME FAULTS REQUESTS: prints the figures of the fault and
# asserts the three that must be 0 (k_figures first).
k_report() {
	diag "$1: faults injected $2, requests during the fault $3, 202s $k_202 (+$((k_won - k_202)) 409s on a retry), orders lost $k_lost, units oversold $k_oversold, units stranded $k_stranded"
	diag "$1: also $k_failed FAILED ($k_won_failed of shoppers told 202; $k_swept ghost holds swept), $k_unannounced live orders of shoppers answered otherwise (a 503 whose order the broker had)"
	is "$k_lost $k_dup" "0 0" "$1: every 202 is recorded once (orders lost 0, duplicated 0)"
	is "$k_oversold $k_stranded" "0 0" "$1: units oversold 0, units stranded 0 ($k_live live + $k_left left = $k_quantity)"
}

# The Redis node (m1 ... r3) listening on PORT.
k_redis_node() {
	for k_n in m1 m2 m3 r1 r2 r3; do
		case $k_n in
		m*) k_p=$((FLASHSALE_PORT_BASE + 10 + ${k_n#m})) ;;
		*) k_p=$((FLASHSALE_PORT_BASE + 13 + ${k_n#r})) ;;
		esac
		[ "$k_p" = "$1" ] && echo "$k_n"
	done
}

# The port of the master that serves KEY's slot now, and of its replica.
k_master_port() {
	k_slot=$(redis CLUSTER KEYSLOT "$1")
	redis CLUSTER NODES | awk -v s="$k_slot" '$3 ~ /master/ && $3 !~ /fail/ {
		for (i = 9; i <= NF; i++) {
			n = split($i, r, "-")
			lo = r[1]; hi = (n == 2 ? r[2] : r[1])
			if (s + 0 >= lo + 0 && s + 0 <= hi + 0) { split($2, a, "[:@]"); print a[2] }
		}
	}'
}
k_replica_port() {
	redis CLUSTER NODES | awk -v p="$1" '{ split($2, a, "[:@]"); port[$1] = a[2]; if ($3 ~ /slave/) master[$1] = $4 }
		END { for (n in master) if (port[master[n]] == p) print port[n] }'
}

# The role ("master", "slave") of the node on PORT.
k_role() {
	REDISCLI_AUTH=$(cat "$FLASHSALE_REDIS_PASSWORD_FILE") redis-cli --no-auth-warning \
		--user "$FLASHSALE_REDIS_USER" -p "$1" INFO replication 2>/dev/null | tr -d '\r' |
		sed -n 's/^role://p'
}

# k_sweep SALE ITEM OUT: runs the ghost-hold sweeper (flashsale-expire, as
# cron does) until no unit is stranded, bounded: a hold whose order never
# reached the broker (its handler died, or the broker never acknowledged)
# is a ghost once older than the Kafka delivery timeout + 10 s. Sets
# k_swept (ghosts released), then k_figures.
k_sweep() {
	k_swept=0
	k_deadline=$(($(date +%s) + 45))
	k_figures "$1" "$2" "$3"
	while [ "$k_stranded" -gt 0 ] && [ "$(date +%s)" -lt "$k_deadline" ]; do
		sleep 1
		k_json=$( (eval "$("$stack" env handlers)" &&
			FLASHSALE_HOLD_MAX_AGE=14 "$FLASHSALE_BINDIR/flashsale-expire" </dev/null) 2>/dev/null)
		k_swept=$((k_swept + $(json_get "$k_json" ghosts | grep . || echo 0)))
		k_figures "$1" "$2" "$3"
	done
}

# k_sell_rest NAME SALE [BASE]: once the ghost holds are swept their units
# are back: 100 more shoppers buy them (k_left of them get 202, the rest
# 410, none 503), and their answers join $k_out. Then k_figures again.
k_sell_rest() {
	admin token mint --user "$1-rest-$2" --count 100 >"$FLASHSALE_STATE/$1-rest-tokens"
	fire_all "$(purchase_path "$2")" "$FLASHSALE_STATE/$1-rest-tokens" "$FLASHSALE_STATE/$1-rest-out" \
		10 "${3:-}"
	is "$(count_of 202 "$FLASHSALE_STATE/$1-rest-out") $(count_of 410 "$FLASHSALE_STATE/$1-rest-out")" \
	    "$k_left $((100 - k_left))" "100 more shoppers: the $k_left units back in stock sell, the rest 410, none 503"
	cat "$FLASHSALE_STATE/$1-rest-out" >>"$k_out"
	consumer_caught_up 60
}

# k_kill PART: SIGKILL to the PIDs read beforehand with k_pids_of (no
# script in between: the fault lands at this instant).
k_pids_of() { k_pids=$("$stack" pids "$1"); }
k_kill() {
	# shellcheck disable=SC2086 # one word per PID
	kill -KILL $k_pids
}

# k_burst_killing_master NAME SALE MASTER_PORT REPLICA_PORT: 3000 shoppers
# of SALE, 4 requests in flight; after the first 20 purchases the master
# is SIGKILLed and its replica's promotion waited for (k_promoted_ms).
# handlers: the purchase handlers' pids before it. k_burst_answered then
# waits for the burst: requests, won1 (202) and refused1 (503) of k_out.
k_burst_killing_master() {
	# shellcheck disable=SC2034 # read by cluster/*.sh
	handlers=$(cat "$FLASHSALE_STATE"/origin-[ab]/run/flashsale-purchase.pid | tr '\n' ' ')
	k_pids_of "redis-$(k_redis_node "$3")"
	k_burst "$1" "$2" 3000 4
	k_until_purchases 20
	k_kill_master_waiting_promotion "$4"
}
k_burst_answered() {
	wait "$k_burst_pid"
	# shellcheck disable=SC2034 # read by cluster/*.sh
	requests=$(wc -l <"$k_out" | tr -d ' ')
	# shellcheck disable=SC2034 # read by cluster/*.sh
	won1=$(count_of 202 "$k_out")
	# shellcheck disable=SC2034 # read by cluster/*.sh
	refused1=$(count_of 503 "$k_out")
}

# k_kill_master_waiting_promotion REPLICA_PORT: kills the processes k_pids_of
# named (a master) and waits up to 30 s for its replica to be promoted;
# k_promoted_ms says how long that took. In two steps: k_kill_master (the
# instant in k_killed_at), then k_wait_promotion REPLICA_PORT.
k_kill_master_waiting_promotion() {
	k_kill_master
	k_wait_promotion "$1"
}
k_kill_master() {
	k_kill
	k_killed_at=$(k_now_ms)
}
k_wait_promotion() {
	until [ "$(k_role "$1")" = master ] || [ $(($(k_now_ms) - k_killed_at)) -gt 30000 ]; do
		sleep 0.1
	done
	# shellcheck disable=SC2034 # read by cluster/*.sh
	k_promoted_ms=$(($(k_now_ms) - k_killed_at))
}

# k_relay COMMAND...: a command to the peer relay of the cluster topology
# (deploy/relay/flashsale-relay): "cut redis-m1", "heal", "show".
k_relay() {
	"$FLASHSALE_BINDIR/deploy/relay/flashsale-relay" -c "$FLASHSALE_STATE/run/relay.sock" "$@"
}

# The cluster_state ("ok", "fail") the node on PORT believes in.
k_cluster_state() {
	REDISCLI_AUTH=$(cat "$FLASHSALE_REDIS_PASSWORD_FILE") redis-cli --no-auth-warning \
		--user "$FLASHSALE_REDIS_USER" -p "$1" CLUSTER INFO 2>/dev/null | tr -d '\r' |
		sed -n 's/^cluster_state://p'
}

# k_holds PORT SALE: the order ids the node on PORT holds for SALE (one
# place: its hash tag is the sale's), one a line.
k_holds() {
	REDISCLI_AUTH=$(cat "$FLASHSALE_REDIS_PASSWORD_FILE") redis-cli --no-auth-warning \
		--user "$FLASHSALE_REDIS_USER" -p "$1" HKEYS "fs:{$2}:orders" 2>/dev/null | tr -d '\r'
}
