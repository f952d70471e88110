# shellcheck shell=sh
# Hostile FastCGI records sent straight to the handlers' own sockets (what
# anything that can open them could send; nginx never does): a name-value
# pair whose declared lengths sum past INT_MAX, which aborted a libfcgi
# process (issue 28, finding 8), and a management record of an unknown
# type, on which libfcgi leaked. For a worker-thread handler and for the
# event-loop one: the connection is closed, the unknown type is answered
# FCGI_UNKNOWN_TYPE, every process of the handler is still alive (not even
# a zombie), and the handler answers the next request through nginx.
# Self-contained: the stack's environment and tests/integration/lib.sh only.

# fr_alive PIDFILE: how many of its processes still run (a dead one that
# nobody reaped is a zombie, which kill -0 would still find).
fr_alive() {
	fr_n=0
	# shellcheck disable=SC2013 # one PID a line
	for fr_p in $(cat "$1"); do
		fr_state=$(awk '{ print $3 }' "/proc/$fr_p/stat" 2>/dev/null)
		case $fr_state in '' | Z | X) ;; *) fr_n=$((fr_n + 1)) ;; esac
	done
	echo "$fr_n"
}

for fr_prog in flashsale-order flashsale-purchase; do
	fr_pids=$FLASHSALE_STATE/run/$fr_prog.pid
	fr_procs=$(wc -w <"$fr_pids" | tr -d ' ')
	is "$("$FLASHSALE_BINDIR/tests/load/flashsale-abuse" fcgi "$FLASHSALE_STATE/run/$fr_prog.sock" 2>&1)" \
	    "fcgi: overflowing pair: connection closed; unknown management record: FCGI_UNKNOWN_TYPE" \
	    "$fr_prog: a pair past INT_MAX closes its connection; an unknown record is answered"
	is "$(fr_alive "$fr_pids")" "$fr_procs" "$fr_prog: all $fr_procs of its processes still run"
	is "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$FLASHSALE_ORIGIN_URL/healthz/$fr_prog")" "200" \
	    "$fr_prog: answers the next request"
done
