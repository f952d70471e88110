# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The demo sign-in signs with a demo-only key (kid "demo"); the purchase and
# order endpoints accept such tokens only while FLASHSALE_DEMO_SIGNIN is 1,
# so turning the flag off ends every demo token at once.

FLASHSALE_DEMO_SIGNIN=1 "$stack" restart handlers >/dev/null 2>&1
ans=$(curl -s -X POST --data-binary '{"userId":"demo-key-shopper"}' "$FLASHSALE_ORIGIN_URL/api/flash-sales/signin")
dk_tok=$(json_get "$ans" token)
dk_head=$(printf '%s' "${dk_tok%%.*}==" | tr '_-' '/+' | base64 -d 2>/dev/null)
is "$dk_head" '{"alg":"EdDSA","typ":"JWT","kid":"demo"}' "a demo token names the demo key"
set -- $(new_sale -5 5)
dk_path=$(purchase_path "$1")
ans=$(http POST "$dk_path" "$dk_tok")
is "${ans%% *}" "202" "with the flag on the demo token buys"
dk_order=$(json_get "${ans#* }" orderId)
ans=$(http GET "/api/flash-sales/orders/$dk_order" "$dk_tok")
is "${ans%% *}" "200" "and reads its order"

"$stack" restart handlers >/dev/null 2>&1
set -- $(new_sale -5 5)
dk_path=$(purchase_path "$1")
ans=$(http POST "$dk_path" "$dk_tok")
is "${ans%% *} $(json_get "${ans#* }" error)" "401 UNAUTHENTICATED" "with the flag off the demo token is refused"
ans=$(http GET "/api/flash-sales/orders/$dk_order" "$dk_tok")
is "${ans%% *}" "401" "also for its order"
ans=$(http POST /api/flash-sales/signin)
is "${ans%% *}" "404" "and the sign-in is gone"
ans=$(http POST "$dk_path" "$(admin token mint --user demo-key-real)")
is "${ans%% *}" "202" "production tokens buy as before"
