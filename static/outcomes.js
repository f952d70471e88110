/*
 * What the page last learned about each item for this shopper: the answer
 * to a Buy ("sold_out", "retry" ...) or the status of the order for it.
 * The view draws and announces each new outcome.
 */
import { changed } from "./changes.js";

const outcomes = new Map();

/* The order status -> the item outcome the page shows for it. */
export function statusOutcome(status) {
	return {
		PROCESSING: "processing", PENDING: "reserved", PAID: "paid", EXPIRED: "expired",
		CANCELLED: "cancelled", FAILED: "failed",
	}[status] || null;
}

/* { kind, ... } or undefined. A new outcome is a new object, even of the same kind. */
export function outcome(itemId) {
	return outcomes.get(String(itemId));
}

export function setOutcome(itemId, kind, extra) {
	outcomes.set(String(itemId), Object.assign({ kind }, extra || {}));
	changed();
}

export function dropOutcomes(kind) {
	for (const [id, o] of outcomes)
		if (o.kind === kind)
			outcomes.delete(id);
	changed();
}
