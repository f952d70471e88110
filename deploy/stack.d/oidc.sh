# shellcheck shell=sh
# shellcheck disable=SC2154 # here and repo are deploy/stack's
# deploy/stack's optional parts for shoppers signed in by an OpenID
# provider (sourced by deploy/stack): "oidc", the test suite's provider
# (oidc-provider under Node, tests/browser/oidc-provider.mjs), and
# "jwks", a loop that keeps the handlers' JWK Set current from the
# provider's discovery document with `flashsale-admin jwks fetch`.
#
# Started by `deploy/stack up --oidc` (or FLASHSALE_OIDC=1), or one by one
# with `deploy/stack start oidc` and `start jwks` (then restart the
# handlers); `stop` of either ends the sign-in: the page's /signin.json
# goes, and the handlers restarted after it trust the stack's keys only.
# While it is on ($STATE/oidc/on):
#   - the handlers' FLASHSALE_JWT_ISSUER is the provider's issuer and
#     FLASHSALE_JWT_AUDIENCE the shop's API ($OIDC_AUDIENCE), for the
#     provider's tokens and the stack's own alike (flashsale-admin token
#     mint and the demo sign-in put them in theirs);
#   - FLASHSALE_JWKS_FILE holds the stack's own keys (write_jwks) and the
#     provider's, merged by refresh_jwks after every fetch;
#   - the page reads $STATE/site/signin.json (nginx: /signin.json).
# Ports: the provider base+20, its admin port (rotation, for the tests)
# base+21, both on 127.0.0.1. FLASHSALE_JWKS_REFRESH: seconds between two
# fetches (300). FLASHSALE_OIDC_TOKEN_TTL: the provider's access tokens'
# lifetime in seconds (600).

PORT_OIDC=$((BASE + 20))
PORT_OIDC_ADMIN=$((BASE + 21))
OIDC_DIR=$STATE/oidc
OIDC_ISSUER=http://127.0.0.1:$PORT_OIDC
OIDC_CLIENT_ID=flashsale-shop
# The shop's API: the resource the provider's access tokens are for (RFC 8707).
OIDC_AUDIENCE=http://127.0.0.1:$PORT_EDGE/api/flash-sales
OIDC_SCOPE="openid purchase"
# The provider's keys as last fetched; the stack's own keys beside them.
OIDC_PROVIDER_JWKS=$OIDC_DIR/provider-jwks.json
OWN_JWKS_FILE=$STATE/keys/jwks-own.json
JWKS_REFRESH=${FLASHSALE_JWKS_REFRESH:-300}
OIDC_TOKEN_TTL=${FLASHSALE_OIDC_TOKEN_TTL:-600}
OIDC_SCRIPT=$repo/tests/browser/oidc-provider.mjs
OPTIONAL_PARTS="$OPTIONAL_PARTS oidc jwks"

oidc_on() {
	[ -f "$OIDC_DIR/on" ]
}

# The lines env_lines adds: the provider's while the sign-in is on, else
# empty ones, so that a shell that exported the provider's before does not
# hand them on to the handlers it restarts.
oidc_env_lines() {
	if ! oidc_on; then
		printf 'FLASHSALE_JWT_ISSUER=\nFLASHSALE_JWT_AUDIENCE=\nFLASHSALE_OIDC_ISSUER=\nFLASHSALE_OIDC_ADMIN_URL=\n'
		return 0
	fi
	printf 'FLASHSALE_JWT_ISSUER=%s\nFLASHSALE_JWT_AUDIENCE=%s\nFLASHSALE_OIDC_ISSUER=%s\nFLASHSALE_OIDC_ADMIN_URL=%s\n' \
		"$OIDC_ISSUER" "$OIDC_AUDIENCE" "$OIDC_ISSUER" "http://127.0.0.1:$PORT_OIDC_ADMIN"
}

# Turns the sign-in on: the marker, and the page's configuration.
oidc_enable() {
	(umask 077 && mkdir -p "$OIDC_DIR")
	mkdir -p "$STATE/site"
	chmod 755 "$STATE/site"
	printf '{"issuer":"%s","clientId":"%s","scope":"%s","resource":"%s"}\n' \
		"$OIDC_ISSUER" "$OIDC_CLIENT_ID" "$OIDC_SCOPE" "$OIDC_AUDIENCE" >"$STATE/site/signin.json.new"
	mv -f "$STATE/site/signin.json.new" "$STATE/site/signin.json"
	: >"$OIDC_DIR/on"
}

# Turns it off: the page offers the demo sign-in alone, the handlers
# restarted after this trust the stack's keys only.
oidc_disable() {
	rm -f "$OIDC_DIR/on" "$STATE/site/signin.json" "$OIDC_PROVIDER_JWKS"
	merge_jwks
}

