# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The link between the edge and the origin hosts (issue 33; the second
# row of docs/SECURITY.md's map of trust): TLS both ways, the edge proven
# by its client certificate, the origin's certificate and name checked by
# the edge, for the purchases the edge's nginx passes and for what goes
# through Varnish (through the edge's nginx on a unix socket). An origin's
# TLS port refuses a client without the edge's certificate (none, another
# authority's, the stack's for another name) and its plain port anybody
# who claims to come through an edge; the edge refuses an impostor on an
# origin's port. Before, the edge spoke plain HTTP to the origins' port
# and every case below failed.

. "$top_srcdir/tests/integration/cluster_lib.sh"
. "$top_srcdir/deploy/stack.d/tls.sh"

tport=$((FLASHSALE_PORT_BASE + 18))
ca=$FLASHSALE_STATE/tls/ca.crt
keys=$FLASHSALE_STATE/tls-keys
elog=$FLASHSALE_STATE/log/nginx-edge-error.log
other=$FLASHSALE_STATE/other-authority
# A certificate authority that is not the stack's, and its certificates
# for the edge's and origin-b's names.
{ tls_ca "$other/ca" && tls_keys_dir "$other/keys" &&
	tls_cert "$other/ca" "$other/keys" edge "DNS:edge.flashsale.internal" &&
	tls_cert "$other/ca" "$other/keys" origin \
		"DNS:origin.flashsale.internal,DNS:origin-b.flashsale.internal,IP:127.0.0.3"; } ||
	not_ok "another certificate authority for the test"

# o_curl HOST ARGS...: "STATUS ERROR" of a GET /api/time to origin-HOST's
# TLS port under its name, its certificate checked against the stack's
# authority (ERROR: the body's error code, or curl's exit status).
o_curl() {
	oc_ip=127.0.0.2
	[ "$1" = b ] && oc_ip=127.0.0.3
	oc_name=origin-$1.flashsale.internal
	shift
	oc_code=$(curl -s -o "$FLASHSALE_STATE/o-body" -w '%{http_code}' -m 10 --cacert "$ca" \
		--resolve "$oc_name:$tport:$oc_ip" "$@" "https://$oc_name:$tport/api/time")
	oc_exit=$?
	if [ "$oc_code" = 200 ]; then
		echo "200 ok"
	elif [ "$oc_exit" != 0 ]; then
		echo "$oc_code curl-$oc_exit"
	else
		echo "$oc_code $(json_get "$(cat "$FLASHSALE_STATE/o-body")" error)"
	fi
}

# --- An origin's TLS port: the edge's certificate only.
is "$(o_curl a --cert "$keys/edge.crt" --key "$keys/edge.key")" "200 ok" \
    "origin-a's TLS port, its name checked, with the edge's client certificate: 200"
is "$(o_curl b --cert "$keys/edge.crt" --key "$keys/edge.key")" "200 ok" \
    "origin-b's likewise: 200"
is "$(o_curl a)" "403 FORBIDDEN" "no client certificate: 403"
is "$(o_curl a --cert "$other/keys/edge.crt" --key "$other/keys/edge.key")" "403 FORBIDDEN" \
    "a certificate named edge from another authority: 403"
is "$(o_curl a --cert "$keys/edge-public.crt" --key "$keys/edge-public.key")" "403 FORBIDDEN" \
    "a certificate of the stack's authority for another name (the shoppers' edge-public): 403"
is "$(o_curl a --cert "$FLASHSALE_STATE/origin-b/tls-keys/origin.crt" \
    --key "$FLASHSALE_STATE/origin-b/tls-keys/origin.key")" "403 FORBIDDEN" \
    "origin-b's own certificate as a client: 403"
out=$(openssl s_client -connect "127.0.0.2:$tport" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' </dev/null 2>&1)
case $out in
*"alert protocol version"*) ok "TLS 1.1 offered alone: origin-a answers with a protocol_version alert" ;;
*) not_ok "TLS 1.1 offered alone: origin-a answers with a protocol_version alert" \
	"$(printf '%s\n' "$out" | grep -i -m 3 'alert\|protocol\|error')" ;;
esac
is "$(curl -s -o /dev/null -w '%{http_code}' -m 5 -H 'X-Forwarded-For: 203.0.113.7' \
    "http://127.0.0.2:$((FLASHSALE_PORT_BASE + 1))/api/time") $(curl -s -o /dev/null -w '%{http_code}' \
    -m 5 "http://127.0.0.2:$((FLASHSALE_PORT_BASE + 1))/api/time")" "403 200" \
    "origin-a's plain port: 403 to a request that says it came through an edge (X-Forwarded-For), 200 to an operator's"
