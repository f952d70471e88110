# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The edge's probe of the origins is something a busy origin passes
# (issue 36.6). Under a full-scale burst the purchase handler's line is
# longer than a probe's timeout; when the cluster's Varnish probed /readyz
# (a FastCGI round trip to that handler) it marked both origins sick and
# answered 1,256 requests of a waiting-room rehearsal 503 with two origins
# up. Here both origins' purchase handlers stop answering for three seconds
# (SIGSTOP: a line of any length, two probe windows long) while their nginx
# and every other handler answer: the edge must keep both origins healthy
# and every request it passes to them must be answered. Then both origins
# are marked sick while they answer: the edge must still pass requests to
# them (deploy/varnish.vcl, origins_any). A host that stops answering at
# all is taken out (cluster/origin.sh). Self-contained:
# sources its helpers, sets its own names.

. "$top_srcdir/tests/integration/cluster_lib.sh"

pb_pids=$(cat "$FLASHSALE_STATE"/origin-a/run/flashsale-purchase.pid \
	"$FLASHSALE_STATE"/origin-b/run/flashsale-purchase.pid | tr '\n' ' ')
# The handlers run on, whatever happens to this file.
# shellcheck disable=SC2086 # one word per PID
pb_cont() { kill -CONT $pb_pids 2>/dev/null; }
trap pb_cont EXIT

is "$(k_backend origin_a) $(k_backend origin_b)" "healthy healthy" "the edge sees both origins healthy"
# shellcheck disable=SC2086 # one word per PID
set -- $pb_pids
if [ $# -ge 2 ]; then ok "the purchase handlers of both origins: $# processes"; else
	not_ok "the purchase handlers of both origins" "pid files name: $pb_pids"; fi

# shellcheck disable=SC2086 # one word per PID
kill -STOP $pb_pids
# The handlers are behind: a readiness request through an origin's nginx
# waits (1 s at most here) instead of answering.
ready=$(curl -s -o /dev/null -w '%{http_code}' -m 1 "http://127.0.0.2:$((FLASHSALE_PORT_BASE + 1))/readyz")
is "$ready" "000" "origin-a's /readyz waits on its stopped purchase handler"

# Three seconds, twice the probe's window (three probes 500 ms apart, each
# waiting 1 s): every 100 ms the backends' health and one request the edge
# passes to an origin (GET /api/time: Varnish passes it, the origin's
# nginx answers it).
pb_sick=0
pb_bad=""
pb_n=0
pb_from=$(k_now_ms)
while [ $(($(k_now_ms) - pb_from)) -lt 3000 ]; do
	h="$(k_backend origin_a) $(k_backend origin_b)"
	[ "$h" = "healthy healthy" ] || pb_sick=$((pb_sick + 1))
	st=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$FLASHSALE_EDGE_URL/api/time")
	pb_n=$((pb_n + 1))
	[ "$st" = 200 ] || pb_bad="$pb_bad $st"
	sleep 0.1
done
pb_cont
is "$pb_sick" "0" "both origins stay healthy at the edge while their purchase handlers are behind ($pb_n readings over 3 s)"
is "${pb_bad:-none}" "none" "every one of $pb_n requests through the edge answered 200"

# The handlers answer again once they run.
deadline=$(($(date +%s) + 10))
until [ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.2:$((FLASHSALE_PORT_BASE + 1))/readyz")" = 200 ] ||
	[ "$(date +%s)" -ge "$deadline" ]; do
	sleep 0.1
done
is "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.2:$((FLASHSALE_PORT_BASE + 1))/readyz")" "200" \
	"origin-a ready again once its purchase handler runs"

# The probe's verdict steers requests between the origins; it never makes
# the edge answer 503 by itself while an origin would answer. Even
# /healthz can miss its second on a machine loaded enough (one probe of a
# full-scale rehearsal at load 90 did; two in a row make an origin sick,
# and both origins share the machine's delays). Both origins are marked
# sick by hand, standing in for such a verdict, while both answer: every
# request through the edge must still reach one and be answered.
pb_health() {
	varnishadm -n "$FLASHSALE_STATE/varnish" backend.set_health "$1" "$2" >/dev/null
}
trap 'pb_cont; pb_health "*.origin_a" auto; pb_health "*.origin_b" auto' EXIT
if pb_health "*.origin_a" sick && pb_health "*.origin_b" sick; then
	ok "both origins marked sick at the edge"
else
	not_ok "both origins marked sick at the edge" "varnishadm backend.set_health failed"
fi
diag "$(varnishadm -n "$FLASHSALE_STATE/varnish" backend.list 2>&1 | tr -s ' ' | tr '\n' ';')"
pb_bad=""
for pb_i in 1 2 3 4 5 6 7 8 9 10; do
	st=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$FLASHSALE_EDGE_URL/api/time")
	[ "$st" = 200 ] || pb_bad="$pb_bad $st"
done
is "${pb_bad:-none}" "none" "both origins marked sick: every one of $pb_i requests through the edge answered 200 by an origin"
pb_health "*.origin_a" auto
pb_health "*.origin_b" auto
is "$(k_backend origin_a) $(k_backend origin_b)" "healthy healthy" "the probe's verdict again: both healthy"
trap - EXIT
