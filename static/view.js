/*
 * The page itself: draws the state the other modules own, announces
 * changes to screen readers, and turns clicks into their calls. Nothing
 * here talks to the server.
 */
import { currentAuth, forgetAuth, signIn, USER_ID } from "./auth.js";
import { oidcConfig, startSignIn } from "./oidc.js";
import { buy, retryUntil } from "./buy.js";
import { onChange } from "./changes.js";
import { clockInfo, serverNow } from "./clock.js";
import { chooseLanguage, language, t } from "./i18n.js";
import { cancelOrder, checkout, currentOrder, findMyOrder, forgetOrder, LIVE, orderState, restoreOrder, startOrder } from "./order.js";
import { dropOutcomes, outcome, statusOutcome } from "./outcomes.js";
import { queueGate } from "./queue.js";
import { renderQueue } from "./queueview.js";
import { currentSale, currentSaleId, itemName, purchaseUrl, revealed, saleProblem } from "./sale.js";
import { unitsLeft, unitsWords } from "./stock.js";

const $ = (id) => document.getElementById(id);

/* What was drawn or said last, so that each change is announced once. */
let builtFor = null;
let announcedReveal = false;
const announcedOutcomes = new Map();
let cancelArmed = 0;
let drawing = false;

export function announce(text) {
	const a = $("announcer");
	/* Clearing first makes a repeated message be read again. */
	a.textContent = "";
	setTimeout(() => { a.textContent = text; }, 50);
}

export function setLanguage(lang) {
	chooseLanguage(lang);
	document.documentElement.lang = language();
	for (const el of document.querySelectorAll("[data-i18n]"))
		el.textContent = t(el.dataset.i18n);
	for (const el of document.querySelectorAll("[data-i18n-label]"))
		el.setAttribute("aria-label", t(el.dataset.i18nLabel));
	for (const b of document.querySelectorAll(".lang button"))
		b.setAttribute("aria-pressed", String(b.dataset.lang === language()));
	render();
}