is "$(stat -c '%U:%G %a' "$FLASHSALE_STATE/run/edge-origins")" "root:varnish 750" \
    "Varnish's ways to the origins: unix sockets in a directory of root and Varnish's group only"

# --- Through the edge, plain and https: purchases (the edge's nginx) and
# documents (Varnish) reach the origins, which the plain port would refuse.
set -- $(new_sale -5 2)
sale=$1
path=$(purchase_path "$sale")
t1=$(admin token mint --user "etls1-$sale")
t2=$(admin token mint --user "etls2-$sale")
t3=$(admin token mint --user "etls3-$sale")
is "$(http POST "$path" "$t1" "$FLASHSALE_EDGE_URL" | cut -d' ' -f1) $(curl -s -o /dev/null -w '%{http_code}' \
    --cacert "$ca" -X POST -H "Authorization: Bearer $t2" "https://localhost:$((FLASHSALE_PORT_BASE + 17))$path")" \
    "202 202" "purchases through the edge, plain and https: 202 each"
is "$(http GET "/api/flash-sales/sales/$sale" "" "$FLASHSALE_EDGE_URL" | cut -d' ' -f1) $(http GET \
    "/api/flash-sales/orders/00000000-0000-7000-8000-000000000001" "$t1" "$FLASHSALE_EDGE_URL" | cut -d' ' -f1)" \
    "200 404" "through Varnish: the sale document 200, an order passed to the origin (404: not the shopper's)"
both=0
for o in a b; do
	grep -q "\"GET /api/flash-sales/orders/\|\"GET /api/flash-sales/sales/$sale " \
		"$FLASHSALE_STATE/origin-$o/log/nginx-access.log" && both=$((both + 1))
done
diag "origins that served Varnish's requests: $both of 2"

# --- The edge checks the origin: origin-b stopped, an impostor on its TLS
# port, first with the right names from another authority, then with the
# stack's authority for another name. Everything goes to origin-a, and the
# edge says why it refused origin-b.
"$stack" stop origin-b >/dev/null 2>&1
for impostor in "$other/keys/origin" "$keys/edge-public"; do
	elines=$(wc -l <"$elog")
	openssl s_server -quiet -www -accept "127.0.0.3:$tport" -cert "$impostor.crt" -key "$impostor.key" \
		</dev/null >/dev/null 2>&1 &
	imp_pid=$!
	deadline=$(($(date +%s) + 10))
	until curl -sk -o /dev/null -m 1 "https://127.0.0.3:$tport/" || [ "$(date +%s)" -ge "$deadline" ]; do
		sleep 0.1
	done
	answers=
	i=0
	while [ $i -lt 6 ]; do
		answers="$answers $(http GET /api/time "" "$FLASHSALE_EDGE_URL" | cut -d' ' -f1)"
		answers="$answers $(http POST "$path" "$t3" "$FLASHSALE_EDGE_URL" | cut -d' ' -f1)"
		i=$((i + 1))
		sleep 0.3
	done
	kill "$imp_pid"
	wait "$imp_pid" 2>/dev/null
	case $impostor in
	"$other"/*) what="another authority's certificate" why="upstream SSL certificate verify error" ;;
	*) what="the stack's certificate for localhost" why="upstream SSL certificate does not match" ;;
	esac
	is "$(for a in $answers; do echo "$a"; done | grep -v -x -e 200 -e 202 -e 409 -e 410 | sort | uniq -c | tr -s ' ')" "" \
	    "impostor with $what on origin-b's port: every answer through the edge from origin-a"
	refused=$(tail -n +"$((elines + 1))" "$elog" | grep -F "$why" | grep -c -F "127.0.0.3:$tport")
	if [ "$refused" -gt 0 ]; then
		ok "the edge refused it: \"$why\" ($refused times in its error log)"
	else
		not_ok "the edge refused it: \"$why\"" "$(tail -n 5 "$elog")"
	fi
done
"$stack" start origin-b >/dev/null 2>&1 || not_ok "origin-b starts again"
deadline=$(($(date +%s) + 20))
until [ "$(k_backend origin_b)" = healthy ] || [ "$(date +%s)" -ge "$deadline" ]; do
	sleep 0.2
done
is "$(k_backend origin_a) $(k_backend origin_b)" "healthy healthy" "origin-b back: the edge sees both origins healthy"
