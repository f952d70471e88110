/*
 * The shopper's order in this sale: remembered per sale and shopper in
 * localStorage, followed live by Server-Sent Events (polling when the
 * stream is unavailable), paid through the payment provider's checkout
 * or cancelled.
 */
import { API, request, retryAfter } from "./api.js";
import { currentAuth, token } from "./auth.js";
import { changed } from "./changes.js";
import { serverNow } from "./clock.js";
import { outcome, setOutcome, statusOutcome } from "./outcomes.js";
import { currentSaleId } from "./sale.js";

export const FINAL = new Set(["PAID", "EXPIRED", "CANCELLED", "FAILED"]);
export const LIVE = new Set(["PROCESSING", "PENDING", "PAID"]);

/* { orderId, itemId, status, expiresAt } or null. */
let order = null;
/* Where the last status came from: "sse", "poll" or "action". */
let source = "";
/* How the page follows the order: null, "connecting", "sse" or "poll". */
let live = null;
/* "pay" or "cancel" while that request is under way. */
let acting = null;
/* A words key (and its values) to show instead of the live line. */
let notice = null;
let es = null;
let pollTimer = 0;
let quietTimer = 0;
/* When the stream last brought a status, or the page last asked for one (Date.now()). */
let lastHeard = 0;
let liveTimer = 0;
let retries = 0;
let expiryChecked = false;

export function currentOrder() {
	return order;
}

/* What the view draws besides the order itself. */
export function orderState() {
	return { source, live, acting, notice };
}

function storageKey() {
	const a = currentAuth();
	return a ? `fs.order.${currentSaleId()}.${a.userId}` : null;
}

function save() {
	const key = storageKey();
	if (key && order)
		localStorage.setItem(key, JSON.stringify(order));
}

/* The order named by ?order=, or the one remembered for this shopper. */
export function restoreOrder() {
	const wanted = new URLSearchParams(location.search).get("order");
	let saved = null;
	try {
		saved = JSON.parse(localStorage.getItem(storageKey()) || "null");
	} catch (e) {
		saved = null;
	}
	if (wanted && /^[0-9a-f-]{36}$/.test(wanted) && (!saved || saved.orderId !== wanted))
		saved = { orderId: wanted, itemId: null, status: null, expiresAt: null };
	if (saved && saved.orderId)
		startOrder(saved);
}

/*
 * Asks the server for the shopper's own order in this sale (GET
 * .../sales/{id}/my-order, never cached): a purchase answered 503 may have
 * reached the broker anyway, and another tab or device may have bought.
 * Follows a live order it finds; true when the shopper holds one.
 */
export async function findMyOrder() {
	const tok = token();
	if (!tok)
		return false;
	const ans = await request("GET", `${API}/sales/${currentSaleId()}/my-order`, { token: tok });
	const o = ans.body;
	if (!ans.ok || typeof o.orderId !== "string" || !/^[0-9a-f-]{36}$/.test(o.orderId))
		return order !== null && LIVE.has(order.status);
	if (order && order.orderId === o.orderId)
		applyOrder(o, "poll");
	else if (LIVE.has(o.status) || !order) {
		startOrder({ orderId: o.orderId, itemId: o.itemId, status: o.status, expiresAt: o.expiresAt });
		/* Its item shows the order's outcome now, not after track's first fetch. */
		applyOrder(o, "poll");
	}
	return order !== null && LIVE.has(order.status);
}

export function startOrder(o) {
	stopTracking();
	order = o;
	retries = 0;
	acting = null;
	notice = null;
	expiryChecked = false;
	save();
	changed();
	track();
}

export function forgetOrder() {
	stopTracking();
	order = null;
	changed();
}

/* A status from the stream, a poll or the answer to a cancel. */
function applyOrder(o, from) {
	if (!order || !o || o.orderId !== order.orderId)
		return;
	order = Object.assign({}, order, {
		itemId: o.itemId !== undefined ? o.itemId : order.itemId,
		status: o.status || order.status,
		expiresAt: o.expiresAt || order.expiresAt,
	});
	source = from;
	notice = null;
	save();
	if (order.itemId !== null && order.itemId !== undefined) {
		const kind = statusOutcome(order.status);
		const shown = outcome(order.itemId);
		/* "Already purchased" keeps its link; the order panel shows the status. */
		if (kind && !(shown && (shown.kind === kind || (shown.kind === "already" && shown.orderId === o.orderId))))
			setOutcome(order.itemId, kind);
	}
	if (FINAL.has(order.status))
		stopTracking();
	changed();
}

async function fetchOrder() {
	const tok = token();
	if (!order || !tok)
		return;
	const ans = await request("GET", `${API}/orders/${order.orderId}`, { token: tok });
	if (ans.ok) {
		applyOrder(ans.body, "poll");
	} else if (ans.status === 404) {
		notice = { key: "orderGone" };
		changed();
	}
	/* Anything else: the next poll tries again. */
}

/*
 * Live status: one EventSource for the caller's order. EventSource cannot
 * send headers, and a URL ends up in logs, so the stream's URL carries a
 * short-lived ticket for this order only (POST .../ticket), never the
 * token. A stream that closes is reopened with a fresh ticket a few
 * times; polling takes over when it does not open or keeps failing.
 */
