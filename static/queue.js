/*
 * The waiting room of a sale that has one (the sale document's "queue",
 * docs/QUEUE.md). The shopper joins from preQueueAt (the proof of work
 * runs in a worker, pow.js); the place is kept in localStorage per sale
 * and shopper, and a join from another device gives the same place back.
 * At the opening the seed of the draw is published: the page computes its
 * own place score from it (HMAC-SHA256, WebCrypto) and checks it against
 * the commitment shown before. While waiting it reads only the status
 * document, which the edge keeps a second: no request of its own reaches
 * the origin. When admission reaches its place it asks once for a pass,
 * which the purchase carries. A sale without "queue" starts none of this.
 */
import { API, request, retryAfter } from "./api.js";
import { currentAuth } from "./auth.js";
import { changed } from "./changes.js";
import { serverNow } from "./clock.js";
import { currentOrder, LIVE } from "./order.js";
import { currentSale, currentSaleId } from "./sale.js";

/* Scores from 2^52 on are late joiners, in arrival order. */
const LATE_BASE = 2 ** 52;

/* The last status document, its times in ms; null before the first. */
let status = null;
/* The shopper's place: { sub, ticket, score, drawn, pass, expiresAt, lapsed }. */
let mine = null;
/* { tried, expected } while the proof of work runs. */
let solving = null;
let joining = false;
/* Server time before which no join is tried again (after a refusal). */
let joinAfter = 0;
/* A words key when the join or the pass was refused for good. */
let refusal = null;
let asking = false;
/* The `admitted` count at the last pass request answered "not yet". */
let askedAt = null;
/* Server time before which the pass is not asked for again (busy, sold out). */
let passAfter = 0;
/*
 * While the shopper holds a pass they have not used, the page asks for it
 * again this often (the same pass comes back): the line counts a pass whose
 * page went quiet for 15 s as given up (the shopper left, say after their
 * item sold out) and admits the next place in its stead (lib/queue.h,
 * FS_QUEUE_PASS_PING_MS).
 */
const PASS_PING_MS = 5000;
/* Server time of the next such request. */
let pingAfter = 0;
/* { seed, ok } once the published seed was checked against the commitment. */
let seedCheck = null;
let pollTimer = 0;
let polling = false;
/* { t, admitted } of the last two minutes' reads: the pace of the line. */
const pace = [];

function ms(v) {
	if (typeof v === "number")
		return v;
	return typeof v === "string" ? Date.parse(v) : NaN;
}

function num(v, fallback) {
	return typeof v === "number" && Number.isFinite(v) ? v : fallback;
}

/* The sale's waiting room settings, or null: a sale without one. */
function settings() {
	const s = currentSale();
	return s && s.queue && typeof s.queue === "object" ? s.queue : null;
}

export function hasQueue() {
	return settings() !== null;
}

function opensMs() {
	return status ? status.opensMs : ms(settings().opensAt);
}

function preMs() {
	return status ? status.preMs : ms(settings().preQueueAt);
}

/* --- the place, kept per sale and shopper ------------------------ */

function storageKey(sub) {
	return `fs.queue.${currentSaleId()}.${sub}`;
}

function save() {
	if (mine)
		localStorage.setItem(storageKey(mine.sub), JSON.stringify(mine));
}

/* The place of the signed-in shopper, read again when the shopper changes. */
function place() {
	const a = currentAuth();
	if (!a) {
		mine = null;
		return null;
	}
	if (mine && mine.sub === a.userId)
		return mine;
	let saved = null;
	try {
		saved = JSON.parse(localStorage.getItem(storageKey(a.userId)) || "null");
	} catch (e) {
		saved = null;
	}
	mine = saved && typeof saved.ticket === "string" ? Object.assign(saved, { sub: a.userId })
		: { sub: a.userId, ticket: null, score: null, drawn: false, pass: null, expiresAt: 0, lapsed: false };
	refusal = null;
	askedAt = null;
	joinAfter = 0;
	passAfter = 0;
	pingAfter = 0;
	return mine;
}

