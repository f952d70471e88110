# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A restock whose message is lost, for single/restock_lost.sh (one origin) and cluster/restock_lost.sh (two
# origin hosts on the cluster), sourced by each after lib.sh. Names start
# with rl_ so that they cannot clash with the other test files.
#
# rl_lost_restock URL DIR [URL DIR]: one origin host per URL (its nginx)
# and DIR (its sold-out marker directory). A sale of one unit per host;
# each host sells its unit, then answers 410 from its marker. Every unit
# goes back through the real lua/release.lua, run by hand with a channel
# nobody listens to (the message lost while every listener's connection
# stays healthy: what a cluster bus link reset does), then its order is
# cancelled (the release finds nothing left, so nothing is published
# either). Redis has the units and no process heard of them: within
# FLASHSALE_SOLDOUT_RECHECK_MS (+ a round trip) every host's marker is gone,
# within nginx's open_file_cache_valid (1 s) more a purchase through each
# host's nginx gets 202, each host counts what it healed, and once the
# units sold again each host answers from its marker again.

rl_recheck_ms=${FLASHSALE_SOLDOUT_RECHECK_MS:-1000}
rl_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# rl_answer URL PATH TOKEN: "STATUS", or "410 nginx" when nginx answered from the marker.
rl_answer() {
	curl -s -o /dev/null -D - -X POST -H "Authorization: Bearer $3" "$1$2" |
		tr -d '\r' | awk 'NR == 1 { code = $2 }
			tolower($0) ~ /^x-flashsale-answered-by: nginx/ { by = " nginx" } END { print code by }'
}

# rl_until URL PATH TOKEN WANT MAX_MS: asks (at least once) until the
# answer is WANT or MAX_MS passed since rl_t0; rl_got is the last answer,
# rl_ms the time since rl_t0.
rl_until() {
	while :; do
		rl_got=$(rl_answer "$1" "$2" "$3")
		if [ "$rl_got" = "$4" ] || [ $(($(rl_now_ms) - rl_t0)) -gt "$5" ]; then
			break
		fi
		sleep 0.02
	done
	rl_ms=$(($(rl_now_ms) - rl_t0))
}

# rl_healed URL: flashsale_soldout_healed_total of that host's processes.
rl_healed() {
	curl -s -m 10 "$1/metrics" |
		awk '$1 == "flashsale_soldout_healed_total" || index($1, "flashsale_soldout_healed_total{") == 1 { n += $2 } END { print n + 0 }'
}

rl_lost_restock() {
	rl_hosts=$(($# / 2))
	set -- $(new_sale -5 "$rl_hosts") "$@"
	rl_sale=$1 rl_item=$2
	shift 2
	rl_path=$(purchase_path "$rl_sale")
	rl_orders=""
	rl_h=0
	while [ $# -ge 2 ]; do
		rl_h=$((rl_h + 1))
		eval "rl_url_$rl_h=\$1 rl_dir_$rl_h=\$2"
		eval "rl_tok_$rl_h=\$(admin token mint --user rl-buyer$rl_h-$rl_sale)"
		eval "rl_ans=\$(http POST \"\$rl_path\" \"\$rl_tok_$rl_h\" \"\$1\")"
		is "${rl_ans%% *}" "202" "host $rl_h sells a unit"
		rl_orders="$rl_orders $rl_h:$(json_get "${rl_ans#* }" orderId)"
		shift 2
	done
	rl_late=$(admin token mint --user "rl-late-$rl_sale")
	for rl_h in $(seq "$rl_hosts"); do
		eval "rl_url=\$rl_url_$rl_h"
		# The last unit may have sold less than a second ago: nginx sees a new
		# marker once its open_file_cache entry (1 s) is looked at again.
		rl_t0=$(rl_now_ms)
		rl_until "$rl_url" "$rl_path" "$rl_late" "410 nginx" 5000
		is "$rl_got" "410 nginx" "sold out: host $rl_h's nginx answers 410 from its marker"
		eval "rl_healed_$rl_h=\$(rl_healed \"\$rl_url\")"
	done
	consumer_caught_up

	# Every unit goes back, its announcement lost.
	for rl_ho in $rl_orders; do
		rl_h=${rl_ho%%:*} rl_oid=${rl_ho#*:}
		rl_got=$(redis EVAL "$(cat "$top_srcdir/lua/release.lua")" 4 \
		    "fs:{$rl_sale}:stock:$rl_item" "fs:{$rl_sale}:holders" "fs:{$rl_sale}:orders" \
		    "fs:{$rl_sale}:unconfirmed" "$rl_oid" "$rl_sale" "$rl_item" "fs:restock-lost")
		is "$rl_got" "1" "release.lua gives order $rl_h's unit back; its message reaches no listener"
		eval "rl_ans=\$(http POST \"/api/flash-sales/orders/\$rl_oid/cancel\" \"\$rl_tok_$rl_h\")"
		is "$(json_get "${rl_ans#* }" status)" "CANCELLED" "order $rl_h is cancelled (nothing more to release)"
	done
	rl_t0=$(rl_now_ms)
	is "$(redis GET "fs:{$rl_sale}:stock:$rl_item")" "$rl_hosts" "Redis has the units; no process heard of them"

	for rl_h in $(seq "$rl_hosts"); do
		eval "rl_dir=\$rl_dir_$rl_h"
		until [ ! -e "$rl_dir/$rl_item" ] || [ $(($(rl_now_ms) - rl_t0)) -gt 10000 ]; do
			sleep 0.02
		done
		rl_ms=$(($(rl_now_ms) - rl_t0))
		if [ ! -e "$rl_dir/$rl_item" ] && [ "$rl_ms" -le $((rl_recheck_ms + 500)) ]; then
			ok "host $rl_h's marker goes within the recheck period (+ slack): $rl_ms ms <= $rl_recheck_ms + 500"
		else
			not_ok "host $rl_h's marker goes within the recheck period (+ slack)" "after $rl_ms ms (10000: never)"
		fi
	done
	for rl_h in $(seq "$rl_hosts"); do
		eval "rl_url=\$rl_url_$rl_h"
		rl_tok=$(admin token mint --user "rl-again$rl_h-$rl_sale")
		rl_until "$rl_url" "$rl_path" "$rl_tok" 202 10000
		is "$rl_got" "202" "a purchase through host $rl_h's nginx gets a unit back"
		if [ "$rl_ms" -le $((rl_recheck_ms + 1000 + 500)) ]; then
			ok "within the recheck period + nginx's marker cache (+ slack): $rl_ms ms <= $rl_recheck_ms + 1500"
		else
			not_ok "within the recheck period + nginx's marker cache (+ slack)" "took $rl_ms ms"
		fi
		eval "rl_was=\$rl_healed_$rl_h"
		rl_now=$(rl_healed "$rl_url")
		if [ "$rl_now" -gt "$rl_was" ]; then
			ok "host $rl_h's recheck healed it (flashsale_soldout_healed_total $rl_was -> $rl_now)"
		else
			not_ok "host $rl_h's recheck healed it" "flashsale_soldout_healed_total stayed $rl_was"
		fi
	done
	for rl_h in $(seq "$rl_hosts"); do
		eval "rl_url=\$rl_url_$rl_h"
		rl_t0=$(rl_now_ms)
		rl_until "$rl_url" "$rl_path" "$rl_late" "410 nginx" 5000
		is "$rl_got" "410 nginx" "sold again: host $rl_h answers from its marker again"
	done
	consumer_caught_up
}
