# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The waiting room on the shopper's page, in Debian's Chromium through the
# edge (tests/browser/queue.test.mjs): three shoppers of a one-unit sale
# join before the opening, each page draws its place from the published
# seed and checks it against the commitment, the first buys with its pass,
# the others are told "sold out" and then wait again when the unit comes
# back, a pass lapses, the last buys. The test ranks the shoppers by the
# draw, from the seed read here in PostgreSQL. Screenshots go to
# $FLASHSALE_ARTIFACTS/browser.

browser_dir=$top_srcdir/tests/browser

# The demo sign-in gives the shoppers their tokens (browser.sh does the same).
FLASHSALE_DEMO_SIGNIN=1 "$stack" restart handlers >"$FLASHSALE_STATE/qpage-restart.log" 2>&1 ||
	not_ok "restart the handlers with FLASHSALE_DEMO_SIGNIN=1" "$(cat "$FLASHSALE_STATE/qpage-restart.log")"

# One unit, one pass at a time (admitMultiple 1), passes of 30 s, joining open already.
pass_s=30
cat >"$FLASHSALE_STATE/qpage-sale.json" <<JSON
{"name":"Phòng chờ: Phone X","startsInSeconds":45,"durationSeconds":3600,"paymentWindowSeconds":300,
 "queue":{"preQueueSeconds":120,"passSeconds":$pass_s,"powBits":12,"admitMultiple":1.0},
 "items":[{"name":"Phone X 128 GB","priceMinor":4990000,"currency":"VND","quantity":1}]}
JSON
set -- $(sale_created "$FLASHSALE_STATE/qpage-sale.json")
qsale=$1 qitem=$2
admin sale warm "$qsale" >/dev/null
seed=$(psql_q "SELECT encode(queue_seed, 'hex') FROM sales WHERE id = $qsale")
ans=$(http GET "/api/flash-sales/sales/$qsale/queue" "" "$FLASHSALE_EDGE_URL")
is "${ans%% *} $(json_get "${ans#* }" state)" "200 prequeue" "the status document of the page's sale says joining is open"

if ! command -v node >/dev/null 2>&1 || [ ! -x /usr/bin/chromium ]; then
	not_ok "queue browser test: node and /usr/bin/chromium are installed (deploy/install-deps)"
elif [ ! -f "$browser_dir/node_modules/playwright-core/package.json" ]; then
	ok "queue browser test # SKIP playwright-core is not installed in tests/browser (deploy/install-deps)"
else
	FS_TEST_QUEUE_SALE=$qsale FS_TEST_QUEUE_ITEM=$qitem FS_TEST_QUEUE_SEED=$seed FS_TEST_QUEUE_PASS_S=$pass_s \
	    timeout 300 node "$browser_dir/queue.test.mjs" >"$FLASHSALE_STATE/queue-page.tap" 2>&1
	relay_browser "$FLASHSALE_STATE/queue-page.tap" $?
fi
