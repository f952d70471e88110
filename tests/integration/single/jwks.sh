# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Tokens that carry a key id, minted by an independent JWT implementation
# (jose, from npm: tests/browser/mint-token.mjs), against the stack's JWK
# Set file (FLASHSALE_JWKS_FILE, written by deploy/stack from its own keys):
# kid selection, a rotation while the handlers run, an unknown kid (401 and
# one log line naming it), a refused new file, aud without a configured
# audience, nbf, iat, and the demo key's kid; RS256 and ES256 tokens of an
# identity provider's RSA and P-256 keys (issue 34) and the algorithm
# confusions, an unsigned token, a weak RSA key and another curve refused. Self-contained: it uses only
# the suite's environment and lib.sh, and leaves the stack's JWK Set and
# handlers as it found them.

jw_mint_js=$top_srcdir/tests/browser/mint-token.mjs
jw_stack=$top_srcdir/deploy/stack
jw_keys=$FLASHSALE_KEYS_DIR
jw_file=$FLASHSALE_JWKS_FILE
jw_log=$FLASHSALE_STATE/log/flashsale-purchase.log

# jw_mint KEYFILE ALG KID SUB [CLAIMS_JSON]: a token signed by jose.
jw_mint() { node "$jw_mint_js" "$@"; }

# jw_b64 FILE: the file's bytes in base64url without padding.
jw_b64() { basenc --base64url -w0 <"$1" | tr -d =; }

