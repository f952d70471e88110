# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The shoppers' TLS at the edge (deploy/edge.conf.in, port base+17; the
# first row of docs/SECURITY.md's map of trust, issue 33): a purchase
# through https trusting the stack's authority alone, the names the
# edge's certificate holds and no other, TLS 1.2 and 1.3 only with
# forward-secret ciphers, the key root's alone. Before, nothing listened
# there and every case below failed.

tls_port=$((FLASHSALE_PORT_BASE + 17))
ca=$FLASHSALE_STATE/tls/ca.crt
tls=https://localhost:$tls_port

# tls_curl ARGS...: "STATUS EXIT" of curl over the edge's TLS (STATUS 000
# when no answer came; EXIT is curl's: 35 handshake, 60 certificate).
tls_curl() {
	tc_code=$(curl -s -o "$FLASHSALE_STATE/tls-body" -w '%{http_code}' -m 10 "$@")
	tc_exit=$?
	printf '%s %s' "$tc_code" "$tc_exit"
}

# --- A purchase and its order through https, the certificate checked
# against the stack's authority (and nothing else: --cacert).
set -- $(new_sale -5 1)
sale=$1
path=$(purchase_path "$sale")
t1=$(admin token mint --user "tls1-$sale")
t2=$(admin token mint --user "tls2-$sale")
is "$(tls_curl --cacert "$ca" -X POST -H "Authorization: Bearer $t1" "$tls$path")" "202 0" \
    "https://localhost: a purchase through the edge's TLS, the certificate verified: 202"
oid=$(json_get "$(cat "$FLASHSALE_STATE/tls-body")" orderId)
# Once recorded (the count read before and after the GET raced the consumer).
consumer_caught_up 30 || not_ok "edge TLS: the consumer catches up"
is "$(psql_q "SELECT count(*) FROM orders WHERE id = '$oid'") $(tls_curl --cacert "$ca" \
    -H "Authorization: Bearer $t1" "$tls/api/flash-sales/orders/$oid")" \
    "1 200 0" "its order, recorded, reads back through https (200)"
is "$(tls_curl --cacert "$ca" -X POST -H "Authorization: Bearer $t2" "$tls$path")" "410 0" \
    "a second shopper, one unit: 410 through https"
is "$(tls_curl --cacert "$ca" "https://127.0.0.1:$tls_port/api/flash-sales/sales/$sale")" "200 0" \
    "https://127.0.0.1 (the certificate names the address too): the sale document, 200"

# --- The certificate: the stack's authority, these names, nothing else.
is "$(tls_curl "$tls/api/time")" "000 60" \
    "without the stack's authority (the system's trust store): refused, curl 60"
is "$(tls_curl --cacert "$ca" --resolve "shop.example:$tls_port:127.0.0.1" \
    "https://shop.example:$tls_port/api/time")" "000 60" \
    "a name the certificate does not hold (shop.example): refused, curl 60"
subject=$(openssl s_client -connect "127.0.0.1:$tls_port" -servername localhost </dev/null 2>/dev/null |
	openssl x509 -noout -issuer -ext subjectAltName 2>/dev/null | tr -d '\n' | tr -s ' ')
case $subject in
"issuer=O = flashsale, CN = flashsale stack CA "*"X509v3 Subject Alternative Name: DNS:localhost, IP Address:127.0.0.1")
	ok "the edge's certificate: issued by the stack's authority for localhost and 127.0.0.1" ;;
*) not_ok "the edge's certificate: issued by the stack's authority for localhost and 127.0.0.1" "$subject" ;;
esac

# --- Protocols and ciphers: TLS 1.2 and 1.3 only, forward secret, AEAD.
is "$(tls_curl --cacert "$ca" --tlsv1.3 "$tls/api/time")" "200 0" "TLS 1.3: 200"
is "$(tls_curl --cacert "$ca" --tlsv1.2 --tls-max 1.2 "$tls/api/time")" "200 0" "TLS 1.2: 200"
# The client offers TLS 1.1 alone at security level 0, so that only the
# server can refuse it: the server's alert says so.
for old in tls1 tls1_1; do
	out=$(openssl s_client -connect "127.0.0.1:$tls_port" -"$old" -cipher 'DEFAULT@SECLEVEL=0' </dev/null 2>&1)
	case $out in
	*"alert protocol version"*) ok "-$old offered alone: the edge answers with a protocol_version alert" ;;
	*) not_ok "-$old offered alone: the edge answers with a protocol_version alert" \
		"$(printf '%s\n' "$out" | grep -i -m 3 'alert\|protocol\|error')" ;;
	esac
done
out=$(openssl s_client -connect "127.0.0.1:$tls_port" -tls1_2 -cipher 'ECDHE-ECDSA-AES128-SHA' </dev/null 2>&1)
case $out in
*"alert handshake failure"*) ok "TLS 1.2 with a CBC/SHA-1 suite alone: the edge refuses (handshake_failure alert)" ;;
*) not_ok "TLS 1.2 with a CBC/SHA-1 suite alone: the edge refuses (handshake_failure alert)" \
	"$(printf '%s\n' "$out" | grep -i -m 3 'alert\|cipher\|error')" ;;
esac

# --- The key is root's alone.
is "$(stat -c '%U %a' "$FLASHSALE_STATE/tls-keys" "$FLASHSALE_STATE/tls-keys/edge-public.key" | tr '\n' ' ')" \
    "root 700 root 600 " "the edge's keys: a directory of root's alone (0700), each key 0600"
