# shellcheck shell=sh
# deploy/stack's part the edge, Varnish and the nginx in front of it: start, ready, stop, status
# (sourced by deploy/stack).

# The edge answers on base+0: nginx (deploy/edge.conf.in) passes purchases
# to the origins itself and hands everything else to Varnish
# (deploy/varnish.vcl) on a unix socket that only that nginx reaches. One
# part, "varnish", starts and stops both.
start_varnish() {
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
	start_nginx_of nginx-edge edge.conf.in ready_edge "edge http://127.0.0.1:$PORT_EDGE/"
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
