/*
 * The sale page. It counts down to the start on the server's clock, asks
 * the edge for the reveal document at the start instant (never before),
 * buys with the shopper's bearer token, and follows the order live by
 * Server-Sent Events, polling the order when the stream is unavailable.
 *
 * Documents: GET /api/flash-sales/sales/{id} (sale), .../reveal (purchase
 * URLs, 425 before the start), GET /api/time (the server's clock).
 */
"use strict";

(function () {
	const API = "/api/flash-sales";
	const FINAL = new Set(["PAID", "EXPIRED", "CANCELLED", "FAILED"]);
	const LIVE = new Set(["PROCESSING", "PENDING", "PAID"]);
	const $ = (id) => document.getElementById(id);

	const state = {
		lang: "en",
		saleId: null,
		sale: null,
		/* performance.now() + perfOffset is the server's time in ms. */
		perfOffset: Date.now() - performance.now(),
		clock: { source: "device", rtt: 0 },
		reveal: null,
		revealing: false,
		auth: null,
		order: null,
		orderItemName: "",
		outcomes: new Map(),
		retryAt: new Map(),
		live: null,
		es: null,
		pollTimer: 0,
		liveTimer: 0,
		announced: new Set(),
		cancelArmed: 0,
		payRetries: 0,
		/* "pay" or "cancel" while that request is under way. */
		acting: null,
		expiryChecked: false,
	};

	/* --- words ------------------------------------------------------ */

	function t(key, vars) {
		const table = window.FS_I18N[state.lang] || window.FS_I18N.en;
		let s = table[key] !== undefined ? table[key] : window.FS_I18N.en[key] || key;
		if (vars) {
			for (const [k, v] of Object.entries(vars))
				s = s.split("{" + k + "}").join(String(v));
		}
		return s;
	}

	function pickLanguage() {
		const q = new URLSearchParams(location.search).get("lang");
		if (q === "vi" || q === "en")
			return q;
		const saved = localStorage.getItem("fs.lang");
		if (saved === "vi" || saved === "en")
			return saved;
		const langs = navigator.languages || [navigator.language || "en"];
		return langs.some((l) => /^vi\b/i.test(l)) ? "vi" : "en";
	}

	function setLanguage(lang) {
		state.lang = lang;
		localStorage.setItem("fs.lang", lang);
		document.documentElement.lang = lang;
		for (const el of document.querySelectorAll("[data-i18n]"))
			el.textContent = t(el.dataset.i18n);
		for (const el of document.querySelectorAll("[data-i18n-label]"))
			el.setAttribute("aria-label", t(el.dataset.i18nLabel));
		for (const b of document.querySelectorAll(".lang button"))
			b.setAttribute("aria-pressed", String(b.dataset.lang === lang));
		render();
	}

	function announce(text) {
		const a = $("announcer");
		/* Clearing first makes a repeated message be read again. */
		a.textContent = "";
		setTimeout(() => { a.textContent = text; }, 50);
	}

	/* --- the server's clock ----------------------------------------- */

	function serverNow() {
		return performance.now() + state.perfOffset;
	}

	/*
	 * Samples GET /api/time a few times and keeps the sample with the
	 * shortest round trip: the server read its clock about half-way.
	 */
	async function syncClock() {
		let best = null;
		for (let i = 0; i < 4; i++) {
			const t0 = performance.now();
			try {
				const r = await fetch("/api/time", { cache: "no-store" });
				const t1 = performance.now();
				if (!r.ok)
					continue;
				const body = await r.json();
				if (typeof body.now !== "number")
					continue;
				const rtt = t1 - t0;
				if (best === null || rtt < best.rtt)
					best = { rtt, offset: body.now - (t0 + rtt / 2) };
			} catch (e) {
				/* One lost sample is fine; the others decide. */
			}
		}
		if (best !== null) {
			state.perfOffset = best.offset;
			state.clock = { source: "time", rtt: best.rtt };
		}
		renderClock();
		return best !== null;
	}

	/* Falls back on the sale document's serverTime (corrected by its Age). */
	function clockFromDocument(doc, t0, t1, age) {
		if (state.clock.source === "time" || typeof doc.serverTime !== "number")
			return;
		const rtt = t1 - t0;
		state.perfOffset = doc.serverTime + age * 1000 - (t0 + rtt / 2);
		state.clock = { source: "document", rtt: rtt + age * 1000 };
		renderClock();
	}

	function formatOffset(ms) {
		const s = Math.abs(ms) / 1000;
		return s < 10 ? s.toFixed(1) + " s" : Math.round(s) + " s";
	}

	function renderClock() {
		const el = $("clock");
		const deviceOffset = Date.now() - serverNow();
		const dir = t(deviceOffset > 0 ? "clockAhead" : "clockBehind");
		const rtt = Math.max(1, Math.round(state.clock.rtt / 2));
		el.dataset.offsetMs = String(Math.round(deviceOffset));
		if (state.clock.source === "device")
			el.textContent = t("clockSyncing");
		else if (state.clock.source === "document")
			el.textContent = t("clockFallback", { dir, offset: formatOffset(deviceOffset) });
		else if (Math.abs(deviceOffset) < 50)
			el.textContent = t("clockExact", { rtt });
		else
			el.textContent = t("clockSynced", { rtt, dir, offset: formatOffset(deviceOffset) });
	}

	/* --- HTTP ------------------------------------------------------- */

	/* Seconds to wait from a Retry-After header (delta or HTTP date). */
	function retryAfter(res, fallback) {
		const v = res && res.headers.get("Retry-After");
		if (v) {
			if (/^\d+$/.test(v.trim()))
				return Math.max(1, parseInt(v, 10));
			const when = Date.parse(v);
			if (!Number.isNaN(when))
				return Math.max(1, Math.ceil((when - Date.now()) / 1000));
		}
		return fallback;
	}

	async function readJson(res) {
		try {
			return await res.json();
		} catch (e) {
			return {};
		}
	}

	function authHeaders() {
		return state.auth ? { Authorization: "Bearer " + state.auth.token } : {};
	}

	/* --- the sale document ------------------------------------------ */

	async function loadSale() {
		const t0 = performance.now();
		let res;
		try {
			res = await fetch(`${API}/sales/${state.saleId}`, { cache: "no-cache" });
		} catch (e) {
			return showSaleProblem("saleUnavailable", 3000);
		}
		const t1 = performance.now();
		if (res.status === 404)
			return showSaleProblem("saleNotFound", 0);
		if (!res.ok)
			return showSaleProblem("saleUnavailable", retryAfter(res, 3) * 1000);
		const doc = await readJson(res);
		if (!Array.isArray(doc.items))
			return showSaleProblem("saleUnavailable", 3000);
		const age = parseInt(res.headers.get("Age") || "0", 10) || 0;
		clockFromDocument(doc, t0, t1, age);
		doc.startsMs = Date.parse(doc.startsAt);
		doc.endsMs = Date.parse(doc.endsAt);
		const first = state.sale === null;
		state.sale = doc;
		if (first) {
			buildItems();
			announceStartsIn();
		}
		render();
		scheduleSaleRefresh();
	}

	function showSaleProblem(key, retryMs) {
		if (state.sale === null)
			$("sale-name").textContent = t(key);
		if (retryMs > 0)
			setTimeout(loadSale, retryMs);
	}

	/*
	 * Item states change with stock: the edge keeps the document for a
	 * second, so reading it every few seconds costs the origin nothing.
	 */
	function scheduleSaleRefresh() {
		clearTimeout(state.saleTimer);
		const now = serverNow(), s = state.sale;
		let wait = 5000;
		if (now < s.startsMs)
			wait = Math.min(10000, Math.max(1000, s.startsMs - now + 1500));
		if (now >= s.endsMs)
			return;
		state.saleTimer = setTimeout(loadSale, wait + Math.random() * 1000);
	}

	function announceStartsIn() {
		const left = state.sale.startsMs - serverNow();
		if (left > 0)
			announce(t("announceStartsIn", { time: spokenDuration(left) }));
	}

	function spokenDuration(ms) {
		const s = Math.ceil(ms / 1000);
		const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600);
		const m = Math.floor(s % 3600 / 60), sec = s % 60;
		const parts = [];
		if (d) parts.push(`${d} ${t("days")}`);
		if (h) parts.push(`${h} ${t("hours")}`);
		if (m) parts.push(`${m} ${t("minutes")}`);
		if (sec || parts.length === 0) parts.push(`${sec} ${t("seconds")}`);
		return parts.join(" ");
	}

	/* --- the reveal document ----------------------------------------- */

	/*
	 * Asked for at the start instant only. The edge holds the shoppers
	 * who ask at once and hands them one answer; a 425 (our clock a little
	 * early) is retried shortly, with jitter so retries do not come in a
	 * wave.
	 */
	async function fetchReveal() {
		if (state.reveal !== null || state.revealing)
			return;
		state.revealing = true;
		let wait = 0;
		try {
			const res = await fetch(`${API}/sales/${state.saleId}/reveal`, { cache: "no-cache" });
			if (res.ok) {
				const doc = await readJson(res);
				const urls = new Map();
				for (const it of doc.items || []) {
					if (typeof it.purchaseUrl === "string" && it.purchaseUrl.startsWith(`${API}/items/`))
						urls.set(String(it.itemId), it.purchaseUrl);
				}
				state.reveal = urls;
				announce(t("announceStarted"));
				document.body.dataset.revealed = "true";
			} else if (res.status === 425) {
				wait = 250 + Math.random() * 500;
			} else {
				wait = retryAfter(res, 1) * 1000 * (0.75 + Math.random() * 0.5);
			}
		} catch (e) {
			wait = 1000 + Math.random() * 1000;
		}
		state.revealing = false;
		if (state.reveal === null)
			setTimeout(fetchReveal, wait);
		render();
	}

	/* --- sign-in ---------------------------------------------------- */

	function decodeClaims(token) {
		try {
			const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
			return JSON.parse(atob(part + "===".slice((part.length + 3) % 4)));
		} catch (e) {
			return null;
		}
	}

	function loadAuth() {
		/* A token handed over by the shop's sign-in, in the fragment. */
		const frag = new URLSearchParams(location.hash.slice(1));
		const handed = frag.get("token");
		if (handed) {
			const c = decodeClaims(handed);
			if (c && c.sub && c.exp)
				saveAuth({ token: handed, userId: c.sub, expiresAt: new Date(c.exp * 1000).toISOString() });
			history.replaceState(null, "", location.pathname + location.search);
		}
		try {
			const a = JSON.parse(localStorage.getItem("fs.auth") || "null");
			if (a && a.token && Date.parse(a.expiresAt) > Date.now())
				state.auth = a;
		} catch (e) {
			state.auth = null;
		}
	}

	function saveAuth(a) {
		state.auth = a;
		localStorage.setItem("fs.auth", JSON.stringify(a));
	}

	function signOut() {
		state.auth = null;
		localStorage.removeItem("fs.auth");
		stopTracking();
		state.order = null;
		render();
	}

	async function signIn(ev) {
		ev.preventDefault();
		const input = $("user-id"), msg = $("signin-msg"), btn = $("signin-button");
		const userId = input.value.trim();
		if (userId !== "" && !/^[A-Za-z0-9._-]{1,64}$/.test(userId)) {
			msg.textContent = t("signinFailed", { reason: input.getAttribute("pattern") });
			input.focus();
			return;
		}
		btn.disabled = true;
		btn.textContent = t("signinBusy");
		msg.textContent = "";
		try {
			const res = await fetch(`${API}/signin`, {
				method: "POST",
				headers: { "Content-Type": "application/json" },
				body: userId === "" ? "{}" : JSON.stringify({ userId }),
			});
			const body = await readJson(res);
			if (res.ok && body.token) {
				saveAuth({ token: body.token, userId: body.userId, expiresAt: body.expiresAt });
				restoreOrder();
				for (const [id, o] of state.outcomes)
					if (o.kind === "signed_out")
						state.outcomes.delete(id);
			} else if (res.status === 404) {
				msg.textContent = t("signinOff");
			} else {
				msg.textContent = t("signinFailed", { reason: body.message || res.status });
			}
		} catch (e) {
			msg.textContent = t("outNetwork");
		}
		btn.disabled = false;
		btn.textContent = t("signinButton");
		render();
		if (state.auth)
			$("signout").focus();
	}

	/* --- buying ----------------------------------------------------- */

	function setOutcome(itemId, kind, extra) {
		state.outcomes.set(String(itemId), Object.assign({ kind }, extra || {}));
		render();
		const o = outcomeText(String(itemId));
		if (o)
			announce(o.text);
	}

	async function buy(itemId) {
		itemId = String(itemId);
		if (!state.auth) {
			setOutcome(itemId, "signed_out");
			$("user-id").focus();
			return;
		}
		const url = state.reveal && state.reveal.get(itemId);
		if (!url)
			return;
		setOutcome(itemId, "buying");
		let res, body;
		try {
			res = await fetch(url, { method: "POST", headers: authHeaders() });
			body = await readJson(res);
		} catch (e) {
			setOutcome(itemId, "network");
			return;
		}
		switch (res.status) {
		case 202:
			startOrder({ orderId: body.orderId, itemId: Number(itemId), status: body.status || "PENDING",
				expiresAt: body.expiresAt });
			setOutcome(itemId, "reserved");
			break;
		case 409:
			setOutcome(itemId, "already", { orderId: body.orderId });
			if (body.orderId && (!state.order || state.order.orderId !== body.orderId))
				startOrder({ orderId: body.orderId, itemId: null, status: null, expiresAt: null });
			break;
		case 410:
			setOutcome(itemId, "sold_out");
			break;
		case 401:
			signOut();
			setOutcome(itemId, "signed_out");
			break;
		case 425:
			waitAndRetry(itemId, retryAfter(res, 1), "not_started");
			break;
		case 403:
			setOutcome(itemId, "bad_link");
			break;
		case 404:
			setOutcome(itemId, "unavailable");
			break;
		default:
			waitAndRetry(itemId, retryAfter(res, 2), "retry");
		}
	}

	/* Honours Retry-After: the button comes back when it has passed. */
	function waitAndRetry(itemId, seconds, kind) {
		const until = serverNow() + seconds * 1000;
		state.retryAt.set(itemId, until);
		setOutcome(itemId, kind, { until });
		setTimeout(() => {
			state.retryAt.delete(itemId);
			const o = state.outcomes.get(itemId);
			if (o && o.kind === kind)
				setOutcome(itemId, "retry_now");
		}, seconds * 1000);
	}

	/* --- the order -------------------------------------------------- */

	function orderKey() {
		return state.auth ? `fs.order.${state.saleId}.${state.auth.userId}` : null;
	}

	function restoreOrder() {
		const wanted = new URLSearchParams(location.search).get("order");
		let saved = null;
		try {
			saved = JSON.parse(localStorage.getItem(orderKey()) || "null");
		} catch (e) {
			saved = null;
		}
		if (wanted && /^[0-9a-f-]{36}$/.test(wanted) && (!saved || saved.orderId !== wanted))
			saved = { orderId: wanted, itemId: null, status: null, expiresAt: null };
		if (saved && saved.orderId)
			startOrder(saved);
	}

	function startOrder(o) {
		stopTracking();
		state.order = o;
		state.payRetries = 0;
		state.acting = null;
		state.expiryChecked = false;
		saveOrder();
		render();
		track();
	}

	function saveOrder() {
		const key = orderKey();
		if (key && state.order)
			localStorage.setItem(key, JSON.stringify(state.order));
	}

	/* A status from the stream, a poll or an answer to pay or cancel. */
	function applyOrder(o, source) {
		if (!state.order || !o || o.orderId !== state.order.orderId)
			return;
		const before = state.order.status;
		state.order = Object.assign({}, state.order, {
			itemId: o.itemId !== undefined ? o.itemId : state.order.itemId,
			status: o.status || state.order.status,
			expiresAt: o.expiresAt || state.order.expiresAt,
		});
		$("order").dataset.source = source;
		saveOrder();
		if (state.order.itemId !== null && state.order.itemId !== undefined) {
			const id = String(state.order.itemId);
			const kind = statusOutcome(state.order.status);
			const shown = state.outcomes.get(id);
			/* "Already purchased" keeps its link; the order panel shows the status. */
			if (kind && !(shown && shown.kind === "already" && shown.orderId === o.orderId))
				state.outcomes.set(id, { kind });
		}
		render();
		if (before !== state.order.status) {
			const o2 = outcomeText(String(state.order.itemId));
			if (o2)
				announce(o2.text);
		}
		if (FINAL.has(state.order.status))
			stopTracking();
	}

	function statusOutcome(status) {
		return {
			PROCESSING: "processing", PENDING: "reserved", PAID: "paid", EXPIRED: "expired",
			CANCELLED: "cancelled", FAILED: "failed",
		}[status] || null;
	}

	async function fetchOrder() {
		const o = state.order;
		if (!o || !state.auth)
			return;
		try {
			const res = await fetch(`${API}/orders/${o.orderId}`, { headers: authHeaders(), cache: "no-store" });
			if (res.ok)
				applyOrder(await readJson(res), "poll");
			else if (res.status === 401)
				signOut();
			else if (res.status === 404)
				$("order-live").textContent = t("orderGone");
		} catch (e) {
			/* The next poll tries again. */
		}
	}

	/*
	 * Live status: one EventSource for the caller's order (the token goes
	 * in the query, EventSource cannot send headers). Polling takes over
	 * when the stream does not open or keeps failing.
	 */
	function track() {
		const o = state.order;
		if (!o || !state.auth)
			return;
		fetchOrder();
		if (FINAL.has(o.status))
			return;
		if (typeof window.EventSource !== "function") {
			startPolling();
			return;
		}
		state.live = "connecting";
		let failures = 0;
		const url = `${API}/orders/${o.orderId}/events?access_token=${encodeURIComponent(state.auth.token)}`;
		const es = new EventSource(url);
		state.es = es;
		es.onopen = () => {
			failures = 0;
			state.live = "sse";
			stopPolling();
			renderLive();
		};
		es.onmessage = (ev) => {
			let msg;
			try {
				msg = JSON.parse(ev.data);
			} catch (e) {
				return;
			}
			applyOrder(msg, "sse");
		};
		es.onerror = () => {
			failures++;
			if (es.readyState === EventSource.CLOSED || failures >= 3) {
				es.close();
				if (state.es === es)
					state.es = null;
				startPolling();
			}
		};
		clearTimeout(state.liveTimer);
		state.liveTimer = setTimeout(() => {
			if (state.live !== "sse" && state.order && !FINAL.has(state.order.status))
				startPolling();
		}, 5000);
		renderLive();
	}

	function startPolling() {
		state.live = "poll";
		renderLive();
		if (state.pollTimer)
			return;
		state.pollTimer = setInterval(fetchOrder, 3000);
	}

	function stopPolling() {
		clearInterval(state.pollTimer);
		state.pollTimer = 0;
	}

	function stopTracking() {
		stopPolling();
		clearTimeout(state.liveTimer);
		if (state.es) {
			state.es.close();
			state.es = null;
		}
		state.live = null;
		renderLive();
	}

	async function orderAction(action) {
		const o = state.order;
		if (!o || !state.auth)
			return;
		state.acting = action;
		render();
		let res, body;
		try {
			res = await fetch(`${API}/orders/${o.orderId}/${action}`, { method: "POST", headers: authHeaders() });
			body = await readJson(res);
		} catch (e) {
			state.acting = null;
			render();
			$("order-live").textContent = t("outNetwork");
			return;
		}
		state.acting = null;
		if (res.ok) {
			applyOrder(Object.assign({ orderId: o.orderId }, body), "action");
		} else if (res.status === 401) {
			signOut();
		} else if (res.status === 409 && body.error === "ORDER_PROCESSING" && state.payRetries < 20) {
			/* Not in the database yet: the consumer records it within moments. */
			state.payRetries++;
			state.acting = action;
			render();
			$("order-live").textContent = t("payProcessing");
			setTimeout(() => orderAction(action), 1000);
			return;
		} else if (res.status === 409) {
			await fetchOrder();
		} else {
			render();
			$("order-live").textContent = t("outRetry", { s: retryAfter(res, 2) });
			return;
		}
		render();
	}

	/* Cancel asks twice: a unit lost by a slip is lost for good. */
	function onCancel() {
		const btn = $("cancel");
		if (state.cancelArmed && performance.now() - state.cancelArmed < 5000) {
			state.cancelArmed = 0;
			btn.classList.remove("confirm");
			orderAction("cancel");
			return;
		}
		state.cancelArmed = performance.now();
		btn.classList.add("confirm");
		btn.textContent = t("cancelConfirm");
		announce(t("cancelConfirm"));
		setTimeout(() => {
			if (state.cancelArmed && performance.now() - state.cancelArmed >= 5000) {
				state.cancelArmed = 0;
				btn.classList.remove("confirm");
				render();
			}
		}, 5100);
	}

	/* --- rendering -------------------------------------------------- */

	function money(minor, currency) {
		const loc = t("locale");
		try {
			const f = new Intl.NumberFormat(loc, { style: "currency", currency });
			const digits = f.resolvedOptions().maximumFractionDigits;
			return f.format(minor / Math.pow(10, digits));
		} catch (e) {
			return `${minor} ${currency}`;
		}
	}

	function itemName(itemId) {
		const it = state.sale && state.sale.items.find((i) => String(i.itemId) === String(itemId));
		return it ? it.name : "";
	}

	/* The item's state now: the document's, sharpened by the clock and by answers. */
	function itemState(it) {
		const now = serverNow(), s = state.sale;
		if (now >= s.endsMs)
			return "ended";
		const o = state.outcomes.get(String(it.itemId));
		if (it.state === "sold_out" || (o && o.kind === "sold_out"))
			return "sold_out";
		if (now < s.startsMs)
			return "upcoming";
		return "on_sale";
	}

	function buildItems() {
		const list = $("items"), tpl = $("item-template");
		list.textContent = "";
		for (const it of state.sale.items) {
			const li = tpl.content.firstElementChild.cloneNode(true);
			li.dataset.itemId = String(it.itemId);
			li.querySelector(".buy").addEventListener("click", () => buy(it.itemId));
			const nameId = `item-name-${it.itemId}`;
			li.querySelector(".item-name").id = nameId;
			li.setAttribute("aria-labelledby", nameId);
			li.querySelector(".buy").setAttribute("aria-describedby", `${nameId} item-outcome-${it.itemId}`);
			li.querySelector(".outcome").id = `item-outcome-${it.itemId}`;
			list.appendChild(li);
		}
	}

	function mmss(ms) {
		const s = Math.max(0, Math.ceil(ms / 1000));
		return `${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
	}

	function outcomeText(itemId) {
		const o = state.outcomes.get(itemId);
		if (!o)
			return null;
		const retryS = o.until ? Math.max(1, Math.ceil((o.until - serverNow()) / 1000)) : 1;
		const order = state.order && String(state.order.itemId) === itemId ? state.order : null;
		const left = order && order.expiresAt ? mmss(Date.parse(order.expiresAt) - serverNow()) : "--:--";
		switch (o.kind) {
		case "buying": return { text: t("outBuying"), tone: "" };
		case "processing": return { text: t("outProcessing"), tone: "warn" };
		case "reserved": return { text: t("outReserved", { left }), tone: "warn" };
		case "paid": return { text: t("outPaid"), tone: "ok" };
		case "sold_out": return { text: t("outSoldOut"), tone: "bad" };
		case "already": return { text: t("outAlready"), tone: "warn", link: o.orderId };
		case "expired": return { text: t("outExpired"), tone: "bad" };
		case "cancelled": return { text: t("outCancelled"), tone: "" };
		case "failed": return { text: t("outFailed"), tone: "bad" };
		case "retry": return { text: t("outRetry", { s: retryS }), tone: "warn" };
		case "retry_now": return { text: t("outRetryNow"), tone: "" };
		case "not_started": return { text: t("outNotStarted"), tone: "" };
		case "signed_out": return { text: t("outSignedOut"), tone: "bad" };
		case "bad_link": return { text: t("outBadLink"), tone: "bad" };
		case "unavailable": return { text: t("outUnavailable"), tone: "bad" };
		case "network": return { text: t("outNetwork"), tone: "bad" };
		}
		return null;
	}

	function renderItems() {
		const now = serverNow();
		for (const it of state.sale.items) {
			const id = String(it.itemId);
			const li = document.querySelector(`.item[data-item-id="${id}"]`);
			if (!li)
				continue;
			const st = itemState(it);
			li.dataset.state = st;
			li.querySelector(".item-name").textContent = it.name;
			li.querySelector(".badge").textContent = t({ upcoming: "stateUpcoming", on_sale: "stateOnSale",
				sold_out: "stateSoldOut", ended: "stateEnded" }[st]);
			li.querySelector(".price").textContent = money(it.priceMinor, it.currency);
			li.querySelector(".qty").textContent = it.quantity === 1 ? t("unitsOne") : t("units", { n: it.quantity });

			const o = state.outcomes.get(id);
			const btn = li.querySelector(".buy");
			const until = state.retryAt.get(id);
			const busy = o && o.kind === "buying";
			const ready = st === "on_sale" && state.reveal !== null && state.reveal.has(id);
			/* One live order per shopper per sale: a second buy would be refused. */
			const holding = state.order !== null && LIVE.has(state.order.status);
			btn.disabled = !ready || busy || holding || (until !== undefined && until > now);
			if (holding && ready)
				btn.textContent = t("buyHaveOrder");
			else if (until !== undefined && until > now)
				btn.textContent = t("buyRetryIn", { s: Math.ceil((until - now) / 1000) });
			else if (st === "sold_out")
				btn.textContent = t("stateSoldOut");
			else if (st === "ended")
				btn.textContent = t("stateEnded");
			else if (!ready)
				btn.textContent = st === "on_sale" ? t("phaseStarting") : t("buyNotYet");
			else
				btn.textContent = t("buy");

			const out = li.querySelector(".outcome");
			const ot = outcomeText(id);
			li.dataset.outcome = o ? o.kind : "";
			if (!ot) {
				out.textContent = "";
				out.removeAttribute("data-tone");
				continue;
			}
			out.dataset.tone = ot.tone;
			if (ot.link) {
				/* Rebuilt only when it changes, so the link keeps focus. */
				if (out.dataset.link !== ot.link) {
					out.textContent = ot.text + " ";
					const a = document.createElement("a");
					a.href = `?sale=${encodeURIComponent(state.saleId)}&order=${encodeURIComponent(ot.link)}`;
					a.textContent = t("outAlreadyLink");
					a.className = "order-link";
					a.addEventListener("click", (ev) => {
						ev.preventDefault();
						history.replaceState(null, "", a.href);
						startOrder({ orderId: ot.link, itemId: null, status: null, expiresAt: null });
						$("order").focus();
					});
					out.appendChild(a);
					out.dataset.link = ot.link;
				}
			} else {
				out.dataset.link = "";
				out.textContent = ot.text;
			}
		}
	}

	function pad2(n) {
		return String(n).padStart(2, "0");
	}

	function renderCountdown() {
		const s = state.sale, now = serverNow();
		const cd = $("countdown"), phase = $("phase");
		let target = null;
		if (now < s.startsMs) {
			phase.textContent = t("phaseUpcoming");
			target = s.startsMs;
		} else if (now < s.endsMs) {
			phase.textContent = state.reveal ? t("phaseOnSale") : t("phaseStarting");
			target = s.endsMs;
		} else {
			phase.textContent = t("phaseEnded");
		}
		document.body.dataset.phase = now < s.startsMs ? "upcoming" : now < s.endsMs ? "on_sale" : "ended";
		cd.hidden = target === null;
		if (target !== null) {
			const left = Math.max(0, Math.ceil((target - now) / 1000));
			const d = Math.floor(left / 86400);
			$("cd-days-unit").hidden = d === 0;
			$("cd-days").textContent = String(d);
			$("cd-hours").textContent = pad2(Math.floor(left % 86400 / 3600));
			$("cd-minutes").textContent = pad2(Math.floor(left % 3600 / 60));
			$("cd-seconds").textContent = pad2(left % 60);
			cd.dataset.left = String(left);
			cd.setAttribute("aria-label", `${phase.textContent} ${spokenDuration(left * 1000)}`);
		}
		const local = new Date(s.startsMs + (Date.now() - serverNow()));
		$("starts-at").textContent = t("startsAt", {
			time: local.toLocaleString(t("locale"), { dateStyle: "medium", timeStyle: "medium" }),
		});
	}

	function renderAccount() {
		const signedIn = state.auth !== null;
		$("signin").hidden = signedIn;
		$("whoami").hidden = !signedIn;
		$("who").textContent = signedIn ? state.auth.userId : "";
	}

	function renderLive() {
		const el = $("order-live");
		$("order").dataset.live = state.live || "";
		if (state.live === "sse")
			el.textContent = t("liveSse");
		else if (state.live === "poll")
			el.textContent = t("livePoll");
		else if (state.live === "connecting")
			el.textContent = t("liveConnecting");
		else
			el.textContent = "";
	}

	function renderOrder() {
		const sec = $("order"), o = state.order;
		sec.hidden = o === null;
		if (!o)
			return;
		const status = o.status || "PROCESSING";
		sec.dataset.status = status;
		sec.tabIndex = -1;
		const kind = statusOutcome(status);
		const left = o.expiresAt ? Date.parse(o.expiresAt) - serverNow() : null;
		const text = {
			processing: t("outProcessing"),
			reserved: t("outReserved", { left: left === null ? "--:--" : mmss(left) }),
			paid: t("outPaid"), expired: t("outExpired"), cancelled: t("outCancelled"), failed: t("outFailed"),
		}[kind];
		$("order-status").textContent = text;
		const payable = status === "PENDING" || status === "PROCESSING";
		$("pay-box").hidden = !payable || left === null;
		if (left !== null) {
			$("pay-countdown").textContent = mmss(left);
			$("pay-countdown").dataset.left = String(Math.max(0, Math.ceil(left / 1000)));
		}
		const name = o.itemId !== null ? itemName(o.itemId) : "";
		$("order-item").textContent = name ? t("orderItem", { name }) : "";
		$("order-id").textContent = t("orderId", { id: o.orderId });
		const pay = $("pay"), cancel = $("cancel");
		const expiredHere = left !== null && left <= 0;
		pay.hidden = cancel.hidden = !payable;
		pay.textContent = t(state.acting === "pay" ? "paying" : "pay");
		pay.disabled = !payable || expiredHere || state.acting !== null;
		if (state.acting === "cancel")
			cancel.textContent = t("cancelling");
		else if (!state.cancelArmed)
			cancel.textContent = t("cancel");
		cancel.disabled = !payable || expiredHere || state.acting !== null;
		renderLive();
	}

	function render() {
		renderAccount();
		if (!state.sale)
			return;
		$("sale-name").textContent = state.sale.name;
		document.title = `${state.sale.name} · ${t("title")}`;
		renderCountdown();
		renderItems();
		renderOrder();
		renderClock();
	}

	/* One tick drives the countdowns; it runs faster close to the start. */
	function tick() {
		let wait = 250;
		if (state.sale) {
			const now = serverNow(), left = state.sale.startsMs - now;
			if (left <= 0 && now < state.sale.endsMs && state.reveal === null)
				fetchReveal();
			if (left > 0) {
				wait = Math.min(250, Math.max(5, left));
				const secs = Math.ceil(left / 1000);
				if (secs === 60 && !state.announced.has(60)) {
					state.announced.add(60);
					announce(t("announceMinute"));
				} else if (secs === 10 && !state.announced.has(10)) {
					state.announced.add(10);
					announce(t("announceTen"));
				}
			}
			const o = state.order;
			if (o && o.status === "PENDING" && o.expiresAt && Date.parse(o.expiresAt) <= now && !state.expiryChecked) {
				/* The payment window closed here; ask the server what it says. */
				state.expiryChecked = true;
				fetchOrder();
			}
			render();
		}
		setTimeout(tick, wait);
	}

	async function main() {
		state.lang = pickLanguage();
		setLanguage(state.lang);
		for (const b of document.querySelectorAll(".lang button"))
			b.addEventListener("click", () => setLanguage(b.dataset.lang));
		$("signin").addEventListener("submit", signIn);
		$("signout").addEventListener("click", signOut);
		$("pay").addEventListener("click", () => orderAction("pay"));
		$("cancel").addEventListener("click", onCancel);

		const sale = new URLSearchParams(location.search).get("sale");
		if (!sale || !/^[0-9]{1,19}$/.test(sale)) {
			$("sale-name").textContent = t("noSale");
			renderAccount();
			return;
		}
		state.saleId = sale;
		loadAuth();
		renderAccount();
		await syncClock();
		await loadSale();
		if (state.auth)
			restoreOrder();
		tick();
		/* Clocks drift and sleeping tabs lose time: re-sync now and then. */
		setInterval(syncClock, 60000);
		document.addEventListener("visibilitychange", () => {
			if (!document.hidden)
				syncClock();
		});
	}

	document.addEventListener("DOMContentLoaded", main);
})();
