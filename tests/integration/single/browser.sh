# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The shopper's page in a real browser (Debian's Chromium driven by
# playwright-core, tests/browser/shop.test.mjs) through the edge, from the
# countdown to the order paid through the provider simulator, and a
# declined payment that expires. Screenshots go to $FLASHSALE_ARTIFACTS/browser.

browser_dir=$top_srcdir/tests/browser

# The demo sign-in is off by default; the page test needs it on.
ans=$(http POST /api/flash-sales/signin "" "$FLASHSALE_EDGE_URL")
if [ "${FLASHSALE_DEMO_SIGNIN:-0}" != 1 ]; then
	is "${ans%% *} $(json_get "${ans#* }" error)" "404 NOT_FOUND" \
	    "the demo sign-in answers 404 unless FLASHSALE_DEMO_SIGNIN=1"
fi
# Every handler: demo tokens pass only where the flag is on (demo_key.sh).
FLASHSALE_DEMO_SIGNIN=1 "$stack" restart handlers >"$FLASHSALE_STATE/signin-restart.log" 2>&1 ||
	not_ok "restart the handlers with FLASHSALE_DEMO_SIGNIN=1" "$(cat "$FLASHSALE_STATE/signin-restart.log")"

signin() { # BODY: prints "STATUS BODY"
	curl -s -o "$FLASHSALE_STATE/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	    --data-binary "$1" "$FLASHSALE_EDGE_URL/api/flash-sales/signin" >"$FLASHSALE_STATE/status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/status")" "$(cat "$FLASHSALE_STATE/body")"
}
ans=$(signin '{"userId":"page-shopper.1"}')
tok=$(json_get "${ans#* }" token)
if [ "${ans%% *}" = 200 ] && [ "$(json_get "${ans#* }" userId)" = page-shopper.1 ] &&
    [ -n "$(json_get "${ans#* }" expiresAt)" ]; then
	ok "demo sign-in gives a token for the chosen user id"
else
	not_ok "demo sign-in gives a token for the chosen user id" "$ans"
fi
set -- $(new_sale -5 5)
ans=$(http POST "$(purchase_path "$1")" "$tok")
is "${ans%% *}" 202 "the demo token buys"
ans=$(signin '')
case "$(json_get "${ans#* }" userId)" in
shopper-????????????) ok "an empty body signs in a random user id" ;;
*) not_ok "an empty body signs in a random user id" "$ans" ;;
esac
for bad in '{"userId":"has space"}' '{"userId":""}' '{"userId":"quote\"d"}' '{"userId":12}' '[1]' 'not json' \
    "{\"userId\":\"$(head -c 65 /dev/zero | tr '\0' a)\"}"; do
	ans=$(signin "$bad")
	is "${ans%% *} $(json_get "${ans#* }" error)" "400 BAD_REQUEST" "demo sign-in refuses $bad"
done

# A sale that starts in 25 s: two items of one unit each.
window=300
cat >"$FLASHSALE_STATE/browser-sale.json" <<JSON
{"name":"Flash sale: điện thoại & tai nghe","startsInSeconds":25,"durationSeconds":3600,
 "paymentWindowSeconds":$window,
 "items":[{"name":"Phone X 128 GB","priceMinor":4990000,"currency":"VND","quantity":1},
          {"name":"Wireless earbuds","priceMinor":790000,"currency":"VND","quantity":1}]}
JSON
set -- $(sale_created "$FLASHSALE_STATE/browser-sale.json")
bsale=$1
shift
bitems=$(echo "$@" | tr ' ' ,)
admin sale warm "$bsale" >/dev/null
bstart=$(psql_q "SELECT floor(extract(epoch FROM starts_at) * 1000)::bigint FROM sales WHERE id = $bsale")

if ! command -v node >/dev/null 2>&1 || [ ! -x /usr/bin/chromium ]; then
	not_ok "browser test: node and /usr/bin/chromium are installed (deploy/install-deps)"
elif [ ! -f "$browser_dir/node_modules/playwright-core/package.json" ]; then
	# tests/run installs it (deploy/install-deps); a copy made by make dist has none.
	ok "browser test # SKIP playwright-core is not installed in tests/browser (deploy/install-deps)"
else
	FS_TEST_SALE=$bsale FS_TEST_START_MS=$bstart FS_TEST_ITEMS=$bitems FS_TEST_WINDOW_S=$window \
	    timeout 180 node "$browser_dir/shop.test.mjs" >"$FLASHSALE_STATE/browser.tap" 2>&1
	relay_browser "$FLASHSALE_STATE/browser.tap" $?

	# Every outcome of Buy, on a sale that is on.
	printf '{"name":"outcomes","startsInSeconds":-5,"durationSeconds":3600,"items":[{"name":"One","priceMinor":100000,"currency":"VND","quantity":5},{"name":"Two","priceMinor":200000,"currency":"VND","quantity":5}]}' \
	    >"$FLASHSALE_STATE/outcomes-sale.json"
	set -- $(sale_created "$FLASHSALE_STATE/outcomes-sale.json")
	osale=$1
	shift
	admin sale warm "$osale" >/dev/null
	FS_TEST_OUTCOMES_SALE=$osale FS_TEST_OUTCOMES_ITEMS=$(echo "$@" | tr ' ' ,) \
	    timeout 120 node "$browser_dir/shop.test.mjs" >"$FLASHSALE_STATE/outcomes.tap" 2>&1
	relay_browser "$FLASHSALE_STATE/outcomes.tap" $?

	# A declined payment that expires: one unit, a 12 s window.
	printf '{"name":"declined","startsInSeconds":-5,"durationSeconds":3600,"paymentWindowSeconds":12,"items":[{"name":"One","priceMinor":100000,"currency":"VND","quantity":1}]}' \
	    >"$FLASHSALE_STATE/declined-sale.json"
	set -- $(sale_created "$FLASHSALE_STATE/declined-sale.json")
	dsale=$1
	admin sale warm "$dsale" >/dev/null
	FS_TEST_DECLINE_SALE=$dsale FS_TEST_DECLINE_ITEM=$2 \
	    timeout 90 node "$browser_dir/shop.test.mjs" >"$FLASHSALE_STATE/declined.tap" 2>&1
	relay_browser "$FLASHSALE_STATE/declined.tap" $?

	# deploy/demo on this stack (already built and up): the URL it prints
	# opens the page with a sale starting about a minute later.
	FLASHSALE_BUILD=$FLASHSALE_BINDIR "$top_srcdir/deploy/demo" --no-deps --no-build \
	    >"$FLASHSALE_STATE/demo.out" 2>&1
	rc=$?
	demo_url=$(tail -n 1 "$FLASHSALE_STATE/demo.out")
	case "$rc $demo_url" in
	"0 $FLASHSALE_EDGE_URL/?sale="[0-9]*) ok "deploy/demo prints the shop's URL on the edge" ;;
	*) not_ok "deploy/demo prints the shop's URL on the edge" "exit $rc" "$(tail -n 5 "$FLASHSALE_STATE/demo.out")" ;;
	esac
	dsale=${demo_url##*sale=}
	ans=$(http GET "/api/flash-sales/sales/$dsale" "" "$FLASHSALE_EDGE_URL")
	case "${ans%% *} $(json_get "${ans#* }" '.items[].state' | sort -u)" in
	"200 upcoming") ok "the demo sale is upcoming, its items loaded" ;;
	*) not_ok "the demo sale is upcoming, its items loaded" "$ans" ;;
	esac
	FS_TEST_DEMO_URL=$demo_url timeout 60 node "$browser_dir/shop.test.mjs" \
	    >"$FLASHSALE_STATE/demo.tap" 2>&1
	relay_browser "$FLASHSALE_STATE/demo.tap" $?
fi