# FLASHSALE_JWKS_FILE: the stack's own keys, and the provider's while the
# sign-in is on, by a rename that running handlers never see half done.
merge_jwks() {
	[ -f "$OWN_JWKS_FILE" ] || return 0
	if oidc_on && [ -f "$OIDC_PROVIDER_JWKS" ]; then
		(umask 077 && jq -c -s '{keys: [.[].keys[]]}' "$OWN_JWKS_FILE" "$OIDC_PROVIDER_JWKS" \
			>"$JWKS_FILE.merge") || die "cannot merge $OIDC_PROVIDER_JWKS into $JWKS_FILE"
	else
		cp "$OWN_JWKS_FILE" "$JWKS_FILE.merge"
	fi
	mv -f "$JWKS_FILE.merge" "$JWKS_FILE"
}

# One fetch of the provider's keys, then the merge; a failed fetch keeps
# the keys before it (flashsale-admin says why on stderr).
refresh_jwks() {
	export_env admin
	if "$BINDIR/flashsale-admin" jwks fetch "$OIDC_ISSUER" --out "$OIDC_PROVIDER_JWKS"; then
		merge_jwks
		return 0
	fi
	warn "jwks fetch from $OIDC_ISSUER failed; the keys before it stay"
	return 1
}

# The loop of the part jwks (deploy/stack refresh-jwks --every N); its
# sleep ends with it, so that stopping it leaves nothing behind.
refresh_jwks_every() {
	jwks_sleep=
	trap 'kill $jwks_sleep 2>/dev/null; exit 0' TERM INT
	while :; do
		refresh_jwks || true
		sleep "$1" &
		jwks_sleep=$!
		wait "$jwks_sleep" || true
	done
}

start_oidc() {
	if [ -n "$(part_pids oidc)" ]; then
		say oidc "already running (pid $(cat "$RUN/oidc.pid"))"
		return 0
	fi
	if ! command -v node >/dev/null 2>&1 ||
		[ ! -f "$repo/tests/browser/node_modules/oidc-provider/package.json" ]; then
		die "oidc: node and tests/browser/node_modules/oidc-provider are needed; run deploy/install-deps"
	fi
	oidc_enable
	ensure_secret oidc-cookie.key
	OIDC_LISTEN=127.0.0.1:$PORT_OIDC OIDC_ADMIN_LISTEN=127.0.0.1:$PORT_OIDC_ADMIN \
		OIDC_ISSUER=$OIDC_ISSUER OIDC_CLIENT_ID=$OIDC_CLIENT_ID OIDC_AUDIENCE=$OIDC_AUDIENCE \
		OIDC_REDIRECT_URIS="http://127.0.0.1:$PORT_EDGE/ http://$ORIGIN_HOST:$PORT_ORIGIN/" \
		OIDC_KEYS_FILE=$OIDC_DIR/keys.json OIDC_COOKIE_KEY_FILE=$SECRETS/oidc-cookie.key \
		OIDC_ACCESS_TOKEN_TTL=$OIDC_TOKEN_TTL \
		spawn "$RUN/oidc.pid" "$LOG/oidc-provider.log" node "$OIDC_SCRIPT"
	wait_for 20 ready_oidc || die "the OpenID provider does not answer; see $LOG/oidc-provider.log"
	say oidc "up (pid $(cat "$RUN/oidc.pid"), issuer $OIDC_ISSUER, admin 127.0.0.1:$PORT_OIDC_ADMIN)"
}

ready_oidc() {
	[ -n "$(part_pids oidc)" ] &&
		[ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "$OIDC_ISSUER/.well-known/openid-configuration")" = 200 ]
}

stop_oidc() {
	stop_pidfile oidc "$RUN/oidc.pid" 5
	oidc_disable
}

status_oidc() {
	if ! oidc_on && [ ! -f "$RUN/oidc.pid" ]; then
		say oidc "off (deploy/stack start oidc, or up --oidc)"
		return 0
	fi
	status_pidfile oidc ready_oidc
}

# A first fetch before it returns: the handlers started next find the
# provider's keys in their file.
start_jwks() {
	if [ -n "$(part_pids jwks)" ]; then
		say jwks "already running (pid $(cat "$RUN/jwks.pid"))"
		return 0
	fi
	oidc_on || die "jwks: the sign-in is off (deploy/stack start oidc first)"
	case $JWKS_REFRESH in
	'' | *[!0-9]* | 0) die "FLASHSALE_JWKS_REFRESH must be a number of seconds" ;;
	esac
	ensure_keys
	refresh_jwks || die "the first jwks fetch from $OIDC_ISSUER failed"
	spawn "$RUN/jwks.pid" "$LOG/jwks.log" "$here/stack" refresh-jwks --every "$JWKS_REFRESH"
	say jwks "up (pid $(cat "$RUN/jwks.pid"), every ${JWKS_REFRESH}s into $JWKS_FILE)"
}

stop_jwks() {
	stop_pidfile jwks "$RUN/jwks.pid" 5
}

status_jwks() {
	if [ ! -f "$RUN/jwks.pid" ]; then
		say jwks "off"
		return 0
	fi
	status_pidfile jwks true
}
