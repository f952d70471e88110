/*
 * The shop's sign-in with OpenID Connect: Authorization Code with PKCE
 * (RFC 7636, S256) as a public client, no secret in the page. The site
 * configures its provider in /signin.json:
 *
 *   { "issuer": "https://id.shop.example", "clientId": "flashsale-shop",
 *     "scope": "openid", "resource": "https://shop.example/api/flash-sales" }
 *
 * (scope defaults to "openid"; resource, RFC 8707, is sent when given;
 * "params": {"audience": "..."} adds string parameters to the
 * authorization request, for providers that name the API otherwise, as
 * Auth0 does; the redirect URI is the page's origin + "/", which the
 * provider must list for the client). No file, or a bad one: no such
 * sign-in, and the demo sign-in stays alone.
 *
 * The Bearer the page sends is the access token (the API's token: its aud
 * is the API, FLASHSALE_JWT_AUDIENCE); the ID token only proves the sign-in
 * to the page (its nonce, iss and aud are checked here). state binds the
 * answer to this tab's request; the verifier, state and nonce live in
 * sessionStorage until the provider sends the shopper back.
 */
import { request } from "./api.js";
import { decodeClaims as claimsOf, saveSession } from "./auth.js";

const PENDING = "fs.oidc.pending";
let config = null;

function b64url(bytes) {
	let s = "";
	for (const b of bytes)
		s += String.fromCharCode(b);
	return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomString() {
	return b64url(crypto.getRandomValues(new Uint8Array(32)));
}

function redirectUri() {
	return location.origin + "/";
}

/* The site's provider, or null when it configures none. */
export function oidcConfig() {
	return config;
}

export async function loadOidcConfig() {
	const ans = await request("GET", "/signin.json", { cache: "default" });
	const c = ans.body;
	config = ans.ok && typeof c.issuer === "string" && /^https?:\/\/[^/]/.test(c.issuer) &&
		typeof c.clientId === "string" && c.clientId !== "" ? c : null;
	return config;
}

/* The provider's endpoints from its discovery document, whose issuer must be the configured one. */
async function discover(issuer) {
	const ans = await request("GET", issuer.replace(/\/$/, "") + "/.well-known/openid-configuration");
	if (!ans.ok)
		throw new Error(ans.status === 0 ? "network" : `discovery ${ans.status}`);
	if (ans.body.issuer !== issuer)
		throw new Error("the discovery document names another issuer");
	return ans.body;
}

/* Sends the shopper to the provider; the page comes back with ?code=&state=. */
export async function startSignIn() {
	const c = config;
	const meta = await discover(c.issuer);
	const verifier = randomString(), state = randomString(), nonce = randomString();
	const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
	sessionStorage.setItem(PENDING, JSON.stringify({
		state, nonce, verifier, issuer: c.issuer, clientId: c.clientId,
		tokenEndpoint: meta.token_endpoint, resource: c.resource || "",
		back: location.pathname + location.search,
	}));
	const q = new URLSearchParams({
		response_type: "code", client_id: c.clientId, redirect_uri: redirectUri(),
		scope: c.scope || "openid", state, nonce,
		code_challenge: b64url(new Uint8Array(digest)), code_challenge_method: "S256",
	});
	if (c.resource)
		q.set("resource", c.resource);
	if (c.params && typeof c.params === "object") {
		for (const [k, v] of Object.entries(c.params))
			if (typeof v === "string" && !q.has(k))
				q.set(k, v);
	}
	location.assign(meta.authorization_endpoint + "?" + q.toString());
}

/*
 * On the way back from the provider (?code= or ?error= with state): checks
 * state, exchanges the code at the token endpoint, checks the ID token's
 * nonce, iss and aud, keeps the access token, and puts the page's own URL
 * back. Answers null when the URL is no answer of the provider's, else
 * { ok: true } or { ok: false, reason }.
 */
export async function finishSignIn() {
	const q = new URLSearchParams(location.search);
	if (!q.has("state") || !(q.has("code") || q.has("error")))
		return null;
	let p = null;
	try {
		p = JSON.parse(sessionStorage.getItem(PENDING) || "null");
	} catch (e) {
		p = null;
	}
	sessionStorage.removeItem(PENDING);
	history.replaceState(null, "", p && p.back ? p.back : location.pathname);
	if (!p || q.get("state") !== p.state)
		return { ok: false, reason: "state" };
	if (q.has("error"))
		return { ok: false, reason: q.get("error") };
	/* RFC 9207: the answer names the issuer it comes from. */
	if (q.has("iss") && q.get("iss") !== p.issuer)
		return { ok: false, reason: "iss" };
	const form = new URLSearchParams({
		grant_type: "authorization_code", code: q.get("code"), client_id: p.clientId,
		redirect_uri: redirectUri(), code_verifier: p.verifier,
	});
	if (p.resource)
		form.set("resource", p.resource);
	let res, body;
	try {
		res = await fetch(p.tokenEndpoint, {
			method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" },
			body: form.toString(), cache: "no-store",
		});
		body = await res.json();
	} catch (e) {
		return { ok: false, reason: "network" };
	}
	if (!res.ok || typeof body.access_token !== "string")
		return { ok: false, reason: (body && body.error) || res.status };
	const id = typeof body.id_token === "string" ? claimsOf(body.id_token) : null;
	const aud = id ? [].concat(id.aud) : [];
	if (!id || id.nonce !== p.nonce || id.iss !== p.issuer || !aud.includes(p.clientId))
		return { ok: false, reason: "id_token" };
	const at = claimsOf(body.access_token);
	const sub = at && typeof at.sub === "string" ? at.sub : id.sub;
	const exp = at && typeof at.exp === "number" ? at.exp * 1000 : Date.now() + (body.expires_in || 300) * 1000;
	saveSession({ token: body.access_token, userId: sub, expiresAt: new Date(exp).toISOString(), via: "oidc" });
	return { ok: true };
}
