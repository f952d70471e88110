/*
 * How much is left of each item: the units left document, which the edge
 * keeps about a second, read on load and every 1-2 s while the sale is
 * open (plain polling: it needs no EventSource), so that the page shows
 * "72% sold", "only 12 left", "sold out" as units go and come back.
 */
import { API, request, retryAfter } from "./api.js";
import { changed } from "./changes.js";
import { serverNow } from "./clock.js";
import { currentSale, currentSaleId } from "./sale.js";

/* itemId -> { quantity, left, soldOut }, from the last document read. */
let stock = null;
let timer = 0;

/* What the page knows of an item's units, or undefined before the first read. */
export function unitsLeft(itemId) {
	return stock ? stock.get(String(itemId)) : undefined;
}

/*
 * Polls while the sale is open; before the start nothing can be sold, so
 * it asks again at the start instant; after the end it stops. The jitter
 * keeps many pages from asking in step.
 */
function schedule(wait) {
	clearTimeout(timer);
	const sale = currentSale(), now = serverNow();
	if (sale && now >= sale.endsMs)
		return;
	if (sale && now < sale.startsMs)
		wait = Math.max(wait, Math.min(10000, sale.startsMs - now));
	timer = setTimeout(loadStock, wait + Math.random() * 500);
}

export async function loadStock() {
	const ans = await request("GET", `${API}/sales/${currentSaleId()}/stock`, { cache: "no-cache" });
	if (ans.ok && Array.isArray(ans.body.items)) {
		const m = new Map();
		for (const it of ans.body.items) {
			if (Number.isInteger(it.quantity) && Number.isInteger(it.left))
				m.set(String(it.itemId), { quantity: it.quantity, left: it.left, soldOut: it.soldOut === true });
		}
		stock = m;
		changed();
		schedule(1000);
	} else if (ans.status === 404) {
		/* No such sale: the sale document says so; nothing to poll. */
	} else {
		schedule(ans.status === 0 ? 2000 : retryAfter(ans, 2) * 1000);
	}
}

/*
 * The words key and values for an item's units: sold out, "only N left"
 * when few remain (at most 20, or at most a tenth of the quantity), the
 * quantity before any is sold, and the share sold otherwise.
 */
export function unitsWords(u, held) {
	/* Whoever holds a unit of the item is never told it is sold out. */
	if ((u.soldOut || u.left <= 0) && held)
		return { key: "stockSold", vars: { p: 100 } };
	if (u.soldOut || u.left <= 0)
		return { key: "stockSoldOut", vars: {} };
	if (u.left <= 20 || u.left * 10 <= u.quantity)
		return { key: u.left === 1 ? "stockOnlyOne" : "stockOnly", vars: { n: u.left } };
	const sold = u.quantity - u.left;
	if (sold <= 0)
		return { key: "stockAll", vars: { n: u.quantity } };
	/* Never "0% sold" once one is sold, never "100%" while some are left. */
	const pct = Math.min(99, Math.max(1, Math.floor(sold * 100 / u.quantity)));
	return { key: "stockSold", vars: { p: pct } };
}
