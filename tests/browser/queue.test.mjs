/*
 * The waiting room in Debian's Chromium (docs/QUEUE.md): three shoppers
 * of a one-unit sale join before the opening (the proof of work runs in
 * the page's worker) and are told when the draw happens; at the opening
 * each page computes its place from the published seed and checks the
 * seed against the commitment; the first in line gets a pass and buys
 * with it (202); the others see "sold out" from the status document alone;
 * the buyer cancels, units come back and waiting resumes; the second
 * lets the pass lapse ("Your turn passed", no Buy ever again); the third
 * buys. Refreshes and a second device keep each place. English and
 * Vietnamese.
 *
 * The roles follow the draw: the three user ids are ranked by
 * HMAC-SHA256(seed, sub) computed here (node:crypto, independent of the
 * page's WebCrypto), so the test knows who comes first.
 *
 * Two ways to run it, the same steps:
 * - against the stack, through the edge (tests/integration/single/queue_page.sh):
 *   FLASHSALE_EDGE_URL, FS_TEST_QUEUE_SALE, FS_TEST_QUEUE_ITEM, FS_TEST_QUEUE_SEED
 *   (hex, read from PostgreSQL), FS_TEST_QUEUE_PASS_S; the sale has one unit,
 *   admitMultiple 1, and opens some 30 s later;
 * - FS_TEST_QUEUE_SIM=1, with no stack: the page is served from this
 *   checkout at http://localhost and its origin is simulated here
 *   (context.route): the status document, the join (checking the proof of
 *   work), passes, the purchase gate and a pacer that follows QUEUE.md's
 *   formula. It checks the page's side alone.
 *
 * With a pacer that admits every place at the opening (nobody waits), the
 * steps that need someone waiting are skipped, the pacing step fails, and a
 * fourth shopper joining late (behind every drawn place) shows sold out
 * while waiting and waiting resumed instead; FS_TEST_QUEUE_SIM_GREEDY=1
 * makes the simulated pacer do that. FS_TEST_QUEUE_SIM_OPENS_S (25) sets
 * how long after the start the simulated sale opens: a loaded machine
 * needs more to start its three browsers.
 *
 * Prints TAP lines like shop.test.mjs; exits 0 when all passed.
 */