export function spokenDuration(ms) {
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

function formatOffset(ms) {
	const s = Math.abs(ms) / 1000;
	return s < 10 ? s.toFixed(1) + " s" : Math.round(s) + " s";
}

function money(minor, currency) {
	try {
		const f = new Intl.NumberFormat(t("locale"), { style: "currency", currency });
		const digits = f.resolvedOptions().maximumFractionDigits;
		return f.format(minor / Math.pow(10, digits));
	} catch (e) {
		return `${minor} ${currency}`;
	}
}

function mmss(ms) {
	const s = Math.max(0, Math.ceil(ms / 1000));
	return `${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
}

function pad2(n) {
	return String(n).padStart(2, "0");
}

/* --- drawing ----------------------------------------------------- */

function renderClock() {
	const el = $("clock");
	const c = clockInfo();
	const dir = t(c.deviceOffset > 0 ? "clockAhead" : "clockBehind");
	const rtt = Math.max(1, Math.round(c.rtt / 2));
	el.dataset.offsetMs = String(Math.round(c.deviceOffset));
	if (c.source === "device")
		el.textContent = t("clockSyncing");
	else if (c.source === "document")
		el.textContent = t("clockFallback", { dir, offset: formatOffset(c.deviceOffset) });
	else if (Math.abs(c.deviceOffset) < 50)
		el.textContent = t("clockExact", { rtt });
	else
		el.textContent = t("clockSynced", { rtt, dir, offset: formatOffset(c.deviceOffset) });
}

/*
 * The item's state now: the document's, sharpened by the clock, the units
 * left (fresher than the sale document) and answers.
 */
/* Whether the shopper holds a live order of the item. */
function holdsItem(itemId) {
	const ord = currentOrder();
	return ord !== null && LIVE.has(ord.status) && String(ord.itemId) === String(itemId);
}

function itemState(it) {
	const now = serverNow(), s = currentSale();
	if (now >= s.endsMs)
		return "ended";
	const o = outcome(it.itemId), u = unitsLeft(it.itemId);
	const soldOut = u ? u.soldOut : it.state === "sold_out";
	/* Whoever holds a unit of the item is never told it is sold out. */
	if (!holdsItem(it.itemId) && (soldOut || (o && o.kind === "sold_out")))
		return "sold_out";
	if (now < s.startsMs)
		return "upcoming";
	return "on_sale";
}

function buildItems(sale) {
	const list = $("items"), tpl = $("item-template");
	list.textContent = "";
	for (const it of sale.items) {
		const li = tpl.content.firstElementChild.cloneNode(true);
		li.dataset.itemId = String(it.itemId);
		li.querySelector(".buy").addEventListener("click", () => onBuy(it.itemId));
		const nameId = `item-name-${it.itemId}`;
		li.querySelector(".item-name").id = nameId;
		li.setAttribute("aria-labelledby", nameId);
		li.querySelector(".buy").setAttribute("aria-describedby", `${nameId} item-outcome-${it.itemId}`);
		li.querySelector(".outcome").id = `item-outcome-${it.itemId}`;
		list.appendChild(li);
	}
}

function outcomeText(itemId) {
	const o = outcome(itemId);
	if (!o)
		return null;
	const retryS = o.until ? Math.max(1, Math.ceil((o.until - serverNow()) / 1000)) : 1;
	const ord = currentOrder();
	const order = ord && String(ord.itemId) === String(itemId) ? ord : null;
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
	case "not_admitted": return { text: t("outNotAdmitted"), tone: "bad" };
	case "unavailable": return { text: t("outUnavailable"), tone: "bad" };
	case "network": return { text: t("outNetwork"), tone: "bad" };
	}
	return null;
}

function renderOutcome(li, id) {
	const o = outcome(id);
	const out = li.querySelector(".outcome");
	const ot = outcomeText(id);
	li.dataset.outcome = o ? o.kind : "";
	if (o && ot && announcedOutcomes.get(id) !== o) {
		announcedOutcomes.set(id, o);
		announce(ot.text);
	}
	if (!ot) {
		out.textContent = "";
		out.removeAttribute("data-tone");
		return;
	}
	out.dataset.tone = ot.tone;
	if (!ot.link) {
		out.dataset.link = "";
		out.textContent = ot.text;
		return;
	}
	/* Rebuilt only when it changes, so the link keeps focus. */
	if (out.dataset.link === ot.link)
		return;
	out.textContent = ot.text + " ";
	const a = document.createElement("a");
	a.href = `?sale=${encodeURIComponent(currentSaleId())}&order=${encodeURIComponent(ot.link)}`;
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

/* How much is left, as shoppers know it; nothing until the first read. */
function renderUnits(li, u, held) {
	const qty = li.querySelector(".qty"), bar = li.querySelector(".sold-bar");
	if (!u) {
		qty.textContent = "";
		bar.hidden = true;
		return;
	}
	const w = unitsWords(u, held);
	qty.textContent = t(w.key, w.vars);
	qty.dataset.left = String(u.left);
	qty.dataset.words = w.key;
	bar.hidden = false;
	const sold = u.quantity > 0 ? Math.round((u.quantity - u.left) * 100 / u.quantity) : 100;
	bar.firstElementChild.style.width = `${Math.min(100, Math.max(0, sold))}%`;
}

function renderItems(sale) {
	const now = serverNow();
	const order = currentOrder();
	/* In a sale with a waiting room, Buy waits for the shopper's turn. */
	const gate = queueGate();
	for (const it of sale.items) {
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
		renderUnits(li, unitsLeft(id), holdsItem(id));

		const o = outcome(id);
		const btn = li.querySelector(".buy");
		const until = retryUntil(id);
		const busy = o && o.kind === "buying";
		const ready = st === "on_sale" && purchaseUrl(id) !== undefined;
		/* One live order per shopper per sale: a second buy would be refused. */
		const holding = order !== null && LIVE.has(order.status);
		const waiting = gate !== null && !gate.canBuy;
		btn.disabled = !ready || busy || holding || waiting || (until !== undefined && until > now);
		if (holding && ready)
			btn.textContent = t("buyHaveOrder");
		else if (waiting && st === "on_sale")
			btn.textContent = t(gate.label);
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
		renderOutcome(li, id);
	}
}

function renderCountdown(s) {
	const now = serverNow();
	const cd = $("countdown"), phase = $("phase");
	let target = null;
	if (now < s.startsMs) {
		phase.textContent = t("phaseUpcoming");
		target = s.startsMs;
	} else if (now < s.endsMs) {
		phase.textContent = revealed() ? t("phaseOnSale") : t("phaseStarting");
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
	const local = new Date(s.startsMs + (Date.now() - now));
	$("starts-at").textContent = t("startsAt", {
		time: local.toLocaleString(t("locale"), { dateStyle: "medium", timeStyle: "medium" }),
	});
}

function renderAccount() {
	const a = currentAuth();
	$("signin").hidden = a !== null;
	$("oidc").hidden = a !== null || oidcConfig() === null;
	$("whoami").hidden = a === null;
	$("who").textContent = a ? a.userId : "";
}

function renderLive(st) {
	const el = $("order-live");
	$("order").dataset.live = st.live || "";
	if (st.notice)
		el.textContent = t(st.notice.key, st.notice.vars);
	else
		el.textContent = { sse: t("liveSse"), poll: t("livePoll"), connecting: t("liveConnecting") }[st.live] || "";
}

function renderOrder() {
	const sec = $("order"), o = currentOrder(), st = orderState();
	sec.hidden = o === null;
	if (!o)
		return;
	const status = o.status || "PROCESSING";
	sec.dataset.status = status;
	sec.dataset.source = st.source;
	sec.tabIndex = -1;
	const left = o.expiresAt ? Date.parse(o.expiresAt) - serverNow() : null;
	const text = {
		processing: t("outProcessing"),
		reserved: t("outReserved", { left: left === null ? "--:--" : mmss(left) }),
		paid: t("outPaid"), expired: t("outExpired"), cancelled: t("outCancelled"), failed: t("outFailed"),
	}[statusOutcome(status)];
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
	pay.textContent = t(st.acting === "pay" ? "paying" : "pay");
	/* The provider takes a payment for a recorded (PENDING) order only. */
	pay.disabled = status !== "PENDING" || expiredHere || st.acting !== null;
	if (st.acting === "cancel")
		cancel.textContent = t("cancelling");
	else if (!cancelArmed)
		cancel.textContent = t("cancel");
	cancel.disabled = !payable || expiredHere || st.acting !== null;
	renderLive(st);
}

/* Draws everything from the modules' state; cheap enough for every tick. */
export function render() {
	if (drawing)
		return;
	drawing = true;
	try {
		renderAccount();
		const sale = currentSale();
		if (!sale) {
			const problem = saleProblem();
			if (problem)
				$("sale-name").textContent = t(problem);
			return;
		}
		if (builtFor !== currentSaleId()) {
			builtFor = currentSaleId();
			buildItems(sale);
			const left = sale.startsMs - serverNow();
			if (left > 0)
				announce(t("announceStartsIn", { time: spokenDuration(left) }));
		}
		if (revealed() && !announcedReveal) {
			announcedReveal = true;
			announce(t("announceStarted"));
			document.body.dataset.revealed = "true";
		}
		$("sale-name").textContent = sale.name;
		document.title = `${sale.name} · ${t("title")}`;
		renderCountdown(sale);
		renderQueue(announce);
		renderItems(sale);
		renderOrder();
		renderClock();
	} finally {
		drawing = false;
	}
}

/* --- what the shopper does ---------------------------------------- */

async function onBuy(itemId) {
	if (!(await buy(itemId)))
		$("user-id").focus();
}

export function signOut() {
	forgetAuth();
	forgetOrder();
	render();
}

async function onSignIn(ev) {
	ev.preventDefault();
	const input = $("user-id"), msg = $("signin-msg"), btn = $("signin-button");
	const userId = input.value.trim();
	if (userId !== "" && !USER_ID.test(userId)) {
		msg.textContent = t("signinFailed", { reason: input.getAttribute("pattern") });
		input.focus();
		return;
	}
	btn.disabled = true;
	btn.textContent = t("signinBusy");
	msg.textContent = "";
	const r = await signIn(userId);
	if (r.ok) {
		restoreOrder();
		findMyOrder();
		dropOutcomes("signed_out");
	} else {
		msg.textContent = { network: t("outNetwork"), off: t("signinOff") }[r.why] ||
			t("signinFailed", { reason: r.reason });
	}
	btn.disabled = false;
	btn.textContent = t("signinButton");
	render();
	if (currentAuth())
		$("signout").focus();
}

/* The shop's sign-in: off to the provider's page (the page comes back signed in). */
async function onOidcSignIn() {
	const btn = $("oidc-signin");
	btn.disabled = true;
	btn.textContent = t("oidcBusy");
	$("oidc-msg").textContent = "";
	try {
		await startSignIn();
	} catch (e) {
		showSignInProblem(e.message);
		btn.disabled = false;
		btn.textContent = t("oidcSignin");
	}
}

/* Why the shop's sign-in did not complete (oidc.js's reason). */
export function showSignInProblem(reason) {
	$("oidc-msg").textContent = reason === "network" ? t("outNetwork") : t("signinFailed", { reason });
}

/* Cancel asks twice: a unit lost by a slip is lost for good. */
function onCancel() {
	const btn = $("cancel");
	if (cancelArmed && performance.now() - cancelArmed < 5000) {
		cancelArmed = 0;
		btn.classList.remove("confirm");
		cancelOrder();
		return;
	}
	cancelArmed = performance.now();
	btn.classList.add("confirm");
	btn.textContent = t("cancelConfirm");
	announce(t("cancelConfirm"));
	setTimeout(() => {
		if (cancelArmed && performance.now() - cancelArmed >= 5000) {
			cancelArmed = 0;
			btn.classList.remove("confirm");
			render();
		}
	}, 5100);
}

/* Hooks the page's controls up and draws on every change of state. */
export function bindView() {
	for (const b of document.querySelectorAll(".lang button"))
		b.addEventListener("click", () => setLanguage(b.dataset.lang));
	$("signin").addEventListener("submit", onSignIn);
	$("signout").addEventListener("click", signOut);
	$("oidc-signin").addEventListener("click", onOidcSignIn);
	$("pay").addEventListener("click", checkout);
	$("cancel").addEventListener("click", onCancel);
	onChange(render);
}

export function showNoSale() {
	$("sale-name").textContent = t("noSale");
	renderAccount();
}
