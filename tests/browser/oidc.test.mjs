/*
 * The shop's sign-in with a real OpenID provider (oidc-provider, the
 * stack's part "oidc"), in Debian's Chromium through the edge:
 *   - "Sign in with your shop account" leads to the provider's own login
 *     and consent pages and back; the access token (RS256, iss, aud = the
 *     shop's API) sits in sessionStorage; Buy answers 202 and the order is
 *     followed live (a cancel made elsewhere with the token shows on the
 *     page by itself); Sign out forgets the token;
 *   - with the provider signing ES256, a shopper's token buys;
 *   - the provider's keys rotated while the stack runs: the fetch (part
 *     jwks) lists the new key, a token of the new key buys, a token of the
 *     old key still buys while the file lists it, one of 30 s until it
 *     expires (then 401, the key still listed), and once the provider
 *     has removed the old key and the file no longer lists it, a token of
 *     that key gets 401.
 * The two last need RS256 and ES256 in lib/token (issue 34).
 *
 * Prints TAP lines for tests/integration/single/oidc.sh to relay; exits 0
 * when all passed.
 *
 * Environment: FLASHSALE_EDGE_URL, FLASHSALE_JWKS_FILE (the handlers' JWK
 * Set), FLASHSALE_OIDC_ISSUER, FLASHSALE_OIDC_ADMIN_URL (the provider's
 * admin port), FLASHSALE_JWT_AUDIENCE, FS_TEST_SALE and FS_TEST_ITEM (a
 * sale on now, for the page), FS_TEST_BUY_PATH (a signed purchase path of
 * another item on sale, for the tokens bought with directly),
 * FS_TEST_REFRESH_S (the fetch's interval), FLASHSALE_ARTIFACTS.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const EDGE = process.env.FLASHSALE_EDGE_URL;
const JWKS_FILE = process.env.FLASHSALE_JWKS_FILE;
const ISSUER = process.env.FLASHSALE_OIDC_ISSUER;
const ADMIN = process.env.FLASHSALE_OIDC_ADMIN_URL;
const AUDIENCE = process.env.FLASHSALE_JWT_AUDIENCE;
const SALE = process.env.FS_TEST_SALE;
const ITEM = process.env.FS_TEST_ITEM;
const BUY_PATH = process.env.FS_TEST_BUY_PATH;
const REFRESH_S = Number(process.env.FS_TEST_REFRESH_S || 2);
const SHOTS = join(process.env.FLASHSALE_ARTIFACTS || "tests/artifacts", "browser");
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync"];
const RUN = `${process.pid}`;

let failed = 0;
const ok = (name) => console.log(`ok - ${name}`);
const notOk = (name, why) => {
	failed++;
	console.log(`not ok - ${name}`);
	for (const line of String(why || "").replace(/\x1b\[[0-9;]*m/g, "").split("\n"))
		if (line)
			console.log(`# ${line}`);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* Runs a step; a throw or false fails it. Answers whether it passed. */
async function step(name, fn) {
	try {
		const r = await fn();
		if (r === false)
			notOk(name, "the check did not hold");
		else
			ok(name);
		return r !== false;
	} catch (e) {
		notOk(name, e && e.message ? e.message.split("\n").slice(0, 6).join("\n") : String(e));
		return false;
	}
}

function expect(cond, what) {
	if (!cond)
		throw new Error(what);
}

function partOf(jwt, i) {
	return JSON.parse(Buffer.from(jwt.split(".")[i], "base64url").toString());
}

/* The provider's admin port: POST /rotate, /retire, /alg/ES256 ...; GET /keys. */
async function admin(method, path) {
	const r = await fetch(ADMIN + path, { method });
	expect(r.status === 200, `provider admin ${path} answered ${r.status}`);
	return r.json();
}

function fileKids() {
	try {
		return JSON.parse(readFileSync(JWKS_FILE, "utf8")).keys.map((k) => k.kid);
	} catch (e) {
		return [];
	}
}

/* Polls the JWK Set file until WANT(kids) holds: three fetch intervals and 20 s more at most. */
async function untilFile(want, what) {
	const deadline = Date.now() + (3 * REFRESH_S + 20) * 1000;
	while (!want(fileKids())) {
		expect(Date.now() < deadline, `${what}: the file lists ${fileKids().join(" ")}`);
		await sleep(200);
	}
}

/* The status of a purchase with TOKEN through the edge. */
async function buyWith(token) {
	const r = await fetch(EDGE + BUY_PATH, { method: "POST", headers: { Authorization: `Bearer ${token}` } });
	await r.arrayBuffer();
	return r.status;
}

let browser;

/*
 * A new shopper's browser signs in as ACCOUNT on the provider's own pages;
 * answers { ctx, page, token, purchases } (the statuses of the page's purchase requests).
 */