/* --- the status document, from the edge -------------------------- */

function schedule() {
	clearTimeout(pollTimer);
	if (!status)
		return;
	const now = serverNow();
	let wait;
	if (status.state === "ended" || now >= status.endsMs)
		return;
	if (now < status.preMs)
		wait = Math.min(10000, Math.max(1000, status.preMs - now));
	else if (now < status.opensMs)
		wait = Math.min(4000, Math.max(200, status.opensMs - now + 200));
	else
		wait = 1000;
	/* The jitter keeps many pages from asking in step. */
	pollTimer = setTimeout(pollStatus, wait + Math.random() * 500);
}

export async function pollStatus() {
	if (polling || !hasQueue())
		return;
	polling = true;
	const ans = await request("GET", `${API}/sales/${currentSaleId()}/queue`, { cache: "no-cache" });
	polling = false;
	if (ans.ok && typeof ans.body.state === "string") {
		const d = ans.body;
		status = Object.assign({}, d, {
			preMs: ms(d.preQueueAt), opensMs: ms(d.opensAt), endsMs: ms(d.endsAt),
			drawn: num(d.drawn, 0), admitted: num(d.admitted, 0), through: num(d.through, -1),
			rate: num(d.rate, 0), unitsLeft: num(d.unitsLeft, 0),
		});
		if (status.state !== "soldout" && refusal === "queueClosed")
			refusal = null;
		notePace(serverNow(), status.admitted);
		await learnSeed();
		changed();
		schedule();
	} else if (ans.status === 404) {
		/* NO_QUEUE: the sale document says otherwise for a second; nothing to poll. */
	} else {
		clearTimeout(pollTimer);
		pollTimer = setTimeout(pollStatus, (ans.status === 0 ? 2000 : retryAfter(ans, 2) * 1000) + Math.random() * 500);
	}
}

/* --- the draw, checked and computed here ------------------------- */

function hexBytes(hex) {
	const b = new Uint8Array(hex.length / 2);
	for (let i = 0; i < b.length; i++)
		b[i] = parseInt(hex.substr(i * 2, 2), 16);
	return b;
}

function bytesHex(buf) {
	return Array.from(new Uint8Array(buf), (x) => x.toString(16).padStart(2, "0")).join("");
}

/* The draw of an account: the first 52 bits (big-endian) of HMAC-SHA256(seed, sub). */
export async function drawScore(seedHex, sub) {
	const key = await crypto.subtle.importKey("raw", hexBytes(seedHex), { name: "HMAC", hash: "SHA-256" },
		false, ["sign"]);
	const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(sub)));
	let v = 0;
	for (let i = 0; i < 6; i++)
		v = v * 256 + mac[i];
	return v * 16 + (mac[6] >> 4);
}

/* Checks the published seed against the commitment, and draws the shopper's place. */
async function learnSeed() {
	const seed = status.seed;
	if (typeof seed !== "string" || !/^[0-9a-f]{64}$/.test(seed))
		return;
	if (!seedCheck || seedCheck.seed !== seed) {
		const sum = bytesHex(await crypto.subtle.digest("SHA-256", hexBytes(seed)));
		seedCheck = { seed, ok: sum === String(status.seedCommit).toLowerCase() };
	}
	const p = place();
	if (p && p.ticket && p.drawn && p.score === null) {
		p.score = await drawScore(seed, p.sub);
		save();
	}
}

/* --- joining ----------------------------------------------------- */

function proofOfWork(prefix, bits) {
	if (bits <= 0)
		return Promise.resolve(null);
	solving = { tried: 0, expected: 2 ** bits };
	changed();
	return new Promise((resolve) => {
		const w = new Worker("/pow.js");
		w.onmessage = (ev) => {
			solving.tried = ev.data.tried;
			if (typeof ev.data.nonce === "string") {
				w.terminate();
				solving = null;
				resolve(ev.data.nonce);
			}
			changed();
		};
		w.onerror = () => {
			w.terminate();
			solving = null;
			resolve(null);
		};
		w.postMessage({ prefix, bits });
	});
}