import { createHash, createHmac, randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const SIM = process.env.FS_TEST_QUEUE_SIM === "1";
const EDGE = SIM ? "http://localhost" : process.env.FLASHSALE_EDGE_URL;
const ARTIFACTS = process.env.FLASHSALE_ARTIFACTS || "tests/artifacts";
const SHOTS = join(ARTIFACTS, "browser");
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync"];
const LATE_BASE = 2 ** 52;

let failed = 0;
const ok = (name) => console.log(`ok - ${name}`);
const notOk = (name, why) => {
	failed++;
	console.log(`not ok - ${name}`);
	for (const line of String(why || "").replace(/\x1b\[[0-9;]*m/g, "").split("\n"))
		if (line)
			console.log(`# ${line}`);
};
const diag = (s) => console.log(`# ${s}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* The draw of an account, as QUEUE.md says: the first 52 bits of HMAC-SHA256(seed, sub). */
function draw(seedHex, sub) {
	const mac = createHmac("sha256", Buffer.from(seedHex, "hex")).update(sub).digest();
	return Number(mac.readBigUInt64BE(0) >> 12n);
}

/* --- the simulated origin (FS_TEST_QUEUE_SIM=1) ------------------ */

const STATIC = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "static");
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css" };

/*
 * One sale with one item and a waiting room, its origin answers and a
 * pacer stepping every 250 ms: budget = floor(units left) - passes
 * outstanding (admitMultiple 1), as in QUEUE.md, where a place admitted
 * that has not asked for its pass yet counts as one for passSeconds (or
 * one unit would admit everyone before the first page asks).
 */
class Sim {
	constructor(o) {
		const now = Date.now();
		this.sale = "4242";
		this.item = "9001";
		this.startsMs = Math.ceil((now + o.opensInMs) / 1000) * 1000;
		this.preMs = now - 60000;
		this.endsMs = now + 3600000;
		this.passS = o.passSeconds;
		this.powBits = o.powBits;
		this.queue = o.queue !== false;
		this.greedy = !!o.greedy;
		this.seed = randomBytes(32).toString("hex");
		this.commit = createHash("sha256").update(Buffer.from(this.seed, "hex")).digest("hex");
		this.units = 1;
		this.left = 1;
		this.places = new Map();	/* sub -> score */
		this.late = 0;
		this.drawn = 0;
		this.admitted = 0;
		this.through = -1;
		this.rate = 0;
		this.passes = new Map();	/* sub -> expiry ms */
		this.admittedAt = new Map();	/* sub -> ms */
		this.orders = new Map();	/* orderId -> { sub, status, expiresAt } */
		this.joins = new Map();		/* sub -> joins answered */
		this.timer = setInterval(() => this.step(), 250);
	}

	stop() {
		clearInterval(this.timer);
	}

	line() {
		return [...this.places].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
	}

	holds(sub) {
		return [...this.orders.values()].some((o) => o.sub === sub && (o.status === "PENDING" || o.status === "PAID"));
	}

	step() {
		const now = Date.now();
		if (now < this.startsMs)
			return;
		if (this.drawn === 0)
			this.drawn = [...this.places.values()].filter((s) => s < LATE_BASE).length;
		/* greedy: QUEUE.md's formula to the letter (only issued passes count), to check the test's fallback. */
		const out = [...this.admittedAt].filter(([sub, at]) => this.passes.has(sub)
			? this.passes.get(sub) > now && !this.holds(sub) : !this.greedy && now - at < this.passS * 1000).length;
		const n = Math.max(0, Math.min(this.left - out, this.places.size - this.admitted));
		const line = this.line();
		for (let i = this.admitted; i < this.admitted + n; i++)
			this.admittedAt.set(line[i][0], now);
		this.admitted += n;
		if (this.admitted > 0)
			this.through = line[this.admitted - 1][1];
		this.rate = n * 4;
	}

	state(now) {
		if (now >= this.endsMs)
			return "ended";
		if (now < this.preMs)
			return "before";
		if (now < this.startsMs)
			return "prequeue";
		return this.left === 0 ? "soldout" : "open";
	}

	statusDoc() {
		const now = Date.now(), open = now >= this.startsMs, iso = (t) => new Date(t).toISOString();
		return {
			sale: Number(this.sale), serverTime: now, preQueueAt: iso(this.preMs), opensAt: iso(this.startsMs),
			endsAt: iso(this.endsMs), state: this.state(now), seedCommit: this.commit, seed: open ? this.seed : null,
			drawn: this.drawn, joined: this.places.size, admitted: this.admitted, through: this.through,
			rate: this.rate, unitsLeft: this.left, passesOut: this.passes.size, passSeconds: this.passS,
			powBits: this.powBits,
		};
	}

	saleDoc() {
		const iso = (t) => new Date(t).toISOString(), d = this.statusDoc();
		return {
			saleId: Number(this.sale), name: "Waiting room sale", startsAt: iso(this.startsMs), endsAt: iso(this.endsMs),
			paymentWindowSeconds: 600, serverTime: Date.now(),
			items: [{ itemId: Number(this.item), name: "Phone X", priceMinor: 4990000, currency: "VND", quantity: 1,
				state: Date.now() < this.startsMs ? "upcoming" : this.left > 0 ? "on_sale" : "sold_out" }],
			queue: this.queue ? { preQueueAt: d.preQueueAt, opensAt: d.opensAt, passSeconds: this.passS,
				powBits: this.powBits, seedCommit: this.commit, seed: d.seed } : undefined,
		};
	}

	join(sub, body) {
		const now = Date.now();
		const nonce = body && body.pow;
		if (this.powBits > 0) {
			if (typeof nonce !== "string" || !/^[A-Za-z0-9_-]{1,32}$/.test(nonce))
				return [400, { error: "BAD_POW", message: "missing" }];
			const d = createHash("sha256").update(`fsq1|${this.sale}|${sub}|${nonce}`).digest();
			if (d.readUInt32BE(0) >>> (32 - this.powBits) !== 0)
				return [400, { error: "BAD_POW", message: "too weak" }];
		}
		if (!this.places.has(sub))
			this.places.set(sub, now < this.startsMs ? draw(this.seed, sub) : LATE_BASE + ++this.late);
		this.joins.set(sub, (this.joins.get(sub) || 0) + 1);
		const score = this.places.get(sub), drawn = score < LATE_BASE;
		const open = now >= this.startsMs;
		return [200, { sale: Number(this.sale), ticket: `t.${sub}`, score: open ? score : null,
			rank: open ? this.line().findIndex(([s]) => s === sub) : null, drawn }];
	}

	pass(ticket) {
		const sub = typeof ticket === "string" && ticket.startsWith("t.") ? ticket.slice(2) : null;
		const now = Date.now();
		if (!sub)
			return [403, { error: "BAD_TICKET", message: "bad ticket" }];
		if (!this.places.has(sub))
			return [404, { error: "NOT_IN_QUEUE", message: "not in line" }];
		const rank = this.line().findIndex(([s]) => s === sub);
		if (rank >= this.admitted)
			return [409, { error: "NOT_YET", message: "not yet", rank, admitted: this.admitted }];
		if (this.passes.has(sub)) {
			const exp = this.passes.get(sub);
			return exp > now ? [200, { pass: `p.${sub}.${exp}`, expiresAt: exp }] : [410, { error: "PASS_LAPSED", message: "lapsed" }];
		}
		if (this.left === 0)
			return [410, { error: "SOLD_OUT", message: "sold out" }];
		const exp = now + this.passS * 1000;
		this.passes.set(sub, exp);
		return [200, { pass: `p.${sub}.${exp}`, expiresAt: exp }];
	}

	purchase(pass, bearerSub) {
		const m = /^p\.(.+)\.(\d+)$/.exec(pass || "");
		if (!this.queue && !bearerSub)
			return [401, { error: "UNAUTHENTICATED", message: "no token" }];
		if (this.queue && (!m || Number(m[2]) <= Date.now() || this.passes.get(m[1]) !== Number(m[2])))
			return [403, { error: "NOT_ADMITTED", message: "no pass" }];
		const sub = this.queue ? m[1] : bearerSub;
		const held = [...this.orders].find(([, o]) => o.sub === sub && o.status === "PENDING");
		if (held)
			return [409, { error: "ALREADY_PURCHASED", message: "have one", orderId: held[0] }];
		if (this.left === 0)
			return [410, { error: "SOLD_OUT", message: "sold out" }];
		this.left--;
		const orderId = randomUUID(), expiresAt = new Date(Date.now() + 600000).toISOString();
		this.orders.set(orderId, { sub, status: "PENDING", expiresAt });
		return [202, { orderId, status: "PENDING", expiresAt }];
	}

	/* The origin's answer to one request, or null: a file of the page. */
	answer(method, url, headers, body) {
		const p = url.pathname, A = "/api/flash-sales", S = `${A}/sales/${this.sale}`;
		const bearer = (headers.authorization || "").replace(/^Bearer /, "");
		const sub = bearer.startsWith("tok.") ? bearer.slice(4) : null;
		let json = {};
		try {
			json = body ? JSON.parse(body) : {};
		} catch (e) {
			json = null;
		}
		const order = (id) => {
			const o = this.orders.get(id);
			return o && o.sub === sub ? [200, { orderId: id, itemId: Number(this.item), status: o.status, expiresAt: o.expiresAt }]
				: [404, { error: "NOT_FOUND", message: "no such order" }];
		};
		if (p === "/api/time")
			return [200, { now: Date.now() }];
		if (p === `${A}/signin` && method === "POST")
			return [200, { token: `tok.${json.userId}`, userId: json.userId, expiresAt: new Date(Date.now() + 3600000).toISOString() }];
		if (p === S)
			return [200, this.saleDoc()];
		if (p === `${S}/stock`)
			return [200, { saleId: Number(this.sale), items: [{ itemId: Number(this.item), quantity: this.units, left: this.left, soldOut: this.left === 0 }] }];
		if (p === `${S}/reveal`)
			return Date.now() < this.startsMs ? [425, { error: "SALE_NOT_STARTED", message: "not yet" }]
				: [200, { saleId: Number(this.sale), items: [{ itemId: Number(this.item), purchaseUrl: `${A}/items/${this.item}/purchase?sale=${this.sale}&q=1&sig=sim` }] }];
		if (p.startsWith(`${S}/queue`) && !this.queue)
			return [404, { error: "NO_QUEUE", message: "no waiting room" }];
		if (p === `${S}/queue` && method === "GET")
			return [200, this.statusDoc()];
		if (p === `${S}/queue` && method === "POST")
			return sub ? this.join(sub, json) : [401, { error: "UNAUTHENTICATED", message: "no token" }];
		if (p === `${S}/queue/pass` && method === "POST")
			return this.pass(json && json.ticket);
		if (p === `${A}/items/${this.item}/purchase` && method === "POST")
			return this.purchase(headers["flashsale-pass"], sub);
		if (p === `${S}/my-order`) {
			const mine = [...this.orders].find(([, o]) => o.sub === sub);
			return mine ? order(mine[0]) : [404, { error: "NOT_FOUND", message: "none" }];
		}
		let m = /^\/api\/flash-sales\/orders\/([0-9a-f-]{36})(\/[a-z]+)?$/.exec(p);
		if (m && !m[2])
			return order(m[1]);
		if (m && m[2] === "/cancel") {
			const o = this.orders.get(m[1]);
			if (!o || o.sub !== sub)
				return [404, { error: "NOT_FOUND", message: "no such order" }];
			if (o.status === "PENDING") {
				o.status = "CANCELLED";
				this.left++;
			}
			return order(m[1]);
		}
		if (m)
			return [404, { error: "NOT_FOUND", message: "no stream here" }];
		return p.startsWith("/api/") ? [404, { error: "NOT_FOUND", message: p }] : null;
	}

	async route(route) {
		const r = route.request(), url = new URL(r.url());
		const ans = this.answer(r.method(), url, r.headers(), r.postData());
		if (ans)
			return route.fulfill({ status: ans[0], contentType: "application/json", body: JSON.stringify(ans[1]) });
		const file = normalize(join(STATIC, url.pathname === "/" ? "index.html" : url.pathname));
		try {
			return route.fulfill({ status: 200, contentType: TYPES[file.slice(file.lastIndexOf("."))] || "text/plain",
				body: file.startsWith(STATIC) ? readFileSync(file) : "" });
		} catch (e) {
			return route.fulfill({ status: 404, body: "" });
		}
	}
}

/* --- shoppers ---------------------------------------------------- */

async function shopper(label, opts, sim) {
	const dir = mkdtempSync(join(tmpdir(), `fs-chromium-q${label}-`));
	const ctx = await chromium.launchPersistentContext(dir, {
		executablePath: "/usr/bin/chromium", headless: true, args: ARGS, viewport: opts.viewport,
		locale: opts.locale, deviceScaleFactor: opts.scale || 1, isMobile: !!opts.mobile, hasTouch: !!opts.mobile,
	});
	if (sim)
		await ctx.route("http://localhost/**", (route) => sim.route(route));
	/* The panel's phases with their times, for a failure's diagnostics. */
	await ctx.addInitScript(() => {
		window.__phases = [];
		const t0 = Date.now();
		let last = null;
		new MutationObserver(() => {
			const q = document.getElementById("queue");
			const p = q && q.dataset.phase;
			if (p && p !== last)
				window.__phases.push(`${last = p}@${Date.now() - t0}ms`);
		}).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-phase"] });
	});
	const page = ctx.pages()[0] || (await ctx.newPage());
	const log = { api: [], errors: [], purchases: [], answers: [] };
	page.on("request", (r) => {
		const u = new URL(r.url());
		if (u.pathname.startsWith("/api/"))
			log.api.push({ at: Date.now(), method: r.method(), path: u.pathname });
		if (u.pathname.endsWith("/purchase"))
			log.purchases.push({ pass: r.headers()["flashsale-pass"] || null, auth: r.headers().authorization || null });
	});
	page.on("pageerror", (e) => log.errors.push(e.message));
	/* The origin's answers to the page's own requests (join, pass, purchase), for diagnostics. */
	page.on("response", async (r) => {
		if (r.request().method() !== "POST" || !new URL(r.url()).pathname.startsWith("/api/"))
			return;
		const body = await r.text().catch(() => "");
		log.answers.push(`${r.request().method()} ${new URL(r.url()).pathname} ${r.status()} ${body.slice(0, 200)}`);
	});
	return { label, ctx, page, log, dir, ...opts };
}

async function close(s) {
	if (!s)
		return;
	await s.ctx.close().catch(() => {});
	rmSync(s.dir, { recursive: true, force: true });
}

async function shot(s, name) {
	const path = join(SHOTS, name);
	await s.page.screenshot({ path, fullPage: true });
	diag(`screenshot ${path}`);
}

async function pageState(s) {
	const answers = s.log.answers.slice(-3).map((a) => `\nanswer ${a}`).join("");
	try {
		return answers + "\n" + await s.page.evaluate(() => {
			const q = document.getElementById("queue");
			return `page ${location.href}; queue ${JSON.stringify(q.dataset)} "${document.getElementById("queue-status").textContent}"\n` +
				`phases ${window.__phases.join(" ")}`;
		});
	} catch (e) {
		return `page state unavailable: ${e && e.message ? e.message.split("\n")[0] : e}`;
	}
}

async function step(name, fn, s) {
	try {
		const r = await fn();
		if (r === false)
			notOk(name, "the check did not hold (details above)" + (s ? "\n" + await pageState(s) : ""));
		else
			ok(name);
		return r !== false;
	} catch (e) {
		const why = e && e.message ? e.message.split("\n").slice(0, 6).join("\n") : String(e);
		notOk(name, why + (s ? "\n" + await pageState(s) : ""));
		return false;
	}
}

/*
 * A step that needs admission paced to the units (someone still waiting
 * while the first buys): skipped, saying why, when the pacer admitted
 * everyone at the opening (that step failed already).
 */
async function pacedStep(paced, name, fn, s) {
	if (paced)
		return step(name, fn, s);
	ok(`${name} # SKIP nobody waits: the pacer admitted more places than units at the opening (failed above)`);
	return false;
}

const phase = (s, want, timeout) => s.page.waitForSelector(`#queue[data-phase="${want}"]`, { timeout: timeout || 10000 });
const queueText = (s) => s.page.textContent("#queue-status");
const buyButton = (s, item) => `.item[data-item-id="${item}"] .buy`;

async function signIn(s, user) {
	await s.page.fill("#user-id", user);
	await s.page.click("#signin-button");
	await s.page.waitForSelector("#whoami:not([hidden])", { timeout: 10000 });
}

/* Origin requests of a shopper's page other than the documents the edge keeps. */
function ownRequests(s, since) {
	return s.log.api.filter((r) => r.at >= since && (r.method !== "GET" || /\/my-order$|\/orders\//.test(r.path)));
}

/* The opening time as the shopper's page words it (its second, local time; the clocks here agree). */
function localTime(ms, locale) {
	const whole = Math.round(ms / 1000) * 1000;
	return new Date(Math.abs(ms - whole) < 250 ? whole : ms).toLocaleTimeString(locale, { timeStyle: "medium" });
}

/* --- the journey ------------------------------------------------- */

async function journey(env, sim) {
	const { sale, item, seed, passS } = env;
	/*
	 * Three accounts, ranked by the draw: users[0] is first in line. The
	 * last draws high (>= 0.9 of the range) and the others below 0.6, so
	 * that the page's estimate for it (drawn x score / 2^52 - admitted) is
	 * 2 ahead, then 1: an estimate that moves, with its minutes.
	 */
	let users;
	do {
		const tag = `${sale}-${randomBytes(3).toString("hex")}`;
		users = [0, 1, 2].map((i) => `q${i}-${tag}`).sort((x, y) => draw(seed, x) - draw(seed, y));
	} while (draw(seed, users[2]) < 0.9 * LATE_BASE || draw(seed, users[1]) >= 0.6 * LATE_BASE);
	diag(`line: ${users.map((u) => `${u} ${draw(seed, u)}`).join(", ")}`);
	const roles = [
		{ label: "first", locale: "en-GB", lang: "en", viewport: { width: 1280, height: 900 } },
		{ label: "second", locale: "vi-VN", lang: "vi", viewport: { width: 390, height: 844 }, scale: 2, mobile: true },
		{ label: "third", locale: "en-GB", lang: "en", viewport: { width: 1280, height: 900 } },
	];
	const sh = [];
	try {
		for (let i = 0; i < 3; i++) {
			sh[i] = await shopper(roles[i].label, roles[i], sim);
			sh[i].user = users[i];
			await sh[i].page.goto(`${EDGE}/?sale=${sale}&lang=${roles[i].lang}`);
		}
		const [a, b, c] = sh;
		const status = async () => sim ? sim.statusDoc() : (await fetch(`${EDGE}/api/flash-sales/sales/${sale}/queue`)).json();
		const opensMs = Date.parse((await status()).opensAt);
		if (Date.now() > opensMs - 12000)
			throw new Error(`the sale opens in ${opensMs - Date.now()} ms: too soon for the test`);

		await step("before signing in, the page asks the shopper to sign in to join", async () => {
			await phase(a, "signin");
			return (await queueText(a)) === "Sign in to join the waiting room.";
		}, a);
		for (const s of sh)
			await signIn(s, s.user);
		const joinedEn = `You are in the waiting room. At ${localTime(opensMs, "en-GB")} everyone here gets a random place in line.`;
		const joinedVi = `Bạn đang ở trong phòng chờ. Lúc ${localTime(opensMs, "vi-VN")}, mọi người ở đây sẽ được xếp một chỗ ngẫu nhiên trong hàng.`;
		await step("before the opening each page solves the proof of work, joins, and says when the draw is", async () => {
			for (const s of sh)
				await phase(s, "joined", 30000);
			const texts = await Promise.all(sh.map(queueText));
			diag(`en: "${texts[0]}"`);
			diag(`vi: "${texts[1]}"`);
			const joins = sh.map((s) => s.log.api.filter((r) => r.method === "POST" && r.path.endsWith("/queue")).length);
			return texts[0] === joinedEn && texts[2] === joinedEn && texts[1] === joinedVi && joins.every((n) => n === 1);
		}, b);
		await shot(a, "q01-joined.png");
		await shot(b, "q01-joined-phone-vi.png");
		await step("the page shows the draw's commitment, the one in the status document", async () => {
			const text = await a.page.textContent("#queue-commit");
			const commit = (await status()).seedCommit;
			diag(`"${text}"`);
			return /^[0-9a-f]{64}$/.test(commit) && text === `The draw's seed commitment (SHA-256): ${commit}`;
		}, a);
		await step("the ticket is kept in localStorage per sale and shopper; a refresh joins no more", async () => {
			const since = Date.now();
			await c.page.reload();
			await phase(c, "joined");
			await sleep(1500);
			const kept = await c.page.evaluate(([k]) => JSON.parse(localStorage.getItem(k) || "null"), [`fs.queue.${sale}.${c.user}`]);
			const again = c.log.api.filter((r) => r.at >= since && r.method === "POST");
			diag(`after the refresh: ${again.map((r) => `${r.method} ${r.path}`).join(", ") || "no join"}`);
			return kept !== null && typeof kept.ticket === "string" && again.length === 0;
		}, c);

		/* The opening: the draw. */
		const drawn = await step("at the opening every page draws its own place from the published seed", async () => {
			const wait = opensMs - Date.now() + 15000;
			for (const s of sh)
				await s.page.waitForSelector(`#queue[data-score]`, { timeout: wait });
			const scores = await Promise.all(sh.map((s) => s.page.getAttribute("#queue", "data-score")));
			diag(`page scores ${scores.join(", ")}; here ${users.map((u) => draw(seed, u)).join(", ")}`);
			return scores.every((x, i) => Number(x) === draw(seed, users[i]));
		}, c);
		await step("the draw check: the seed is shown and its SHA-256 equals the commitment, checked in the page", async () => {
			await c.page.waitForSelector(`#queue-draw[data-ok="true"]`, { timeout: 5000 });
			const text = await c.page.textContent("#queue-draw");
			diag(`"${text}"`);
			return text === `Check the draw: seed ${seed}; its SHA-256 equals the commitment ✓ (checked on this page).`;
		}, c);

		const paced = await step("admission is paced to the units: one unit, one place admitted in the first seconds", async () => {
			await sleep(Math.max(0, opensMs + 4000 - Date.now()));
			const d = await status();
			diag(`4 s after the opening: admitted ${d.admitted} of ${d.joined}, passes out ${d.passesOut}, units left ${d.unitsLeft}`);
			return d.admitted === 1;
		});

		/* The first in line: admitted, a pass, Buy. */
		const buyer = await step("the first in line is admitted: one pass request, Buy with the pass's countdown", async () => {
			await phase(a, "pass", 10000);
			await a.page.waitForSelector(`${buyButton(a, item)}:not([disabled])`, { timeout: 10000 });
			const left = Number(await a.page.getAttribute("#queue-pass-countdown", "data-left"));
			const passAsks = a.log.api.filter((r) => r.path.endsWith("/queue/pass")).length;
			diag(`"${await queueText(a)}", pass valid ${left} s, ${passAsks} pass request(s)`);
			/* One, and the page's ask again every 5 s while it holds the pass unused. */
			return passAsks === 1 + Math.floor((passS - left) / 5) && left > passS - 5 && left <= passS;
		}, a);
		await pacedStep(paced, "the others wait: about N ahead, units left, their own place's estimate", async () => {
			await phase(c, "waiting", 5000);
			const text = await queueText(c);
			const ahead = Number(await c.page.getAttribute("#queue-status", "data-ahead"));
			diag(`third: "${text}"`);
			return /^About 2 people ahead of you · 1 unit left( · your turn in about \d+ minutes?)?$/.test(text) && ahead === 2;
		}, c);
		let aheadBefore = null;
		await pacedStep(paced, "while waiting a page sends nothing to the origin but the edge-cached documents", async () => {
			const since = Date.now();
			aheadBefore = Number(await c.page.getAttribute("#queue-status", "data-ahead"));
			await sleep(3000);
			const polls = c.log.api.filter((r) => r.at >= since && r.path.endsWith("/queue")).length;
			const own = ownRequests(c, since);
			diag(`3 s waiting: ${polls} status reads, other requests: ${own.map((r) => `${r.method} ${r.path}`).join(", ") || "none"}`);
			return own.length === 0 && polls >= 2 && polls <= 4;
		}, c);
		if (buyer) {
			await shot(a, "q02-your-turn.png");
			await step("Buy carries the pass (Flashsale-Pass), 202, the order view", async () => {
				await a.page.click(buyButton(a, item));
				await a.page.waitForSelector(`#order[data-status="PENDING"], #order[data-status="PROCESSING"]`, { timeout: 10000 });
				const sent = a.log.purchases[a.log.purchases.length - 1];
				const pass = await a.page.evaluate(([k]) => JSON.parse(localStorage.getItem(k)).pass, [`fs.queue.${sale}.${a.user}`]);
				diag(`purchase carried pass ${sent.pass ? sent.pass.slice(0, 16) + "…" : "none"}, Authorization ${sent.auth ? "yes" : "no"}`);
				return sent.pass === pass && typeof pass === "string";
			}, a);
			await shot(a, "q03-bought.png");
		}

		/*
		 * When everyone in line was admitted at the opening, nobody waits:
		 * a fourth shopper joins late (behind every drawn place) once the
		 * unit is sold, and waits, sold out, until the unit comes back.
		 */
		let late = null;
		if (!paced) {
			late = await shopper("late", roles[2], sim);
			sh.push(late);
			late.user = `q3-${users[0].slice(3)}`;
			await late.page.goto(`${EDGE}/?sale=${sale}&lang=en`);
			await signIn(late, late.user);
			await step("a late joiner: its place comes from the join's answer, behind every drawn one (2^52 + n)", async () => {
				await late.page.waitForSelector(`#queue[data-score]`, { timeout: 20000 });
				const score = Number(await late.page.getAttribute("#queue", "data-score"));
				diag(`late score ${score} = 2^52 + ${score - LATE_BASE}`);
				return score > LATE_BASE;
			}, late);
			await step("sold out while waiting (the late joiner): said from the status document alone", async () => {
				await phase(late, "soldout", 8000);
				const since = Date.now();
				await sleep(3000);
				const en = await queueText(late);
				const own = ownRequests(late, since);
				diag(`"${en}"; own requests: ${own.map((r) => `${r.method} ${r.path}`).join(", ") || "none"}`);
				return en === "Sold out. If units come back, you keep your place and waiting resumes." && own.length === 0;
			}, late);
			await shot(late, "q04-late-sold-out.png");
		}

		/* Sold out while waiting. */
		await pacedStep(paced, "sold out while waiting: the waiting pages say so from the status document alone", async () => {
			const since = Date.now();
			await phase(b, "soldout", 8000);
			await phase(c, "soldout", 8000);
			const vi = await queueText(b), en = await queueText(c);
			diag(`vi: "${vi}"; en: "${en}"`);
			return en === "Sold out. If units come back, you keep your place and waiting resumes." &&
				vi === "Đã hết hàng. Nếu có hàng trở lại, bạn vẫn giữ chỗ và tiếp tục chờ." &&
				ownRequests(b, since).length === 0 && ownRequests(c, since).length === 0;
		}, c);
		await shot(b, "q04-sold-out-phone-vi.png");
		await step("a refresh keeps the place (same score, no new join)", async () => {
			const since = Date.now();
			await c.page.reload();
			await c.page.waitForSelector(`#queue[data-score]`, { timeout: 10000 });
			const score = Number(await c.page.getAttribute("#queue", "data-score"));
			const joins = c.log.api.filter((r) => r.at >= since && r.method === "POST").length;
			return score === draw(seed, c.user) && joins === 0;
		}, c);
		await step("another device: a new join answers the same place", async () => {
			const d = await shopper("third-device", roles[2], sim);
			try {
				await d.page.goto(`${EDGE}/?sale=${sale}&lang=en`);
				await signIn(d, c.user);
				await d.page.waitForSelector(`#queue[data-score]`, { timeout: 30000 });
				const score = Number(await d.page.getAttribute("#queue", "data-score"));
				diag(`second device: score ${score}`);
				return score === draw(seed, c.user);
			} finally {
				await close(d);
			}
		}, c);

		/* Units come back: the buyer cancels; once the buyer's pass is no longer outstanding, the line moves. */
		if (buyer) {
			await step("the buyer cancels: a unit comes back", async () => {
				await a.page.click("#cancel");
				await a.page.click("#cancel");
				await a.page.waitForSelector(`#order[data-status="CANCELLED"]`, { timeout: 20000 });
			}, a);
		}
		if (late) {
			await step("units come back: the late joiner waits again, then gets its pass and buys (202)", async () => {
				await phase(late, "pass", passS * 1000 + 20000);
				const seen = await late.page.evaluate(() => window.__phases.join(" "));
				await late.page.click(buyButton(late, item));
				await late.page.waitForSelector(`#order[data-status="PENDING"], #order[data-status="PROCESSING"]`, { timeout: 10000 });
				diag(`late joiner's phases: ${seen}`);
				return /soldout@\S+ (waiting@\S+ )?(turn@\S+ )?pass@/.test(seen) && /soldout@\S+ waiting@/.test(seen);
			}, late);
			await shot(late, "q05-late-bought.png");
		}
		await pacedStep(paced, "units come back: waiting resumes and the second is admitted (Vietnamese)", async () => {
			/* The buyer's pass, unused now, counts as outstanding until it expires. */
			await phase(c, "waiting", passS * 1000 + 15000);
			await phase(b, "pass", passS * 1000 + 15000);
			const vi = await queueText(b);
			await c.page.waitForFunction(() => /your turn in about/.test(document.getElementById("queue-status").textContent),
				null, { timeout: 5000 });
			const en = await queueText(c);
			diag(`second: "${vi}"; third: "${en}"`);
			return vi === "Đã đến lượt bạn: hãy bấm Mua ngay." &&
				/^About 1 person ahead of you · 1 unit left · your turn in about \d+ minutes?$/.test(en);
		}, b);
		await shot(b, "q05-your-turn-phone-vi.png");
		await pacedStep(paced, "the estimate moved: fewer people ahead of the third", async () => {
			const now = Number(await c.page.getAttribute("#queue-status", "data-ahead"));
			diag(`ahead ${aheadBefore} then ${now}`);
			return aheadBefore === 2 && now === 1;
		}, c);

		/* The second lets the pass lapse. */
		await step("a lapsed pass: \"Đã hết lượt của bạn.\", Buy is never offered again", async () => {
			await phase(b, "lapsed", passS * 1000 + 5000);
			const text = await queueText(b);
			const btn = await b.page.$eval(buyButton(b, item), (x) => ({ disabled: x.disabled, text: x.textContent }));
			await b.page.reload();
			await phase(b, "lapsed", 10000);
			await sleep(1500);
			const after = await b.page.$eval(buyButton(b, item), (x) => ({ disabled: x.disabled, text: x.textContent }));
			diag(`"${text}"; Buy ${JSON.stringify(btn)}, after a refresh ${JSON.stringify(after)}`);
			/* The button says the turn passed, or sold out when nothing is left (that comes first). */
			return text === "Đã hết lượt của bạn." && btn.disabled && /^(Đã hết lượt|Hết hàng)$/.test(btn.text) && after.disabled;
		}, b);
		await shot(b, "q06-lapsed-phone-vi.png");
		/*
		 * Issue 35, the several-items case: the line counts a pass whose page
		 * went quiet for 15 s as given up (its shopper left, say after their
		 * item sold out), so a page holding an unused pass asks for it again
		 * every 5 s; before, it asked once and a shopper who left held a place
		 * for passSeconds.
		 */
		await step("a page holding an unused pass asks for it again every 5 s, and not after it lapsed", async () => {
			const asks = b.log.api.filter((r) => r.path.endsWith("/queue/pass")).map((r) => r.at);
			const gaps = asks.slice(1).map((t, i) => t - asks[i]);
			diag(`${asks.length} pass request(s) over a pass of ${passS} s, ${gaps.join(", ")} ms apart`);
			return asks.length >= 2 && asks.length <= Math.ceil(passS / 5) + 2 &&
				gaps[gaps.length - 1] >= 4500 && gaps[gaps.length - 1] <= 10000 && asks[asks.length - 1] - asks[0] < passS * 1000;
		}, b);
		await pacedStep(paced, "the lapsed pass moves the line on: the third gets a pass and buys (202)", async () => {
			await phase(c, "pass", passS * 1000 + 15000);
			await c.page.waitForSelector(`${buyButton(c, item)}:not([disabled])`, { timeout: 10000 });
			await c.page.click(buyButton(c, item));
			await c.page.waitForSelector(`#order[data-status="PENDING"], #order[data-status="PROCESSING"]`, { timeout: 10000 });
			return (await queueText(c)) === "It was your turn, and you have an order.";
		}, c);
		await shot(c, "q07-third-bought.png");
		const errors = sh.flatMap((s) => s.log.errors);
		(errors.length === 0 ? ok : notOk)("no script errors on the waiting pages", errors.join("\n"));
	} finally {
		for (const s of sh)
			await close(s);
	}
}

/* A sale without a waiting room, on the same page: no panel, no queue request, Buy with the token as before. */
async function noQueue(sim) {
	const s = await shopper("plain", { locale: "en-GB", viewport: { width: 1280, height: 900 } }, sim);
	try {
		await s.page.goto(`${EDGE}/?sale=${sim.sale}&lang=en`);
		await signIn(s, `plain-${randomBytes(3).toString("hex")}`);
		await step("a sale without a waiting room: no panel, Buy with the token, 202, as before", async () => {
			await s.page.waitForSelector(`${buyButton(s, sim.item)}:not([disabled])`, { timeout: 10000 });
			const hidden = await s.page.$eval("#queue", (q) => q.hidden);
			await s.page.click(buyButton(s, sim.item));
			await s.page.waitForSelector(`#order[data-status="PENDING"]`, { timeout: 10000 });
			const sent = s.log.purchases[0];
			const asked = s.log.api.filter((r) => r.path.includes("/queue")).length;
			diag(`panel hidden ${hidden}; purchase with token ${!!sent.auth}, pass ${sent.pass}; ${asked} queue request(s)`);
			return hidden && !!sent.auth && sent.pass === null && asked === 0;
		}, s);
		(s.log.errors.length === 0 ? ok : notOk)("no script errors on the page of a sale without a waiting room", s.log.errors.join("\n"));
	} finally {
		await close(s);
	}
}

async function main() {
	mkdirSync(SHOTS, { recursive: true });
	if (SIM) {
		const plain = new Sim({ opensInMs: -5000, passSeconds: 10, powBits: 12, queue: false });
		try {
			await noQueue(plain);
		} finally {
			plain.stop();
		}
		const sim = new Sim({ opensInMs: Number(process.env.FS_TEST_QUEUE_SIM_OPENS_S || 25) * 1000, passSeconds: 10, powBits: 12,
			greedy: process.env.FS_TEST_QUEUE_SIM_GREEDY === "1" });
		try {
			await journey({ sale: sim.sale, item: sim.item, seed: sim.seed, passS: sim.passS }, sim);
		} finally {
			sim.stop();
		}
		return;
	}
	const env = { sale: process.env.FS_TEST_QUEUE_SALE, item: process.env.FS_TEST_QUEUE_ITEM,
		seed: process.env.FS_TEST_QUEUE_SEED, passS: Number(process.env.FS_TEST_QUEUE_PASS_S || 30) };
	if (!EDGE || !env.sale || !env.item || !/^[0-9a-f]{64}$/.test(env.seed || "")) {
		notOk("queue browser test environment", "FLASHSALE_EDGE_URL, FS_TEST_QUEUE_SALE, _ITEM, _SEED (or FS_TEST_QUEUE_SIM=1)");
		return;
	}
	await journey(env, null);
}

main().then(() => {
	process.exit(failed === 0 ? 0 : 1);
}, (e) => {
	notOk("queue browser test", e && e.stack ? e.stack : e);
	process.exit(1);
});
