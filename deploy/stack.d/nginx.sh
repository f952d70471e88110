# shellcheck shell=sh
# shellcheck disable=SC2154 # here (deploy/) is deploy/stack's
# deploy/stack's part nginx, the origin and its push server: start, ready, stop, status
# (sourced by deploy/stack).

# The origin's nginx (nginx.conf) and the order status push server beside
# it (nginx-push.conf: nchan in one worker, deploy/push.conf.in): started,
# stopped and checked together as "nginx".

# nginx_of NAME ARG...: runs the nginx of NAME, "nginx" (the origin's) or
# "nginx-push": configuration $CONF/NAME.conf, error log
# $LOG/NAME-error.log (its pid file, set in the template: $RUN/NAME.pid).
nginx_of() {
	n_of=$1
	shift
	nginx -p "$NGINX_PREFIX" -c "$CONF/$n_of.conf" -e "$LOG/$n_of-error.log" "$@"
}

# start_nginx_of NAME TEMPLATE READY WHAT [PREPARE]: unless NAME runs
# already, PREPARE, then TEMPLATE rendered into its configuration, checked,
# started, and READY awaited; WHAT says where it answers.
start_nginx_of() {
	if [ -n "$(part_pids "$1")" ]; then
		say "$1" "already running (pid $(cat "$RUN/$1.pid"))"
		return 0
	fi
	[ -z "${5:-}" ] || "$5"
	mkdir -p "$NGINX_PREFIX/tmp"
	render "$here/$2" "$CONF/$1.conf"
	nginx_of "$1" -t -q || die "nginx configuration $CONF/$1.conf is invalid"
	nginx_of "$1" || die "$1 did not start; see $LOG/$1-error.log"
	wait_for 10 "$3" || die "$1 does not answer; see $LOG/$1-error.log"
	say "$1" "up (pid $(cat "$RUN/$1.pid"), $4)"
}

# nginx makes every unix socket 0666: the publisher's and the subscribers'
# live in a directory that only root may enter. A socket left by an nginx
# that was killed would refuse the bind.
push_sockets() {
	mkdir -p "$RUN/nchan"
	chmod 700 "$RUN/nchan"
	rm -f "$PUB_SOCK" "$RUN/nchan/sub.sock"
}

start_nginx() {
	start_nginx_of nginx-push push.conf.in ready_push "publisher $PUB_SOCK" push_sockets
	start_nginx_of nginx nginx.conf.in ready_nginx "origin :$PORT_ORIGIN" origin_tls
}

# The origin's certificate: none in the single topology, where the edge
# reaches the origin on the host's loopback (stack.d/cluster-origin.sh:
# each origin host's).
origin_tls() {
	:
}

ready_nginx() {
	[ -n "$(part_pids nginx)" ] &&
		[ "$(http_probe GET /api/time)" = 200 ]
}

# The publisher's socket answers (404 for a path that is no channel).
ready_push() {
	[ -n "$(part_pids nginx-push)" ] &&
		[ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 --unix-socket "$PUB_SOCK" \
			http://localhost/)" = 404 ]
}

stop_nginx() {
	stop_pidfile nginx "$RUN/nginx.pid" 10
	stop_pidfile nginx-push "$RUN/nginx-push.pid" 10
}

status_nginx() {
	status_pidfile nginx ready_nginx
	n_rc=$?
	status_pidfile nginx-push ready_push || n_rc=1
	return "$n_rc"
}