/* One join: the proof of work, then POST .../queue; the same place for every repeat. */
async function join(p) {
	joining = true;
	const sale = currentSaleId();
	const bits = num(status && status.powBits, num(settings().powBits, 0));
	const nonce = await proofOfWork(`fsq1|${sale}|${p.sub}|`, bits);
	const a = currentAuth();
	if (!a || a.userId !== p.sub) {
		joining = false;
		return;
	}
	const ans = await request("POST", `${API}/sales/${sale}/queue`, { token: a.token,
		json: nonce === null ? {} : { pow: nonce } });
	joining = false;
	const b = ans.body, now = serverNow();
	if (ans.ok && typeof b.ticket === "string") {
		p.ticket = b.ticket;
		p.drawn = b.drawn === true;
		p.score = typeof b.score === "number" ? b.score : null;
		save();
		if (status && status.seed)
			await learnSeed();
	} else if (ans.status === 409) {
		joinAfter = Math.max(now + 1000, preMs());
	} else if (ans.status === 403) {
		refusal = "queueClosed";
	} else if (ans.status === 400 && b.error === "BAD_POW") {
		/* The sale's powBits may have changed: read them again, then solve again. */
		joinAfter = now + 2000;
		pollStatus();
	} else if (ans.status !== 401) {
		joinAfter = now + (ans.status === 0 ? 2000 : retryAfter(ans, 2) * 1000) * (0.75 + Math.random() * 0.5);
	}
	changed();
}

/* --- the pass ---------------------------------------------------- */

/* Asked once, when admission reached the place; again only after "not yet" and a move. */
async function askPass(p) {
	asking = true;
	const ans = await request("POST", `${API}/sales/${currentSaleId()}/queue/pass`, { json: { ticket: p.ticket } });
	asking = false;
	const b = ans.body;
	if (ans.ok && typeof b.pass === "string") {
		p.pass = b.pass;
		p.expiresAt = ms(b.expiresAt);
		pingAfter = serverNow() + PASS_PING_MS;
		save();
	} else if (ans.status === 410 && b.error === "PASS_LAPSED") {
		p.lapsed = true;
		save();
	} else if (b.error === "BAD_TICKET" || b.error === "NOT_IN_QUEUE") {
		/* The ticket is of no use: join again, which gives the same place back. */
		p.ticket = null;
		p.score = null;
		save();
	} else if (b.error === "NOT_YET") {
		/* The document was a little ahead of the line: ask when it moves. */
		askedAt = status ? status.admitted : 0;
	} else if (b.error === "QUEUE_CLOSED") {
		passAfter = Infinity;
	} else {
		/* SOLD_OUT (the status document says so next), busy, no answer. */
		passAfter = serverNow() + (ans.status === 0 || b.error === "SOLD_OUT" ? 2000 : retryAfter(ans, 2) * 1000) *
			(0.75 + Math.random() * 0.5);
	}
	changed();
}

function admitted(p) {
	return status !== null && p.score !== null && status.through >= p.score;
}

function holdsOrder() {
	const o = currentOrder();
	return o !== null && LIVE.has(o.status);
}

/*
 * Called by the page's tick: joins when the shopper can, asks for the pass
 * when admission reached the place, and marks a pass that ran out.
 */