async function track(reopened = 0) {
	const o = order, tok = token();
	if (!o || !tok)
		return;
	fetchOrder();
	if (FINAL.has(o.status))
		return;
	if (typeof window.EventSource !== "function") {
		startPolling();
		return;
	}
	live = "connecting";
	const ans = await request("POST", `${API}/orders/${o.orderId}/ticket`, { token: tok });
	/* The order object changes with every status; the id says it is still this one. */
	const current = () => order && order.orderId === o.orderId && !FINAL.has(order.status);
	if (!current())
		return;
	if (!ans.ok || !ans.body || typeof ans.body.ticket !== "string") {
		startPolling();
		return;
	}
	let failures = 0;
	const stream = new EventSource(`${API}/orders/${o.orderId}/events?ticket=${encodeURIComponent(ans.body.ticket)}`);
	es = stream;
	stream.onopen = () => {
		failures = 0;
		live = "sse";
		stopPolling();
		/*
		 * A status pushed between the first read and the stream's opening
		 * may not be replayed: read once more now the stream is listening,
		 * and again while the order is still being recorded.
		 */
		fetchOrder();
		startQuietCheck();
		changed();
	};
	stream.onmessage = (ev) => {
		let msg;
		lastHeard = Date.now();
		try {
			msg = JSON.parse(ev.data);
		} catch (e) {
			return;
		}
		applyOrder(msg, "sse");
	};
	stream.onerror = () => {
		failures++;
		if (stream.readyState === EventSource.CLOSED || failures >= 3) {
			stream.close();
			if (es === stream)
				es = null;
			if (stream.readyState === EventSource.CLOSED && reopened < 3 && current())
				track(reopened + 1);
			else
				startPolling();
		}
	};
	clearTimeout(liveTimer);
	liveTimer = setTimeout(() => {
		if (live !== "sse" && order && !FINAL.has(order.status))
			startPolling();
	}, 5000);
	changed();
}

/*
 * While the stream is open: a read every 3 s while the order is being
 * recorded, and one after every QUIET_MS in which the stream brought
 * nothing. A status the push server could not keep (its memory full, the
 * publish refused) never comes down the stream, which stays open and
 * pings: the page asks for it instead.
 */
const QUIET_MS = 10000;

function startQuietCheck() {
	if (quietTimer)
		return;
	lastHeard = Date.now();
	quietTimer = setInterval(() => {
		if (!order || FINAL.has(order.status)) {
			stopQuietCheck();
			return;
		}
		if (order.status === null || order.status === "PROCESSING" || Date.now() - lastHeard >= QUIET_MS) {
			lastHeard = Date.now();
			fetchOrder();
		}
	}, 3000);
}

function stopQuietCheck() {
	clearInterval(quietTimer);
	quietTimer = 0;
}

function startPolling() {
	live = "poll";
	changed();
	if (pollTimer)
		return;
	pollTimer = setInterval(fetchOrder, 3000);
}

function stopPolling() {
	clearInterval(pollTimer);
	pollTimer = 0;
}

function stopTracking() {
	stopPolling();
	stopQuietCheck();
	clearTimeout(liveTimer);
	if (es) {
		es.close();
		es = null;
	}
	live = null;
}

/* Once the payment window closed here, asks the server what it says. */
export function checkExpiry() {
	if (order && order.status === "PENDING" && order.expiresAt && !expiryChecked &&
	    Date.parse(order.expiresAt) <= serverNow()) {
		expiryChecked = true;
		fetchOrder();
	}
}

/*
 * Pay now: the checkout opens (or finds again) the payment provider's
 * hosted page for the order, and the shopper goes there. The provider
 * sends them back to this page, which follows the order as before: only
 * the provider's word, by its webhook, makes the order PAID.
 */
export async function checkout() {
	const o = order, tok = token();
	if (!o || !tok)
		return;
	acting = "pay";
	notice = null;
	changed();
	const ans = await request("POST", `${API}/orders/${o.orderId}/checkout`, { token: tok });
	const url = ans.body.redirectUrl;
	if (ans.ok && typeof url === "string" && /^https?:\/\//.test(url)) {
		/* The button stays busy while the browser leaves. */
		location.assign(url);
		return;
	}
	acting = null;
	if (ans.status === 409)
		await fetchOrder();
	else if (ans.status === 404)
		notice = { key: "orderGone" };
	else if (ans.status === 0)
		notice = { key: "outNetwork" };
	else if (ans.status !== 401)
		notice = { key: "outRetry", vars: { s: retryAfter(ans, 2) } };
	changed();
}

/* POST .../cancel for the order. */
export async function cancelOrder() {
	const o = order, tok = token();
	if (!o || !tok)
		return;
	acting = "cancel";
	notice = null;
	changed();
	const ans = await request("POST", `${API}/orders/${o.orderId}/cancel`, { token: tok });
	acting = null;
	if (ans.ok) {
		applyOrder(Object.assign({ orderId: o.orderId }, ans.body), "action");
		return;
	}
	if (ans.status === 409 && ans.body.error === "ORDER_PROCESSING" && retries < 20) {
		/* Not in the database yet: the consumer records it within moments. */
		retries++;
		acting = "cancel";
		notice = { key: "payProcessing" };
		setTimeout(cancelOrder, 1000);
	} else if (ans.status === 409) {
		await fetchOrder();
	} else if (ans.status === 0) {
		notice = { key: "outNetwork" };
	} else if (ans.status !== 401) {
		notice = { key: "outRetry", vars: { s: retryAfter(ans, 2) } };
	}
	changed();
}
