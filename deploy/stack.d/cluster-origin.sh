# shellcheck shell=sh
# shellcheck disable=SC2034 # use_origin sets the variables of the single topology's parts
# The cluster topology's origin hosts: start, stop, status (their nginx
# and handlers are stack.d/nginx.sh's and handlers.sh's; sourced by
# deploy/stack).

# Makes them act on origin host X (a, b): its address, its nginx and
# handlers, its directories.
use_origin() {
	case $1 in
	a) ORIGIN_HOST=$ORIGIN_A ;;
	b) ORIGIN_HOST=$ORIGIN_B ;;
	*) die "no origin host '$1'" ;;
	esac
	odir=$STATE/origin-$1
	RUN=$odir/run
	CONF=$odir/conf
	LOG=$odir/log
	METRICS_DIR=$odir/metrics
	SOLDOUT_DIR=$odir/soldout
	PUB_SOCK=$RUN/nchan/pub.sock
	NGINX_PREFIX=$odir/nginx
	TLS_KEYS=$odir/tls-keys
	ORIGIN_NAME=origin-$1
}

# The origin host's certificate from the stack's authority (stack.d/tls.sh),
# for its TLS port, where only the edge may speak (its client certificate,
# deploy/nginx.conf.in): the name the edge checks for every origin
# (origin.flashsale.internal, its purchases), the host's own (Varnish's way
# to this host) and its address.
origin_tls() {
	{ tls_keys_dir "$TLS_KEYS" &&
		tls_cert "$TLS_CA" "$TLS_KEYS" origin \
			"DNS:origin.flashsale.internal,DNS:$ORIGIN_NAME.flashsale.internal,IP:$ORIGIN_HOST"; } ||
		die "cannot make the certificate of $ORIGIN_NAME in $TLS_KEYS"
}

# The live PIDs of origin host X: its nginx and push server (the workers
# too: a host that dies takes them along, and an orphaned worker would keep
# the port) and every handler process.
origin_pids() {
	(
		use_origin "$1"
		for master in $(part_pids nginx) $(part_pids nginx-push); do
			echo "$master"
			ps -o pid= --ppid "$master" | tr -d ' '
		done
		handler_list | while read -r prog _; do
			part_pids "$prog"
		done
	)
}

ensure_origin_dirs() {
	mkdir -p "$CONF" "$LOG" "$RUN" "$SOLDOUT_DIR" "$METRICS_DIR"
	chmod 755 "$CONF" "$RUN" "$METRICS_DIR"
	chmod 750 "$LOG"
}

start_origin() {
	use_origin "$1"
	ensure_origin_dirs
	start_handlers
	start_nginx
	ready_handlers
	say "origin-$1" "up (http://$ORIGIN_HOST:$PORT_ORIGIN/, $STATE/origin-$1)"
}

stop_origin() {
	use_origin "$1"
	stop_nginx
	stop_handlers
}

status_origin() {
	use_origin "$1"
	say "origin-$1" "http://$ORIGIN_HOST:$PORT_ORIGIN/"
	so_rc=0
	status_nginx || so_rc=1
	status_handlers || so_rc=1
	return $so_rc
}