export function queueTick() {
	if (!hasQueue())
		return;
	if (!status && !polling)
		pollStatus();
	const p = place(), now = serverNow();
	if (!p || !status || now >= status.endsMs)
		return;
	if (!p.ticket) {
		/* Refused as closed (sold out): joins again once the document says units are back. */
		if (!joining && refusal === null && now >= preMs() && now >= joinAfter && status.state !== "ended")
			join(p);
		return;
	}
	if (p.pass && !p.lapsed && p.expiresAt <= now && !holdsOrder()) {
		p.lapsed = true;
		save();
		changed();
	}
	if (!p.pass && !p.lapsed && !asking && admitted(p) && status.state !== "soldout" && now >= passAfter &&
	    (askedAt === null || status.admitted > askedAt))
		askPass(p);
	/* A pass held and not used: the page says it is still there. */
	else if (p.pass && !p.lapsed && !asking && !holdsOrder() && p.expiresAt > now && now >= pingAfter) {
		pingAfter = now + PASS_PING_MS;
		askPass(p);
	}
}

/* --- what the page shows and may do ------------------------------ */

/* The pass to buy with now, or null. */
export function queuePass() {
	const p = hasQueue() ? place() : null;
	return p && p.pass && !p.lapsed && p.expiresAt > serverNow() ? p.pass : null;
}

/* A pass the purchase handler refused (NOT_ADMITTED): it is of no more use. */
export function dropPass() {
	const p = place();
	if (p && p.pass) {
		p.lapsed = true;
		save();
		changed();
	}
}

function notePace(t, n) {
	pace.push({ t, admitted: n });
	while (pace.length > 2 && pace[0].t < t - 120000)
		pace.shift();
}

/*
 * Admissions per second: over the last two minutes the page saw when it
 * can (the document's own rate is of the last second, often 0 between
 * steps), else the document's.
 */
function admissionRate() {
	const first = pace[0], last = pace[pace.length - 1];
	if (first && last.t - first.t >= 5000 && last.admitted > first.admitted)
		return (last.admitted - first.admitted) * 1000 / (last.t - first.t);
	return status.rate;
}

/* Expected places ahead: a drawn place's share of the drawn ones, or its arrival after them. */
function ahead(p) {
	const index = p.score < LATE_BASE ? status.drawn * p.score / LATE_BASE : status.drawn + (p.score - LATE_BASE - 1);
	return Math.max(0, Math.round(index - status.admitted));
}

function phaseOf(p, now) {
	if (now >= (status ? status.endsMs : currentSale().endsMs) || (status && status.state === "ended"))
		return "ended";
	if (now < preMs())
		return "before";
	if (!p)
		return "signin";
	if (p.lapsed)
		return holdsOrder() ? "bought" : "lapsed";
	if (p.pass)
		return holdsOrder() ? "bought" : "pass";
	if (!p.ticket)
		return refusal || (solving ? "solving" : "joining");
	if (status && status.state === "soldout")
		return "soldout";
	if (now < opensMs() || !status || status.seed === null || status.seed === undefined)
		return "joined";
	if (p.score === null)
		return "drawing";
	return admitted(p) ? "turn" : "waiting";
}

/*
 * Everything the view draws, or null for a sale without a waiting room:
 * phase, and what its words need.
 */
export function queueView() {
	if (!hasQueue())
		return null;
	const p = place(), now = serverNow();
	const v = {
		phase: phaseOf(p, now), opensMs: opensMs(), preMs: preMs(),
		seedCommit: status ? status.seedCommit : settings().seedCommit,
		seedCheck, solving, unitsLeft: status ? status.unitsLeft : null, score: p ? p.score : null,
	};
	if (v.phase === "waiting") {
		v.ahead = ahead(p);
		const rate = admissionRate();
		v.minutes = rate > 0 ? Math.max(1, Math.ceil(v.ahead / rate / 60)) : null;
	}
	if (p && p.pass)
		v.passLeftMs = p.expiresAt - now;
	return v;
}

/* Whether Buy may be offered now: null (no waiting room: as before), or { canBuy, label }. */
export function queueGate() {
	const v = queueView();
	if (!v)
		return null;
	if (v.phase === "pass")
		return { canBuy: true, label: null };
	return { canBuy: false, label: v.phase === "lapsed" ? "queueBuyPassed" : "queueBuyWait" };
}
