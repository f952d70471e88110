# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# An old hold is a ghost only when nothing is on its way: while the consumer
# is down (its backlog not empty) the sweep must not fail an accepted order
# however old its hold, and once the consumer is back the order is recorded.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

set -- $(new_sale -5 10)
sale=$1 item=$2
path=$(purchase_path "$sale")
"$stack" stop consumer >/dev/null
tok=$(admin token mint --user "gb-$sale")
ans=$(http POST "$path" "$tok")
is "${ans%% *}" "202" "a purchase while the consumer is down is accepted"
oid=$(json_get "${ans#* }" orderId)
# Make its hold look ten minutes old, far past FLASHSALE_HOLD_MAX_AGE.
redis ZADD "fs:{$sale}:unconfirmed" XX "$(($(p_now_ms) - 600000))" "$oid" >/dev/null
out=$(p_expire)
deferred=$(json_get "$out" deferred)
if [ "$(json_get "$out" ghosts)" = 0 ] && [ "${deferred:-0}" -ge 1 ]; then
	ok "the sweep leaves the old hold alone while the backlog is not empty ($deferred sales deferred)"
else
	not_ok "the sweep leaves the old hold alone while the backlog is not empty" "$out"
fi
is "$(p_count "id = '$oid'") $(p_stock "$sale" "$item")" "0 9" "no FAILED row, the unit still held"
"$stack" start consumer >/dev/null
consumer_caught_up 30 >/dev/null
is "$(p_status "$oid")" "PENDING" "the consumer records the order once it is back"
out=$(p_expire)
is "$(json_get "$out" ghosts) $(json_get "$out" deferred) $(redis ZCARD "fs:{$sale}:unconfirmed")" \
    "0 0 0" "with the backlog empty the sweep runs and finds no ghost"
