# nginx limits requests per shopper (and per client address) and answers
# 429 with the JSON error body; the limits come from the environment.

set -- $(new_sale -5 5)
sale=$1
path=$(purchase_path "$sale")
tok=$(admin token mint --user "rl-$sale")
FLASHSALE_RATE_PER_USER=1r/s FLASHSALE_BURST_PER_USER=2 "$stack" restart nginx >/dev/null
: >"$FLASHSALE_STATE/rl-out"
for i in 1 2 3 4 5 6 7 8; do
	curl -s -D "$FLASHSALE_STATE/rl-hdr" -o "$FLASHSALE_STATE/rl-body" -w '%{http_code}\n' -X POST \
	    -H "Authorization: Bearer $tok" "$FLASHSALE_ORIGIN_URL$path" >>"$FLASHSALE_STATE/rl-out"
done
limited=$(grep -c '^429$' "$FLASHSALE_STATE/rl-out")
if [ "$limited" -ge 4 ]; then ok "one shopper's burst is cut at the limit ($limited of 8 got 429)"; else
	not_ok "one shopper's burst is cut at the limit" "statuses: $(tr '\n' ' ' <"$FLASHSALE_STATE/rl-out")"
fi
is "$(json_get "$(cat "$FLASHSALE_STATE/rl-body")" error)" "RATE_LIMITED" "429 carries RATE_LIMITED"
is "$(tr -d '\r' <"$FLASHSALE_STATE/rl-hdr" | sed -n 's/^Retry-After: //Ip')" "1" "429 carries Retry-After"
is "$(grep -c '^202$' "$FLASHSALE_STATE/rl-out")" "1" "the shopper's first purchase went through"
other=$(admin token mint --user "rl2-$sale")
ans=$(http POST "$path" "$other")
is "${ans%% *}" "202" "another shopper is not limited by the first one"
"$stack" restart nginx >/dev/null
