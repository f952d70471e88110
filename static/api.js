/*
 * The one way the page talks to the server. Every call goes through
 * request(), which gives back one answer shape whatever happened:
 *
 *   { status, ok, body, headers, t0, t1 }
 *
 * status 0 means the network failed (no answer); body is the parsed JSON
 * or {} when there is none; t0/t1 bracket the round trip (performance.now,
 * for the clock). A 401 to a request that carried the shopper's token
 * calls the handler given to onSignedOut: the token expired or was
 * revoked, whichever request found out.
 */

export const API = "/api/flash-sales";

let signedOutHandler = () => {};

export function onSignedOut(fn) {
	signedOutHandler = fn;
}

/* opts: token (bearer), headers (more), json (a body to send), cache (fetch's cache mode). */
export async function request(method, url, opts = {}) {
	const headers = Object.assign({}, opts.headers);
	if (opts.token)
		headers.Authorization = "Bearer " + opts.token;
	const init = { method, headers, cache: opts.cache || "no-store" };
	if (opts.json !== undefined) {
		headers["Content-Type"] = "application/json";
		init.body = typeof opts.json === "string" ? opts.json : JSON.stringify(opts.json);
	}
	const t0 = performance.now();
	let res;
	try {
		res = await fetch(url, init);
	} catch (e) {
		return { status: 0, ok: false, body: {}, headers: new Headers(), t0, t1: performance.now() };
	}
	const t1 = performance.now();
	let body = {};
	try {
		body = await res.json();
	} catch (e) {
		body = {};
	}
	if (body === null || typeof body !== "object")
		body = {};
	if (res.status === 401 && opts.token)
		signedOutHandler();
	return { status: res.status, ok: res.ok, body, headers: res.headers, t0, t1 };
}

/* Seconds to wait from an answer's Retry-After (delta or HTTP date). */
export function retryAfter(ans, fallback) {
	const v = ans && ans.headers.get("Retry-After");
	if (v) {
		if (/^\d+$/.test(v.trim()))
			return Math.max(1, parseInt(v, 10));
		const when = Date.parse(v);
		if (!Number.isNaN(when))
			return Math.max(1, Math.ceil((when - Date.now()) / 1000));
	}
	return fallback;
}