async function signIn(account) {
	const ctx = await browser.newContext({ viewport: { width: 1000, height: 900 } });
	const page = await ctx.newPage();
	const purchases = [];
	page.on("response", async (r) => {
		if (/\/purchase\?/.test(r.url()) && r.request().method() === "POST")
			purchases.push({ status: r.status(), body: await r.json().catch(() => ({})) });
	});
	await page.goto(`${EDGE}/?sale=${SALE}&lang=en`);
	await page.waitForSelector("#oidc:not([hidden]) #oidc-signin", { timeout: 15000 });
	await page.click("#oidc-signin");
	await page.waitForURL((u) => u.href.startsWith(ISSUER + "/interaction/"), { timeout: 15000 });
	await page.fill('input[name="login"]', account);
	await page.fill('input[name="password"]', "any password");
	await page.click('button[type="submit"]');
	/* The consent page, the first time this browser signs in to the shop. */
	await page.waitForSelector('button[type="submit"]:has-text("Continue")', { timeout: 15000 });
	await page.click('button[type="submit"]');
	await page.waitForURL((u) => u.href.startsWith(EDGE + "/"), { timeout: 15000 });
	await page.waitForSelector("#whoami:not([hidden])", { timeout: 15000 });
	const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("fs.auth") || "{}").token);
	expect(typeof token === "string", "no token in sessionStorage");
	return { ctx, page, token, purchases };
}

