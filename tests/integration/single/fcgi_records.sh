# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (stack)
# Hostile FastCGI records sent straight to the handlers' own sockets (what
# anything that can open them could send; nginx never does): a name-value
# pair whose declared lengths sum past INT_MAX, which aborted a libfcgi
# process (issue 28, finding 8), and a management record of an unknown
# type, on which libfcgi leaked. For a worker-thread handler and for the
# event-loop one: the connection is closed, the unknown type is answered
# FCGI_UNKNOWN_TYPE, every process of the handler is still alive (not even
# a zombie), and the handler answers the next request through nginx.
# Then peers that send half a record and wait (below). Self-contained:
# the stack's environment and tests/integration/lib.sh only.

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

# Half a record and silence (issue 36, item 3): a peer of a handler's
# socket that sends half a record and waits no longer pins a worker. With
# FLASHSALE_FCGI_READ_TIMEOUT_MS at 1.5 s, two such peers of the order
# handler (two processes of one thread each: both workers) and one of the
# purchase handler's event loop are closed after the read timeout (the
# workers look every 500 ms), and meanwhile the handlers answer through
# nginx. Then, with a read timeout of a minute, two such peers do hold
# both order workers, and SIGTERM still ends both processes within the
# stop's bound (FS_FCGI_STOP_GRACE_MS + a wake: 1.5 s; 3 s allowed here):
# before, a stop waited for the rest of the record forever.
fr_abuse=$FLASHSALE_BINDIR/tests/load/flashsale-abuse
FLASHSALE_FCGI_READ_TIMEOUT_MS=1500 "$stack" restart handlers >/dev/null
fr_order=$FLASHSALE_STATE/run/flashsale-order.sock
fr_purchase=$FLASHSALE_STATE/run/flashsale-purchase.sock
for fr_i in 1 2; do
	"$fr_abuse" fcgi-half "$fr_order" 20 >"$FLASHSALE_STATE/fr-half-$fr_i.out" &
done
"$fr_abuse" fcgi-half "$fr_purchase" 20 >"$FLASHSALE_STATE/fr-half-3.out" &
is "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$FLASHSALE_ORIGIN_URL/healthz/flashsale-purchase")" "200" \
    "flashsale-purchase: answers while a peer holds half a record"
is "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$FLASHSALE_ORIGIN_URL/healthz/flashsale-order")" "200" \
    "flashsale-order: answers while two peers hold half a record each (once the read timeout frees a worker)"
wait # the three peers (each bounded: 20 s)
for fr_i in 1 2 3; do
	fr_out=$(cat "$FLASHSALE_STATE/fr-half-$fr_i.out")
	fr_ms=${fr_out#fcgi-half: closed after }
	fr_ms=${fr_ms% ms}
	case $fr_ms in
	'' | *[!0-9]*) not_ok "half-record peer $fr_i is closed by the handler" "$fr_out" ;;
	*) if [ "$fr_ms" -ge 1400 ] && [ "$fr_ms" -le 4000 ]; then
		ok "half-record peer $fr_i is closed after the 1.5 s read timeout ($fr_ms ms)"
	else
		not_ok "half-record peer $fr_i is closed after the 1.5 s read timeout ($fr_ms ms)"
	fi ;;
	esac
done

FLASHSALE_FCGI_READ_TIMEOUT_MS=60000 "$stack" restart handlers >/dev/null
for fr_i in 1 2; do
	"$fr_abuse" fcgi-half "$fr_order" 20 >"$FLASHSALE_STATE/fr-half-$fr_i.out" &
done
# Both workers hold a peer: a request through nginx waits (what the stop
# must not). The peers start in the background: asked until they hold both
# (a loaded machine started them after the first question once).
fr_held() {
	[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$FLASHSALE_ORIGIN_URL/healthz/flashsale-order")" = "000" ]
}
check "flashsale-order: two half-record peers hold both workers under a one-minute read timeout" \
    poll_until 0.1 10 fr_held
fr_pidfile=$FLASHSALE_STATE/run/flashsale-order.pid
fr_pids=$(cat "$fr_pidfile")
fr_t0=$(date +%s%N)
# shellcheck disable=SC2086 # one word per PID
kill -TERM $fr_pids
fr_n=0
while [ "$(fr_alive "$fr_pidfile")" -gt 0 ] && [ $fr_n -lt 200 ]; do
	fr_n=$((fr_n + 1))
	sleep 0.05
done
fr_ms=$(( ($(date +%s%N) - fr_t0) / 1000000 ))
if [ "$(fr_alive "$fr_pidfile")" -eq 0 ] && [ "$fr_ms" -le 3000 ]; then
	ok "SIGTERM ends both order processes despite the stuck peers ($fr_ms ms; bound 1.5 s)"
else
	not_ok "SIGTERM ends both order processes despite the stuck peers ($fr_ms ms; bound 1.5 s)"
	# shellcheck disable=SC2086 # one word per PID
	kill -KILL $fr_pids 2>/dev/null
fi
wait # the two peers (each bounded: 20 s)
for fr_i in 1 2; do
	case $(cat "$FLASHSALE_STATE/fr-half-$fr_i.out") in
	"fcgi-half: closed after"*) ok "the stopping handler closed half-record peer $fr_i" ;;
	*) not_ok "the stopping handler closed half-record peer $fr_i" "$(cat "$FLASHSALE_STATE/fr-half-$fr_i.out")" ;;
	esac
done
"$stack" restart handlers >/dev/null
is "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$FLASHSALE_ORIGIN_URL/healthz/flashsale-order")" "200" \
    "flashsale-order: serves again after the restart"
