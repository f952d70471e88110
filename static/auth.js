/*
 * The signed-in shopper: a bearer token kept in localStorage until it
 * expires. The demo sign-in (POST /signin) hands one out; a shop's own
 * sign-in may hand one over in the page's fragment (#token=...).
 */
import { API, request } from "./api.js";

let auth = null;

/* { token, userId, expiresAt } or null. */
export function currentAuth() {
	return auth;
}

export function token() {
	return auth ? auth.token : null;
}

function decodeClaims(tok) {
	try {
		const part = tok.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
		return JSON.parse(atob(part + "===".slice((part.length + 3) % 4)));
	} catch (e) {
		return null;
	}
}

function save(a) {
	auth = a;
	localStorage.setItem("fs.auth", JSON.stringify(a));
}

export function loadAuth() {
	const frag = new URLSearchParams(location.hash.slice(1));
	const handed = frag.get("token");
	if (handed) {
		const c = decodeClaims(handed);
		if (c && c.sub && c.exp)
			save({ token: handed, userId: c.sub, expiresAt: new Date(c.exp * 1000).toISOString() });
		history.replaceState(null, "", location.pathname + location.search);
	}
	try {
		const a = JSON.parse(localStorage.getItem("fs.auth") || "null");
		auth = a && a.token && Date.parse(a.expiresAt) > Date.now() ? a : null;
	} catch (e) {
		auth = null;
	}
}

export function forgetAuth() {
	auth = null;
	localStorage.removeItem("fs.auth");
}

export const USER_ID = /^[A-Za-z0-9._-]{1,64}$/;

/*
 * The demo sign-in; an empty userId asks for a random one. Answers
 * { ok: true } or { ok: false, why, reason } with why one of "off"
 * (the demo sign-in is disabled), "network", "refused".
 */
export async function signIn(userId) {
	const ans = await request("POST", `${API}/signin`, { json: userId === "" ? "{}" : { userId } });
	if (ans.ok && typeof ans.body.token === "string") {
		save({ token: ans.body.token, userId: ans.body.userId, expiresAt: ans.body.expiresAt });
		return { ok: true };
	}
	if (ans.status === 0)
		return { ok: false, why: "network" };
	if (ans.status === 404)
		return { ok: false, why: "off" };
	return { ok: false, why: "refused", reason: ans.body.message || ans.status };
}