async function main() {
	mkdirSync(SHOTS, { recursive: true });
	browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ARGS });
	let alice = null;

	await step("oidc: the page signs in on the provider's own pages and comes back signed in", async () => {
		alice = await signIn(`alice-${RUN}`);
		const who = await alice.page.textContent("#who");
		expect(who === `alice-${RUN}`, `the page says it is signed in as "${who}"`);
		const url = alice.page.url();
		expect(url === `${EDGE}/?sale=${SALE}&lang=en`, `the page's URL is ${url}, no code or state left in it`);
	});
	if (!alice)
		return;
	await step("oidc: the page keeps the provider's access token in sessionStorage only", async () => {
		const local = await alice.page.evaluate(() => localStorage.getItem("fs.auth"));
		expect(local === null, "localStorage holds a token");
		const h = partOf(alice.token, 0), c = partOf(alice.token, 1);
		expect(h.alg === "RS256" && h.typ === "at+jwt", `header ${JSON.stringify(h)}`);
		expect(c.iss === ISSUER && c.aud === AUDIENCE && c.sub === `alice-${RUN}` && c.exp > c.iat,
			`claims ${JSON.stringify(c)}`);
	});
	await step("oidc: Buy with the provider's RS256 token answers 202 and the order is followed live", async () => {
		const sel = `.item[data-item-id="${ITEM}"] .buy`;
		await alice.page.waitForSelector(`${sel}:not([disabled])`, { timeout: 15000 });
		await alice.page.click(sel);
		await alice.page.waitForSelector('#order[data-status="PENDING"]', { timeout: 20000 });
		await alice.page.waitForSelector('#order[data-live="sse"]', { timeout: 10000 });
		const statuses = alice.purchases.map((p) => p.status).join(",");
		expect(statuses === "202", `the purchase requests answered ${statuses}`);
	});
	await step("oidc: the order cancelled with the provider's token elsewhere turns CANCELLED on the page live", async () => {
		const id = alice.purchases[0].body.orderId;
		// The page shows the 202's PENDING at once; the cancel answers 409
		// ORDER_PROCESSING until the consumer has recorded the order: ask
		// again, bounded (20 s).
		let r;
		for (let i = 0; i < 100; i++) {
			r = await fetch(`${EDGE}/api/flash-sales/orders/${id}/cancel`, {
				method: "POST", headers: { Authorization: `Bearer ${alice.token}` },
			});
			if (r.status !== 409 || (await r.clone().json()).error !== "ORDER_PROCESSING")
				break;
			await new Promise((ok) => setTimeout(ok, 200));
		}
		expect(r.status === 200, `the cancel answered ${r.status}`);
		await alice.page.waitForSelector('#order[data-status="CANCELLED"]', { timeout: 15000 });
	});
	await alice.page.screenshot({ path: join(SHOTS, "oidc-signed-in.png") });
	await step("oidc: Sign out forgets the token and offers the sign-in again", async () => {
		await alice.page.click("#signout");
		await alice.page.waitForSelector("#oidc:not([hidden])", { timeout: 5000 });
		const left = await alice.page.evaluate(() => [sessionStorage.getItem("fs.auth"), localStorage.getItem("fs.auth")]);
		expect(left[0] === null && left[1] === null, `still stored: ${left}`);
	});
	await alice.ctx.close();

	await step("oidc: a token signed with the provider's ES256 key buys", async () => {
		await admin("POST", "/alg/ES256");
		try {
			const bob = await signIn(`bob-${RUN}`);
			const h = partOf(bob.token, 0);
			const keys = await admin("GET", "/keys");
			expect(h.alg === "ES256" && h.kid === keys.signing.ES256, `header ${JSON.stringify(h)}`);
			const st = await buyWith(bob.token);
			expect(st === 202, `the purchase answered ${st}`);
			await bob.ctx.close();
		} finally {
			await admin("POST", "/alg/RS256");
		}
	});

	/* The rotation: tokens of the current RSA key (one of them short-lived), then new keys. */
	let old1, old2, oldShort, oldKid, newKid;
	const ready = await step("oidc: three tokens of the provider's current RSA key, one for 30 s", async () => {
		const a = await signIn(`rot-old1-${RUN}`), b = await signIn(`rot-old2-${RUN}`);
		old1 = a.token;
		old2 = b.token;
		await a.ctx.close();
		await b.ctx.close();
		await admin("POST", "/ttl/30");
		try {
			const c = await signIn(`rot-short-${RUN}`);
			oldShort = c.token;
			await c.ctx.close();
		} finally {
			await admin("POST", "/ttl/600");
		}
		oldKid = partOf(old1, 0).kid;
		const short = partOf(oldShort, 1);
		expect(short.exp - short.iat === 30, `the short token's claims ${JSON.stringify(short)}`);
		expect([old2, oldShort].every((t) => partOf(t, 0).kid === oldKid) && fileKids().includes(oldKid),
			`kid ${oldKid}; file ${fileKids()}`);
	});
	if (!ready)
		return;
	await step("oidc: keys rotated at the provider: the fetch lists the new key beside the old one", async () => {
		newKid = (await admin("POST", "/rotate")).signing.RS256;
		expect(newKid !== oldKid, "the provider kept its key");
		await untilFile((k) => k.includes(newKid) && k.includes(oldKid), `new kid ${newKid}`);
	});
	await step("oidc: a token of the new key buys", async () => {
		const s = await signIn(`rot-new-${RUN}`);
		expect(partOf(s.token, 0).kid === newKid, `kid ${partOf(s.token, 0).kid}`);
		const st = await buyWith(s.token);
		await s.ctx.close();
		expect(st === 202, `the purchase answered ${st}`);
	});
	await step("oidc: a token of the old key still buys while the file lists it", async () => {
		const st = await buyWith(old1);
		expect(st === 202, `the purchase answered ${st}`);
	});
	/* Expired means past exp and the 30 s of clock skew lib/token allows (FS_TOKEN_LEEWAY). */
	await step("oidc: a token of the old key is accepted until it expires, then 401", async () => {
		const exp = (partOf(oldShort, 1).exp + 30) * 1000;
		expect(Date.now() < exp - 1000, "the 30 s token expired before the rotation was fetched (a slow machine)");
		const first = await buyWith(oldShort);
		expect(first === 202, `before its exp the purchase answered ${first}`);
		const seen = [];
		for (;;) {
			const st = await buyWith(oldShort);
			seen.push(st);
			if (st === 401)
				break;
			expect(st === 409 && Date.now() < exp + 10000, `the purchases answered ${seen.join(",")}`);
			await sleep(500);
		}
		expect(Date.now() >= exp - 1000, `401 ${Math.round((exp - Date.now()) / 1000)} s before its exp`);
		expect(fileKids().includes(oldKid), "the old key left the file meanwhile");
	});
	await step("oidc: the old key removed at the provider: the fetch drops it from the file", async () => {
		const keys = await admin("POST", "/retire");
		expect(!keys.kids.includes(oldKid), `the provider still lists ${oldKid}`);
		await untilFile((k) => !k.includes(oldKid) && k.includes(newKid), `old kid ${oldKid} gone`);
		const own = fileKids();
		expect(own.includes("stack-ed25519") && own.includes("stack-hs256"), `the stack's own keys are gone: ${own}`);
	});
	/* Each process looks at the file at most once a second: 401 within a few. */
	await step("oidc: a token of the removed key gets 401", async () => {
		const deadline = Date.now() + 8000, seen = [];
		for (;;) {
			const st = await buyWith(old2);
			seen.push(st);
			if (st === 401)
				break;
			expect(Date.now() < deadline, `the purchases answered ${seen.join(",")}`);
			await sleep(200);
		}
	});
}

try {
	await main();
} catch (e) {
	notOk("oidc: the test ran to its end", e && e.stack ? e.stack : String(e));
} finally {
	if (browser)
		await browser.close();
}
process.exit(failed ? 1 : 0);
