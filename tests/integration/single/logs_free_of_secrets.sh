# shellcheck shell=sh
# Last, so it sees every log of the suite: no log holds a shopper token, a
# key or the operator's expire token, and the log directory is closed to
# other users (0750).

lg_dir=$FLASHSALE_STATE/log
is "$(stat -c '%a' "$lg_dir")" "750" "the log directory is 0750"
# A JWT: base64url of a JSON header, a dot, base64url of a JSON payload.
lg_jwts=$(grep -rlE 'eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}' "$lg_dir" 2>/dev/null)
is "$lg_jwts" "" "no log holds a token"
# A waiting room's pass or ticket: base64url of "p1|..." ("cDF8") or "t1|..."
# ("dDF8"), a dot, a 43-character tag (docs/QUEUE.md).
lg_passes=$(grep -rlE '[cd]DF8[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{43}' "$lg_dir" 2>/dev/null)
is "$lg_passes" "" "no log holds a waiting room's pass or ticket"
lg_expire=$(cat "$FLASHSALE_STATE/expire.token")
is "$(grep -rlF "$lg_expire" "$lg_dir" 2>/dev/null)" "" "no log holds the expire token"
for lg_key in "$FLASHSALE_STATE"/keys/*; do
	xxd -p -c 256 "$lg_key"
	base64 -w0 "$lg_key" | tr -d '='
	echo
	base64 -w0 "$lg_key" | tr '+/' '-_' | tr -d '='
	echo
done >"$FLASHSALE_STATE/key-forms"
is "$(grep -rlFf "$FLASHSALE_STATE/key-forms" "$lg_dir" 2>/dev/null)" "" \
    "no log holds a key (hex, base64 or base64url)"
