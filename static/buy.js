/*
 * Buy: one POST to the item's signed purchase URL with the shopper's
 * token (in a sale with a waiting room: with the shopper's pass instead),
 * and what each answer means for the item and the order.
 */
import { request, retryAfter } from "./api.js";
import { token } from "./auth.js";
import { serverNow } from "./clock.js";
import { currentOrder, findMyOrder, startOrder } from "./order.js";
import { outcome, setOutcome } from "./outcomes.js";
import { dropPass, hasQueue, queuePass } from "./queue.js";
import { purchaseUrl } from "./sale.js";

/* itemId -> server time (ms) before which Buy stays disabled (Retry-After). */
const retryAt = new Map();
/*
 * Set once an answer left it unknown whether an order exists (503, no
 * answer): from then on a "sold out" is checked against the shopper's own
 * order before it is shown. Only then: sold-out answers stay one request.
 */
let unsure = false;

export function retryUntil(itemId) {
	return retryAt.get(String(itemId));
}

/* Answers false when the shopper must sign in first. */
export async function buy(itemId) {
	itemId = String(itemId);
	const tok = token();
	if (!tok) {
		setOutcome(itemId, "signed_out");
		return false;
	}
	const url = purchaseUrl(itemId);
	/* A waiting room's purchase carries the pass, which names the shopper. */
	const pass = queuePass();
	if (!url || (hasQueue() && !pass))
		return true;
	setOutcome(itemId, "buying");
	const ans = await request("POST", url, pass ? { headers: { "Flashsale-Pass": pass } } : { token: tok });
	const body = ans.body;
	/* A 503 or no answer may still have bought: the shopper's own order says. */
	if (ans.status === 0 || ans.status >= 500 || (ans.status === 410 && unsure)) {
		unsure = true;
		if (await findMyOrder())
			return true;
	}
	switch (ans.status) {
	case 0:
		setOutcome(itemId, "network");
		break;
	case 202:
		startOrder({ orderId: body.orderId, itemId: Number(itemId), status: body.status || "PENDING",
			expiresAt: body.expiresAt });
		setOutcome(itemId, "reserved");
		break;
	case 409: {
		setOutcome(itemId, "already", { orderId: body.orderId });
		const o = currentOrder();
		if (body.orderId && (!o || o.orderId !== body.orderId))
			startOrder({ orderId: body.orderId, itemId: null, status: null, expiresAt: null });
		break;
	}
	case 410:
		setOutcome(itemId, "sold_out");
		break;
	case 401:
		/* The request's 401 signed the shopper out already. */
		setOutcome(itemId, "signed_out");
		break;
	case 425:
		waitAndRetry(itemId, retryAfter(ans, 1), "not_started");
		break;
	case 403:
		if (body.error === "NOT_ADMITTED") {
			dropPass();
			setOutcome(itemId, "not_admitted");
		} else {
			setOutcome(itemId, "bad_link");
		}
		break;
	case 404:
		setOutcome(itemId, "unavailable");
		break;
	default:
		waitAndRetry(itemId, retryAfter(ans, 2), "retry");
	}
	return true;
}

/* Honours Retry-After: the button comes back when it has passed. */
function waitAndRetry(itemId, seconds, kind) {
	const until = serverNow() + seconds * 1000;
	retryAt.set(itemId, until);
	setOutcome(itemId, kind, { until });
	setTimeout(() => {
		retryAt.delete(itemId);
		const o = outcome(itemId);
		if (o && o.kind === kind)
			setOutcome(itemId, "retry_now");
	}, seconds * 1000);
}
