# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# nginx limits requests per shopper (and per client address) and answers
# 429 with the JSON error body; the limits come from the environment.

set -- $(new_sale -5 5)
sale=$1
path=$(purchase_path "$sale")
tok=$(admin token mint --user "rl-$sale")
FLASHSALE_RATE_PER_USER=1r/s FLASHSALE_BURST_PER_USER=2 "$stack" restart nginx >/dev/null
: >"$FLASHSALE_STATE/rl-out"
# Each answer is kept: on a loaded machine the bucket may refill before the
# last request, so the 429 whose body is checked is the first one.
rl_first=
for i in 1 2 3 4 5 6 7 8; do
	code=$(curl -s -D "$FLASHSALE_STATE/rl-hdr.$i" -o "$FLASHSALE_STATE/rl-body.$i" -w '%{http_code}' -X POST \
	    -H "Authorization: Bearer $tok" "$FLASHSALE_ORIGIN_URL$path")
	echo "$code" >>"$FLASHSALE_STATE/rl-out"
	[ "$code" = 429 ] && [ -z "$rl_first" ] && rl_first=$i
done
limited=$(grep -c '^429$' "$FLASHSALE_STATE/rl-out")
if [ "$limited" -ge 4 ]; then ok "one shopper's burst is cut at the limit ($limited of 8 got 429)"; else
	not_ok "one shopper's burst is cut at the limit" "statuses: $(tr '\n' ' ' <"$FLASHSALE_STATE/rl-out")"
fi
is "$(json_get "$(cat "$FLASHSALE_STATE/rl-body.${rl_first:-none}" 2>/dev/null)" error)" "RATE_LIMITED" \
    "429 carries RATE_LIMITED"
is "$(tr -d '\r' <"$FLASHSALE_STATE/rl-hdr.${rl_first:-none}" 2>/dev/null | sed -n 's/^Retry-After: //Ip')" "1" \
    "429 carries Retry-After"
is "$(grep -c '^202$' "$FLASHSALE_STATE/rl-out")" "1" "the shopper's first purchase went through"

# The same token spelled eight ways (scheme case, spaces) is one shopper: the
# limit keys on the token, not on the header's spelling.
sp_tok=$(admin token mint --user "rl-spell-$sale")
: >"$FLASHSALE_STATE/rl-spell"
for scheme in "Bearer " "bearer " "BEARER " "Bearer  " "bEaReR   " "BeArEr    " "bearer     " "BEARER      "; do
	curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: $scheme$sp_tok" \
	    "$FLASHSALE_ORIGIN_URL$path" >>"$FLASHSALE_STATE/rl-spell"
done
limited=$(grep -c '^429$' "$FLASHSALE_STATE/rl-spell")
if [ "$limited" -ge 4 ]; then ok "eight spellings of one token share one limit ($limited of 8 got 429)"; else
	not_ok "eight spellings of one token share one limit" "statuses: $(tr '\n' ' ' <"$FLASHSALE_STATE/rl-spell")"
fi
is "$(grep -c '^202$' "$FLASHSALE_STATE/rl-spell")" "1" "and bought exactly once"
# Junk is refused by nginx before the limiter: no zone entry, no handler.
fcgi_before=$(grep -c 'upstream=unix:' "$FLASHSALE_STATE/log/nginx-access.log")
: >"$FLASHSALE_STATE/rl-junk"
for junk in "Basic dXNlcjpwYXNz" "Bearer" "Bearer not-a-jwt" "Bearer a.b" "Bearer\ta.b.c" "Bearer a.b.c.d" \
    "Bearer a.b.c!" "bearer$sp_tok" "Token $sp_tok" "Bearer a b.c.d"; do
	curl -s -D "$FLASHSALE_STATE/rl-junk-hdr" -o "$FLASHSALE_STATE/rl-junk-body" -w '%{http_code}\n' -X POST \
	    -H "Authorization: $junk" "$FLASHSALE_ORIGIN_URL$path" >>"$FLASHSALE_STATE/rl-junk"
done
is "$(sort -u "$FLASHSALE_STATE/rl-junk" | tr '\n' ' ')" "401 " "ten junk Authorization values: 401 each"
is "$(json_get "$(cat "$FLASHSALE_STATE/rl-junk-body")" error)" "UNAUTHENTICATED" "401 carries UNAUTHENTICATED"
is "$(tr -d '\r' <"$FLASHSALE_STATE/rl-junk-hdr" | grep -ci '^WWW-Authenticate: Bearer')" "1" \
    "401 carries the Bearer challenge"
is "$(grep -c 'upstream=unix:' "$FLASHSALE_STATE/log/nginx-access.log")" "$fcgi_before" \
    "junk reached no handler"
ans=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer junk" \
    "$FLASHSALE_ORIGIN_URL/api/flash-sales/orders/00000000-0000-7000-8000-000000000000")
is "$ans" "401" "the order endpoints refuse junk the same way"
other=$(admin token mint --user "rl2-$sale")
ans=$(http POST "$path" "$other")
is "${ans%% *}" "202" "another shopper is not limited by the first one"
"$stack" restart nginx >/dev/null
