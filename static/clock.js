/*
 * The server's clock. performance.now() + offset is the server's time in
 * ms: the countdown and the start instant follow it, never the device's
 * clock, which may be minutes off.
 */
import { request } from "./api.js";

let offset = Date.now() - performance.now();
/* "device" (not synced yet), "time" (GET /api/time) or "document". */
let source = "device";
let rtt = 0;

export function serverNow() {
	return performance.now() + offset;
}

/* What the view shows: how the clock was learned and how far off the device is. */
export function clockInfo() {
	return { source, rtt, deviceOffset: Date.now() - serverNow() };
}

/*
 * Samples GET /api/time a few times and keeps the sample with the
 * shortest round trip: the server read its clock about half-way.
 */
export async function syncClock() {
	let best = null;
	for (let i = 0; i < 4; i++) {
		const ans = await request("GET", "/api/time");
		if (!ans.ok || typeof ans.body.now !== "number")
			continue; /* One lost sample is fine; the others decide. */
		const trip = ans.t1 - ans.t0;
		if (best === null || trip < best.rtt)
			best = { rtt: trip, offset: ans.body.now - (ans.t0 + trip / 2) };
	}
	if (best !== null) {
		offset = best.offset;
		source = "time";
		rtt = best.rtt;
	}
	return best !== null;
}

/* Falls back on a document's serverTime (corrected by its Age in seconds). */
export function clockFromDocument(serverTime, t0, t1, age) {
	if (source === "time" || typeof serverTime !== "number")
		return;
	const trip = t1 - t0;
	offset = serverTime + age * 1000 - (t0 + trip / 2);
	source = "document";
	rtt = trip + age * 1000;
}
