/*
 * The sale: its document (items, prices, states, serverTime; refreshed
 * every few seconds, the edge keeps it a second) and, from the start
 * instant on, the reveal document with every item's signed purchase URL.
 */
import { API, request, retryAfter } from "./api.js";
import { clockFromDocument, serverNow } from "./clock.js";
import { changed } from "./changes.js";

let saleId = null;
let sale = null;
/* A words key while the document cannot be shown ("saleNotFound" ...). */
let problem = null;
/* itemId -> purchase URL, once revealed. */
let reveal = null;
let revealing = false;
let refreshTimer = 0;

export function currentSaleId() {
	return saleId;
}

/* The sale document with startsMs/endsMs added, or null before it loaded. */
export function currentSale() {
	return sale;
}

export function saleProblem() {
	return problem;
}

export function purchaseUrl(itemId) {
	return reveal ? reveal.get(String(itemId)) : undefined;
}

export function revealed() {
	return reveal !== null;
}

export function itemName(itemId) {
	const it = sale && sale.items.find((i) => String(i.itemId) === String(itemId));
	return it ? it.name : "";
}

export function useSale(id) {
	saleId = id;
}

function failed(key, retryMs) {
	if (sale === null) {
		problem = key;
		changed();
	}
	if (retryMs > 0)
		setTimeout(loadSale, retryMs);
}

export async function loadSale() {
	const ans = await request("GET", `${API}/sales/${saleId}`, { cache: "no-cache" });
	if (ans.status === 0)
		return failed("saleUnavailable", 3000);
	if (ans.status === 404)
		return failed("saleNotFound", 0);
	if (!ans.ok || !Array.isArray(ans.body.items))
		return failed("saleUnavailable", retryAfter(ans, 3) * 1000);
	const doc = ans.body;
	const age = parseInt(ans.headers.get("Age") || "0", 10) || 0;
	clockFromDocument(doc.serverTime, ans.t0, ans.t1, age);
	doc.startsMs = Date.parse(doc.startsAt);
	doc.endsMs = Date.parse(doc.endsAt);
	sale = doc;
	problem = null;
	changed();
	scheduleRefresh();
}

/*
 * Item states change with stock: the edge keeps the document for a
 * second, so reading it every few seconds costs the origin nothing.
 */
function scheduleRefresh() {
	clearTimeout(refreshTimer);
	const now = serverNow();
	let wait = 5000;
	if (now < sale.startsMs)
		wait = Math.min(10000, Math.max(1000, sale.startsMs - now + 1500));
	if (now >= sale.endsMs)
		return;
	refreshTimer = setTimeout(loadSale, wait + Math.random() * 1000);
}

/*
 * Asked for at the start instant only. The edge holds the shoppers who
 * ask at once and hands them one answer; a 425 (our clock a little early)
 * is retried shortly, with jitter so retries do not come in a wave.
 */
export async function fetchReveal() {
	if (reveal !== null || revealing)
		return;
	revealing = true;
	let wait = 0;
	const ans = await request("GET", `${API}/sales/${saleId}/reveal`, { cache: "no-cache" });
	if (ans.ok) {
		const urls = new Map();
		for (const it of Array.isArray(ans.body.items) ? ans.body.items : []) {
			if (typeof it.purchaseUrl === "string" && it.purchaseUrl.startsWith(`${API}/items/`))
				urls.set(String(it.itemId), it.purchaseUrl);
		}
		reveal = urls;
	} else if (ans.status === 425) {
		wait = 250 + Math.random() * 500;
	} else if (ans.status === 0) {
		wait = 1000 + Math.random() * 1000;
	} else {
		wait = retryAfter(ans, 1) * 1000 * (0.75 + Math.random() * 0.5);
	}
	revealing = false;
	if (reveal === null)
		setTimeout(fetchReveal, wait);
	changed();
}
