# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Shoppers signed in by a real OpenID provider (issue 34): the stack's
# optional parts "oidc" (oidc-provider under Node) and "jwks" (the JWK Set
# kept current with flashsale-admin jwks fetch) started on the suite's
# stack, the handlers restarted with the provider's issuer and audience;
# then tests/browser/oidc.test.mjs in Chromium through the edge: sign-in
# on the provider's own pages, Buy (202) and the order live, sign-out, an
# ES256 token, and a key rotation while the stack runs (a token of the old
# key accepted until it expires while the file lists the key, 401 once
# the fetch dropped it). Guards the shop's
# sign-in (static/oidc.js), the provider's RS256/ES256 tokens in
# lib/token, and the fetch that keeps the file current. Self-contained:
# the parts are stopped and the handlers restarted without them at the end.

browser_dir=$top_srcdir/tests/browser
oi_refresh=2

# oi_stack ARGS...: deploy/stack with the fetch's short interval; its
# output goes to the state directory, and a failure says so.
oi_stack() {
	FLASHSALE_JWKS_REFRESH=$oi_refresh "$stack" "$@" >>"$FLASHSALE_STATE/oidc-stack.log" 2>&1 ||
		not_ok "deploy/stack $*" "$(tail -n 5 "$FLASHSALE_STATE/oidc-stack.log")"
}

# oi_edge_config: the page's /signin.json through the edge names the
# provider (the edge keeps a 404 for 5 s, and 10 s of grace): 0 or 1.
oi_edge_config() {
	[ "$(json_get "$(curl -s -m 2 "$FLASHSALE_EDGE_URL/signin.json")" issuer)" = "$FLASHSALE_OIDC_ISSUER" ]
}

if ! command -v node >/dev/null 2>&1 || [ ! -x /usr/bin/chromium ]; then
	not_ok "oidc: node and /usr/bin/chromium are installed (deploy/install-deps)"
elif [ ! -f "$browser_dir/node_modules/oidc-provider/package.json" ] ||
	[ ! -f "$browser_dir/node_modules/playwright-core/package.json" ]; then
	# tests/run installs them (deploy/install-deps); a copy made by make dist has none.
	ok "oidc # SKIP oidc-provider or playwright-core is not installed in tests/browser (deploy/install-deps)"
else
	oi_stack start oidc
	oi_stack start jwks
	oi_stack restart handlers
	eval "$("$stack" env)"
	is "$FLASHSALE_JWT_ISSUER $FLASHSALE_JWT_AUDIENCE" \
		"$FLASHSALE_OIDC_ISSUER $FLASHSALE_EDGE_URL/api/flash-sales" \
		"oidc: the handlers' issuer and audience are the provider's and the shop's API"
	is "$(stat -c %a "$FLASHSALE_STATE/oidc/keys.json")" 600 "oidc: the provider's key file is 0600"
	is "$(grep -c '"d"' "$FLASHSALE_JWKS_FILE")" 0 "oidc: the JWK Set file holds no private key"

	# The stack's own tokens carry the issuer and audience too, and buy.
	set -- $(new_sale -5 50)
	oi_path=$(purchase_path "$1")
	ans=$(http POST "$oi_path" "$(admin token mint --user "oi-own-$$")")
	is "${ans%% *}" 202 "oidc: a token of the stack's own key still buys"
	# The page's sale: one item on now.
	set -- $(new_sale -5 5)
	oi_sale=$1 oi_item=$2

	oi_deadline=$(($(date +%s) + 30))
	until oi_edge_config || [ "$(date +%s)" -ge "$oi_deadline" ]; do
		sleep 0.5
	done
	if oi_edge_config; then
		ok "oidc: the edge serves the page's /signin.json naming the provider"
	else
		not_ok "oidc: the edge serves the page's /signin.json naming the provider" \
			"$(curl -s -i -m 2 "$FLASHSALE_EDGE_URL/signin.json" | head -n 12)"
	fi

	FS_TEST_SALE=$oi_sale FS_TEST_ITEM=$oi_item FS_TEST_BUY_PATH=$oi_path FS_TEST_REFRESH_S=$oi_refresh \
		timeout 300 node "$browser_dir/oidc.test.mjs" >"$FLASHSALE_STATE/oidc.tap" 2>&1
	relay_browser "$FLASHSALE_STATE/oidc.tap" $?

	# The provider's private keys (those it signs with now): in no log of the stack.
	jq -r '.keys[] | .d, .p // empty, .q // empty' "$FLASHSALE_STATE/oidc/keys.json" >"$FLASHSALE_STATE/oidc-private"
	# (d, p and q of the RSA key, d of the EC key: four lines at least.)
	oi_private=$(wc -l <"$FLASHSALE_STATE/oidc-private")
	is "$([ "$oi_private" -ge 4 ] && echo read) $(grep -rlFf "$FLASHSALE_STATE/oidc-private" "$FLASHSALE_STATE/log")" \
		"read " "oidc: no log holds the provider's private keys"
	rm -f "$FLASHSALE_STATE/oidc-private"

	# Back as the suite found it: no provider, the handlers on the stack's keys.
	oi_stack stop jwks
	oi_stack stop oidc
	oi_stack restart handlers
	eval "$("$stack" env)"
	is "${FLASHSALE_JWT_ISSUER:-}" "" "oidc: stopped, the handlers have no issuer again"
	ans=$(http POST "$oi_path" "$(admin token mint --user "oi-own-after-$$")")
	is "${ans%% *}" 202 "oidc: and the stack's own tokens buy without one"
fi