# jw_write [okp|oct|pem KID FILE]...: replaces the JWK Set file (by a
# rename, as an operator should) with these keys; okp takes a public key
# file, pem a PEM private key (RSA or EC) whose public JWK jose writes.
jw_write() {
	jw_body=
	while [ $# -ge 3 ]; do
		if [ "$1" = okp ]; then
			jw_one=$(printf '{"kty":"OKP","crv":"Ed25519","kid":"%s","x":"%s"}' "$2" "$(jw_b64 "$3")")
		elif [ "$1" = pem ]; then
			jw_one=$(node "$jw_mint_js" --jwk "$3" "$2")
		else
			jw_one=$(printf '{"kty":"oct","kid":"%s","k":"%s"}' "$2" "$(jw_b64 "$3")")
		fi
		jw_body=${jw_body:+$jw_body,}$jw_one
		shift 3
	done
	printf '{"keys":[%s]}\n' "$jw_body" >"$jw_file.t70" && mv -f "$jw_file.t70" "$jw_file"
}

# The stack's own keys, as deploy/stack writes them.
jw_stack_keys="okp stack-ed25519 $jw_keys/jwt-ed25519.pub oct stack-hs256 $jw_keys/jwt-hs256.key"

jw_n=0
# jw_buy TOKEN: the status of a purchase with this token.
jw_buy() {
	jw_ans=$(http POST "$jw_path" "$1")
	echo "${jw_ans%% *}"
}

# jw_until_status WANT KEYFILE ALG KID: mints a token for a new shopper and
# buys with it, again and again (bounded: 8 s) until the answer is WANT;
# each process re-reads the file at most once a second. 0 or 1.
jw_until_status() {
	jw_deadline=$(($(date +%s) + 8))
	while :; do
		jw_n=$((jw_n + 1))
		[ "$(jw_buy "$(jw_mint "$2" "$3" "$4" "t70-poll-$jw_n")")" = "$1" ] && return 0
		[ "$(date +%s)" -ge "$jw_deadline" ] && return 1
	done
}

if ! command -v node >/dev/null 2>&1 || ! command -v basenc >/dev/null 2>&1; then
	not_ok "jwks: node and basenc are installed (deploy/install-deps)"
elif [ ! -f "$top_srcdir/tests/browser/node_modules/jose/package.json" ]; then
	# tests/run installs it (deploy/install-deps); a copy made by make dist has none.
	ok "jwks # SKIP jose is not installed in tests/browser (deploy/install-deps)"
elif [ -z "$jw_file" ] || [ ! -f "$jw_file" ]; then
	not_ok "jwks: the stack sets FLASHSALE_JWKS_FILE to its JWK Set" "got: '$jw_file'"
else
	set -- $(new_sale -5 200)
	jw_path=$(purchase_path "$1")
	jw_other=$FLASHSALE_STATE/t70-keys-other
	jw_a=$FLASHSALE_STATE/t70-keys-a
	jw_b=$FLASHSALE_STATE/t70-keys-b
	rm -rf "$jw_other" "$jw_a" "$jw_b"
	{ admin keys generate "$jw_other" >/dev/null && admin keys generate "$jw_a" >/dev/null &&
		admin keys generate "$jw_b" >/dev/null; } || not_ok "jwks: three key pairs generated"

	# The stack's own keys by kid, and tokens without kid as before.
	is "$(jw_buy "$(jw_mint "$jw_keys/jwt-ed25519.key" EdDSA stack-ed25519 t70-ed)")" 202 \
		"jwks: a jose EdDSA token with kid stack-ed25519 buys"
	is "$(jw_buy "$(jw_mint "$jw_keys/jwt-hs256.key" HS256 stack-hs256 t70-hs)")" 202 \
		"jwks: a jose HS256 token with kid stack-hs256 buys"
	is "$(jw_buy "$(jw_mint "$jw_keys/jwt-ed25519.key" EdDSA "" t70-nokid)")" 202 \
		"jwks: a jose token without kid buys as before"
	is "$(jw_buy "$(jw_mint "$jw_other/jwt-ed25519.key" EdDSA stack-ed25519 t70-forged)")" 401 \
		"jwks: another key's signature under the stack's kid is refused"
	is "$(jw_buy "$(jw_mint "$jw_keys/jwt-hs256.key" HS256 stack-ed25519 t70-confused)")" 401 \
		"jwks: HS256 under the Ed25519 key's kid is refused"

	# An unknown kid: 401 and exactly one line naming it, never the token.
	jw_kid=t70-unknown-$$
	jw_tok=$(jw_mint "$jw_keys/jwt-ed25519.key" EdDSA "$jw_kid" t70-unknown)
	jw_ans=$(http POST "$jw_path" "$jw_tok")
	is "${jw_ans%% *} $(json_get "${jw_ans#* }" error)" "401 UNAUTHENTICATED" \
		"jwks: a token of an unknown kid is refused"
	is "$(cat "$FLASHSALE_STATE"/log/*.log | grep -c "unknown kid $jw_kid")" 1 \
		"jwks: exactly one log line names the unknown kid"
	is "$(grep -rlF "${jw_tok##*.}" "$FLASHSALE_STATE/log")" "" "jwks: no log holds that token"

	# A rotation while the handlers run: a new key beside the old one, then
	# the old one removed.
	# shellcheck disable=SC2086 # the stack's key arguments, one word each
	jw_write $jw_stack_keys okp t70-a "$jw_a/jwt-ed25519.pub"
	if jw_until_status 202 "$jw_a/jwt-ed25519.key" EdDSA t70-a; then
		ok "jwks: key t70-a added to the file is used without a restart"
	else
		not_ok "jwks: key t70-a added to the file is used without a restart" "still $jw_ans"
	fi
	jw_old=$(jw_mint "$jw_a/jwt-ed25519.key" EdDSA t70-a t70-old)
	# shellcheck disable=SC2086 # the stack's key arguments, one word each
	jw_write $jw_stack_keys okp t70-a "$jw_a/jwt-ed25519.pub" okp t70-b "$jw_b/jwt-ed25519.pub"
	if jw_until_status 202 "$jw_b/jwt-ed25519.key" EdDSA t70-b; then
		ok "jwks: key t70-b added beside t70-a is used"
	else
		not_ok "jwks: key t70-b added beside t70-a is used" "still $jw_ans"
	fi
	is "$(jw_buy "$jw_old")" 202 "jwks: a token of t70-a minted before the rotation still buys"
	# shellcheck disable=SC2086 # the stack's key arguments, one word each
	jw_write $jw_stack_keys okp t70-b "$jw_b/jwt-ed25519.pub"
	if jw_until_status 401 "$jw_a/jwt-ed25519.key" EdDSA t70-a; then
		ok "jwks: once t70-a is removed from the file its tokens are refused"
	else
		not_ok "jwks: once t70-a is removed from the file its tokens are refused" "still $jw_ans"
	fi
	is "$(jw_buy "$(jw_mint "$jw_b/jwt-ed25519.key" EdDSA t70-b t70-b-after)")" 202 \
		"jwks: and t70-b's still buy"

	# A refused new file keeps the keys before it, one line per process.
	jw_refused_before=$(grep -c "JWK Set .* refused" "$jw_log")
	printf '{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"t70-c","x":"short"}]}\n' \
		>"$jw_file.t70" && mv -f "$jw_file.t70" "$jw_file"
	jw_deadline=$(($(date +%s) + 8))
	jw_bad_ok=1
	until [ "$(grep -c "JWK Set .* refused" "$jw_log")" -gt "$jw_refused_before" ]; do
		jw_n=$((jw_n + 1))
		[ "$(jw_buy "$(jw_mint "$jw_b/jwt-ed25519.key" EdDSA t70-b "t70-bad-$jw_n")")" = 202 ] ||
			jw_bad_ok=0
		[ "$(date +%s)" -ge "$jw_deadline" ] && break
	done
	jw_n=$((jw_n + 1))
	is "$jw_bad_ok $(jw_buy "$(jw_mint "$jw_b/jwt-ed25519.key" EdDSA t70-b "t70-bad-$jw_n")")" "1 202" \
		"jwks: a refused new file keeps the keys before it"
	is "$(grep "JWK Set .* refused" "$jw_log" | tail -n +$((jw_refused_before + 1)) |
		sed -n 's/.* pid=\([0-9]*\) .*/\1/p' | sort | uniq -d)" "" \
		"jwks: and no process logs it twice"
	# shellcheck disable=SC2086 # the stack's key arguments, one word each
	jw_write $jw_stack_keys

	# An identity provider's keys (issue 34): RSA and P-256, made here with
	# openssl, tokens signed by jose. A 1024-bit RSA key and a P-384 key in
	# the same file are refused alone; the others load.
	jw_pk=$FLASHSALE_STATE/t70-pkeys
	rm -rf "$jw_pk" && mkdir -p "$jw_pk"
	jw_genpkey() { openssl genpkey -algorithm "$1" -pkeyopt "$2" -out "$jw_pk/$3.pem" 2>/dev/null; }
	if ! { jw_genpkey RSA rsa_keygen_bits:2048 rsa && jw_genpkey RSA rsa_keygen_bits:2048 rsa-other &&
		jw_genpkey RSA rsa_keygen_bits:1024 rsa-weak && jw_genpkey EC ec_paramgen_curve:P-256 ec &&
		jw_genpkey EC ec_paramgen_curve:P-384 ec384; }; then
		not_ok "jwks: openssl made the RSA and EC keys"
	fi
	jw_weak_before=$(cat "$FLASHSALE_STATE"/log/*.log | grep -c 'key refused, the others stay: key \\"t70-weak\\": an RSA key of 1024 bits')
	# shellcheck disable=SC2086 # the stack's key arguments, one word each
	jw_write $jw_stack_keys pem t70-rs "$jw_pk/rsa.pem" pem t70-es "$jw_pk/ec.pem" \
		pem t70-weak "$jw_pk/rsa-weak.pem" pem t70-p384 "$jw_pk/ec384.pem"
	if jw_until_status 202 "$jw_pk/rsa.pem" RS256 t70-rs; then
		ok "jwks: a jose RS256 token of an RSA key in the file buys (202)"
	else
		not_ok "jwks: a jose RS256 token of an RSA key in the file buys (202)" "still $jw_ans"
	fi
	is "$(jw_buy "$(jw_mint "$jw_pk/ec.pem" ES256 t70-es t70-es256)")" 202 \
		"jwks: a jose ES256 token of a P-256 key in the file buys (202)"
	is "$(jw_buy "$(jw_mint "$jw_pk/rsa-other.pem" RS256 t70-rs t70-rs-forged)")" 401 \
		"jwks: another RSA key's RS256 signature under kid t70-rs is refused"
	is "$(jw_buy "$(jw_mint "$jw_pk/rsa.pem" PS256 t70-rs t70-rs-pss)")" 401 \
		"jwks: PS256 under an RS256 key's kid is refused"
	is "$(jw_buy "$(jw_mint "$jw_pk/ec.pem" ES256 t70-rs t70-es-as-rs)")" 401 \
		"jwks: ES256 under the RSA key's kid is refused"
	# The RS256/HS256 confusion: the RSA key's public bytes as an HMAC secret.
	openssl pkey -in "$jw_pk/rsa.pem" -pubout -outform DER -out "$jw_pk/rsa.der" 2>/dev/null &&
		openssl pkey -in "$jw_pk/rsa.pem" -pubout -out "$jw_pk/rsa.pub.pem" 2>/dev/null &&
		openssl pkey -in "$jw_pk/ec.pem" -pubout -outform DER -out "$jw_pk/ec.der" 2>/dev/null
	is "$(jw_buy "$(jw_mint "$jw_pk/rsa.der" HS256 t70-rs t70-confused-der)") $(jw_buy "$(jw_mint "$jw_pk/rsa.pub.pem" HS256 t70-rs t70-confused-pem)")" "401 401" \
		"jwks: HS256 under the RSA key's kid, HMAC'd with its public key (DER, PEM), is refused"
	is "$(jw_buy "$(jw_mint "$jw_pk/ec.der" HS256 t70-es t70-confused-ec)")" 401 \
		"jwks: HS256 under the P-256 key's kid, HMAC'd with its public key, is refused"
	# alg none: an unsigned token naming the RSA key, and one naming no key.
	jw_claims=$(printf '{"sub":"t70-none","exp":%s}' $(($(date +%s) + 600)) | basenc --base64url -w0 | tr -d =)
	jw_none_kid=$(printf '{"alg":"none","kid":"t70-rs"}' | basenc --base64url -w0 | tr -d =)
	jw_none=$(printf '{"alg":"none"}' | basenc --base64url -w0 | tr -d =)
	is "$(jw_buy "$jw_none_kid.$jw_claims.") $(jw_buy "$jw_none.$jw_claims.")" "401 401" \
		"jwks: alg none is refused, with the RSA key's kid or without a kid"
	# The weak key: jose will not sign with it, openssl does (PKCS#1 v1.5).
	jw_in=$(printf '{"alg":"RS256","typ":"JWT","kid":"t70-weak"}' | basenc --base64url -w0 | tr -d =).$jw_claims
	jw_sig=$(printf '%s' "$jw_in" | openssl dgst -sha256 -sign "$jw_pk/rsa-weak.pem" | basenc --base64url -w0 | tr -d =)
	is "$(jw_buy "$jw_in.$jw_sig")" 401 "jwks: an RS256 token of the 1024-bit RSA key is refused"
	is "$(($(cat "$FLASHSALE_STATE"/log/*.log | grep -c 'key refused, the others stay: key \\"t70-weak\\": an RSA key of 1024 bits') > jw_weak_before))" 1 \
		"jwks: and a log line says the 1024-bit key was refused at load, and why"
	is "$(jw_buy "$(jw_mint "$jw_pk/ec384.pem" ES384 t70-p384 t70-p384)")" 401 \
		"jwks: a token of a P-384 key (a curve not supported) is refused"
	# A rotation of provider keys: a second P-256 key, then the RSA key gone.
	jw_genpkey EC ec_paramgen_curve:P-256 ec2
	jw_rs_old=$(jw_mint "$jw_pk/rsa.pem" RS256 t70-rs t70-rs-old)
	# shellcheck disable=SC2086 # the stack's key arguments, one word each
	jw_write $jw_stack_keys pem t70-es "$jw_pk/ec.pem" pem t70-es2 "$jw_pk/ec2.pem"
	if jw_until_status 202 "$jw_pk/ec2.pem" ES256 t70-es2; then
		ok "jwks: a second P-256 key added to the file is used without a restart"
	else
		not_ok "jwks: a second P-256 key added to the file is used without a restart" "still $jw_ans"
	fi
	is "$(jw_buy "$jw_rs_old") $(jw_buy "$(jw_mint "$jw_pk/ec.pem" ES256 t70-es t70-es-after)")" "401 202" \
		"jwks: once the RSA key is removed its token is refused; the first P-256 key's still buy"
	# shellcheck disable=SC2086 # the stack's key arguments, one word each
	jw_write $jw_stack_keys
	rm -rf "$jw_pk"

	# Claims: aud without a configured audience, nbf, iat.
	jw_ed() { jw_mint "$jw_keys/jwt-ed25519.key" EdDSA stack-ed25519 "$@"; }
	jw_now=$(date +%s)
	is "$(jw_buy "$(jw_ed t70-aud '{"aud":"flashsale"}')")" 401 \
		"jwks: a token naming an audience is refused where none is configured"
	is "$(jw_buy "$(jw_ed t70-nbf-future "{\"nbf\":$((jw_now + 300))}")")" 401 \
		"jwks: nbf 5 minutes ahead is refused"
	is "$(jw_buy "$(jw_ed t70-nbf-past "{\"nbf\":$((jw_now - 10))}")")" 202 \
		"jwks: nbf just past buys"
	is "$(jw_buy "$(jw_ed t70-iat-future "{\"iat\":$((jw_now + 300))}")")" 401 \
		"jwks: iat 5 minutes ahead is refused"
	is "$(jw_buy "$(jw_ed t70-iat-past "{\"iat\":$((jw_now - 300))}")")" 202 \
		"jwks: iat 5 minutes ago buys"

	# The demo key's kid: refused while the demo sign-in is off, accepted
	# while it is on; the JWK Set can never stand in for it.
	jw_demo() { jw_mint "$jw_keys/demo-ed25519.key" EdDSA demo "$1"; }
	is "$(jw_buy "$(jw_demo t70-demo-off)")" 401 "jwks: a jose token of kid demo is refused with the demo off"
	FLASHSALE_DEMO_SIGNIN=1 "$jw_stack" restart handlers >/dev/null 2>&1
	is "$(jw_buy "$(jw_demo t70-demo-on)")" 202 "jwks: and buys with the demo on"
	"$jw_stack" restart handlers >/dev/null 2>&1
	rm -rf "$jw_other" "$jw_a" "$jw_b"
fi
