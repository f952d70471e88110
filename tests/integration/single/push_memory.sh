# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (stack)
# The push server under a burst larger than its memory (issue 36, item 5:
# nchan ran out of shared memory, refused every status push from then on
# and wrote 2.5 million lines to its log). With FLASHSALE_PUSH_MEMORY=256K
# (the latest status of about 420 orders) and FLASHSALE_PUSH_KEEP=10s,
# 1,000 shoppers buy at once: every purchase is answered 202 and every
# order reaches PostgreSQL; each order's status is published once, and
# those nchan refuses are counted (flashsale_push_messages_total
# {result="refused"}), not logged: the push server's log does not grow,
# the consumer's by a line per batch at most. Once the kept statuses have
# expired, a new order's status is pushed again. How full the memory is
# shows in GET /metrics (flashsale_push_memory_bytes, used and limit: the
# fifth pass's follow-up, nothing said it before a push was refused).

# pm_count RESULT: flashsale_push_messages_total{result="RESULT"}, every process.
pm_count() {
	curl -s -m 10 "$FLASHSALE_ORIGIN_URL/metrics" |
		awk -v r="result=\"$1\"" 'index($1, "flashsale_push_messages_total{") == 1 && index($1, r) > 0 { n += $2 }
			END { print n + 0 }'
}

# pm_gauge NAME [KIND]: the push server's gauge NAME (of kind KIND), or "none".
pm_gauge() {
	curl -s -m 10 "$FLASHSALE_ORIGIN_URL/metrics" |
		awk -v n="$1{" -v k="kind=\"${2:-}\"" 'index($1, n) == 1 && (k == "kind=\"\"" || index($1, k) > 0) { v = $2 }
			END { print (v == "" ? "none" : v) }'
}

pm_dir=$FLASHSALE_STATE/push-memory
mkdir -p "$pm_dir"
FLASHSALE_PUSH_MEMORY=256K FLASHSALE_PUSH_KEEP=10s "$stack" restart nginx >"$pm_dir/restart.log" 2>&1 ||
	not_ok "the push server restarts with 256K of memory" "$(cat "$pm_dir/restart.log")"
pm_log=$FLASHSALE_STATE/log/nginx-push-error.log
pm_clog=$FLASHSALE_STATE/log/flashsale-consumer.log
pm_lines=$(wc -l <"$pm_log")
pm_clines=$(wc -l <"$pm_clog")
pm_sent=$(pm_count sent)
pm_refused=$(pm_count refused)
pm_failed=$(pm_count failed)
is "$(pm_gauge flashsale_push_memory_bytes limit)" 262144 \
    "metrics: the push server's memory limit is FLASHSALE_PUSH_MEMORY (256K)"
pm_used0=$(pm_gauge flashsale_push_memory_bytes used)

set -- $(new_sale -5 1100)
pm_sale=$1
pm_path=$(purchase_path "$pm_sale")
admin token mint --user "pm$pm_sale" --count 1000 >"$pm_dir/tokens"
fire_all "$pm_path" "$pm_dir/tokens" "$pm_dir/out"
is "$(count_of 202 "$pm_dir/out")" 1000 "a burst of 1,000 purchases, more than the push server holds: 202 each"
if consumer_caught_up 90; then
	ok "the consumer records and pushes the burst"
else
	not_ok "the consumer records and pushes the burst"
fi
is "$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $pm_sale")" 1000 "every order is in PostgreSQL"
pm_s=$(($(pm_count sent) - pm_sent))
pm_r=$(($(pm_count refused) - pm_refused))
pm_f=$(($(pm_count failed) - pm_failed))
diag "status pushes: $pm_s sent, $pm_r refused, $pm_f failed"
is "$((pm_s + pm_r)) $pm_f" "1000 0" "each order's status is published once: sent or refused, none lost unanswered"
if [ "$pm_r" -ge 500 ] && [ "$pm_s" -le 500 ]; then
	ok "nchan refuses what does not fit in 256K, and each refusal is counted ($pm_r)"
else
	not_ok "nchan refuses what does not fit in 256K, and each refusal is counted ($pm_r)"
fi
is "$(wc -l <"$pm_log")" "$pm_lines" "the push server's log does not grow with the refusals"
pm_used=$(pm_gauge flashsale_push_memory_bytes used)
pm_stored=$(pm_gauge flashsale_push_stored_messages)
diag "push server memory: $pm_used0 bytes used before the burst, $pm_used after, of 262144; $pm_stored statuses kept"
case $pm_used$pm_stored in
*[!0-9]*) not_ok "metrics: the push server's memory shows nearly full after the burst" "used $pm_used, stored $pm_stored" ;;
*)
	if [ $((pm_used * 10)) -ge $((262144 * 8)) ] && [ "$pm_stored" -ge 100 ]; then
		ok "metrics: the push server's memory shows nearly full after the burst ($pm_used of 262144, $pm_stored kept)"
	else
		not_ok "metrics: the push server's memory shows nearly full after the burst" "used $pm_used, stored $pm_stored"
	fi
	;;
esac
pm_c=$(($(wc -l <"$pm_clog") - pm_clines))
if [ "$pm_c" -le 60 ]; then
	ok "the consumer's log grows by $pm_c lines for $pm_r refusals (a line per batch at most)"
else
	not_ok "the consumer's log grows by $pm_c lines for $pm_r refusals (a line per batch at most)"
fi

# After the burst: once the kept statuses expire (10 s, and nchan's 5 s
# for an empty channel), a new order's status is pushed (bounded: 20 tries,
# 3 s apart).
admin token mint --user "pm-after$pm_sale" --count 20 >"$pm_dir/after"
pm_ok=0
pm_n=0
while [ $pm_ok = 0 ] && [ $pm_n -lt 20 ]; do
	pm_n=$((pm_n + 1))
	sleep 3
	pm_sent=$(pm_count sent)
	ans=$(http POST "$pm_path" "$(sed -n "${pm_n}p" "$pm_dir/after" | cut -d' ' -f2)")
	if [ "${ans%% *}" = 202 ] && consumer_caught_up 30 && [ "$(pm_count sent)" -gt "$pm_sent" ]; then
		pm_ok=1
	fi
done
if [ $pm_ok = 1 ]; then
	ok "after the burst a new order's status is pushed again (try $pm_n, 3 s apart)"
else
	not_ok "after the burst a new order's status is pushed again" "$pm_n tries"
fi
"$stack" restart nginx >/dev/null 2>&1 || not_ok "the push server restarts with its usual memory"
