# shellcheck shell=sh
# shellcheck disable=SC2154 # here (deploy/) is deploy/stack's
# deploy/stack's part the edge, Varnish and the nginx in front of it: start, ready, stop, status
# (sourced by deploy/stack).

# The edge answers on base+0, and with TLS on base+17: nginx
# (deploy/edge.conf.in) passes purchases to the origins itself and hands
# everything else to Varnish (deploy/varnish.vcl) on a unix socket that
# only that nginx reaches. One part, "varnish", starts and stops both.
start_varnish() {
	# The edge's nginx first: in the cluster Varnish's backends are its
	# unix sockets, which must be there for Varnish's first probes (until
	# Varnish answers, the edge answers 503 TRY_AGAIN).
	start_nginx_of nginx-edge edge.conf.in ready_edge \
		"edge http://127.0.0.1:$PORT_EDGE/ https://127.0.0.1:$PORT_EDGE_TLS/" edge_tls
	if [ -n "$(part_pids varnish)" ]; then
		say varnish "already running (pid $(cat "$RUN/varnish.pid"))"
	else
		render "$here/varnish.vcl" "$CONF/varnish.vcl"
		rm -f "$RUN/varnish.sock"
		# As root no -j: the manager drops to "varnish", the worker to "vcache".
		# Header lines up to 16k pass, so that nginx (8k) refuses them in JSON.
		varnishd -a "$RUN/varnish.sock,mode=0600" -T 127.0.0.1:0 -f "$CONF/varnish.vcl" \
			-n "$STATE/varnish" -P "$RUN/varnish.pid" -s malloc,64m \
			-p http_req_hdr_len=16k \
			>>"$LOG/varnish.log" 2>&1 || die "varnishd did not start; see $LOG/varnish.log"
		wait_for 20 ready_varnish || die "varnish does not answer; see $LOG/varnish.log"
		say varnish "up (pid $(cat "$RUN/varnish.pid"), $RUN/varnish.sock)"
	fi
}

# The edge's certificates from the stack's authority (stack.d/tls.sh), in
# a directory of root's alone: edge-public for the shoppers' TLS
# (localhost, 127.0.0.1; in production the shop's public certificate),
# and edge, the edge's own identity, the client certificate it shows the
# origin hosts of the cluster, whose nginx admits that name only. In the
# cluster Varnish reaches each origin through this nginx, on a unix socket
# in a directory that only root and Varnish's group enter.
edge_tls() {
	{ tls_keys_dir "$TLS_KEYS" &&
		tls_cert "$TLS_CA" "$TLS_KEYS" edge-public "DNS:localhost,IP:127.0.0.1" &&
		tls_cert "$TLS_CA" "$TLS_KEYS" edge "DNS:edge.flashsale.internal"; } ||
		die "cannot make the edge's certificates in $TLS_KEYS"
	mkdir -p "$RUN/edge-origins"
	chgrp varnish "$RUN/edge-origins"
	chmod 750 "$RUN/edge-origins"
	rm -f "$RUN"/edge-origins/*.sock
}

ready_varnish() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 --unix-socket "$RUN/varnish.sock" \
		http://localhost/)" != 000 ]
}

ready_edge() {
	[ -n "$(part_pids nginx-edge)" ] &&
		[ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$PORT_EDGE/")" != 000 ]
}

# The edge passes a request to an origin and gets its answer (Varnish's
# probe sees an origin healthy).
ready_edge_origin() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$PORT_EDGE/api/time")" = 200 ]
}

stop_varnish() {
	stop_pidfile nginx-edge "$RUN/nginx-edge.pid" 10
	# SIGTERM to the manager stops the worker as well.
	stop_pidfile varnish "$RUN/varnish.pid" 15
}

status_varnish() {
	status_pidfile varnish ready_varnish
	v_rc=$?
	status_pidfile nginx-edge ready_edge || v_rc=1
	return "$v_rc"
}
