/*
 * The signed-in shopper: a bearer token kept until it expires. The demo
 * sign-in (POST /signin) hands one out (kept in localStorage); the shop's
 * OpenID Connect sign-in (oidc.js) hands over the provider's access token,
 * kept in sessionStorage: this tab only, gone with it. A shop's own
 * sign-in may also hand one over in the page's fragment (#token=...).
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

/* A JWT's claims, unverified (the server verifies): for the page's display only. */
export function decodeClaims(tok) {
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

/* A token of the provider's: this tab's only. */
export function saveSession(a) {
	auth = a;
	localStorage.removeItem("fs.auth");
	sessionStorage.setItem("fs.auth", JSON.stringify(a));
}

function stored(store) {
	try {
		const a = JSON.parse(store.getItem("fs.auth") || "null");
		return a && a.token && Date.parse(a.expiresAt) > Date.now() ? a : null;
	} catch (e) {
		return null;
	}
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
	auth = stored(sessionStorage) || stored(localStorage);
}

export function forgetAuth() {
	auth = null;
	localStorage.removeItem("fs.auth");
	sessionStorage.removeItem("fs.auth");
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
		sessionStorage.removeItem("fs.auth");
		save({ token: ans.body.token, userId: ans.body.userId, expiresAt: ans.body.expiresAt });
		return { ok: true };
	}
	if (ans.status === 0)
		return { ok: false, why: "network" };
	if (ans.status === 404)
		return { ok: false, why: "off" };
	return { ok: false, why: "refused", reason: ans.body.message || ans.status };
}
