/*
 * The waiting room panel: the shopper's phase in line (queue.js owns it),
 * the estimate, the pass's countdown, and the draw's commitment and check.
 * Nothing here talks to the server; view.js calls renderQueue on each draw.
 */
import { serverNow } from "./clock.js";
import { t } from "./i18n.js";
import { queueView } from "./queue.js";

const $ = (id) => document.getElementById(id);

let spokenPhase = null;

/*
 * A server instant on the device's clock, in its second; within a quarter
 * second of a whole one, that one: a device a few ms off says 20:00:00 for
 * 20:00:00, not 19:59:59.
 */
function localTime(serverMs) {
	const at = serverMs + Date.now() - serverNow(), whole = Math.round(at / 1000) * 1000;
	const d = new Date(Math.abs(at - whole) < 250 ? whole : at);
	return d.toLocaleTimeString(t("locale"), { timeStyle: "medium" });
}

function mmss(ms) {
	const s = Math.max(0, Math.ceil(ms / 1000));
	return `${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
}

/* "About N people ahead of you · U units left · your turn in about M minutes" */
function waitingLine(v) {
	const parts = [v.ahead === 0 ? t("queueAheadNone") : v.ahead === 1 ? t("queueAheadOne") : t("queueAhead", { n: v.ahead })];
	if (v.unitsLeft !== null)
		parts.push(v.unitsLeft === 1 ? t("queueUnitsOne") : t("queueUnits", { u: v.unitsLeft }));
	if (v.minutes !== null && v.ahead > 0)
		parts.push(v.minutes === 1 ? t("queueMinutesOne") : t("queueMinutes", { m: v.minutes }));
	return parts.join(" · ");
}

function phaseText(v) {
	switch (v.phase) {
	case "before": return t("queueBefore", { time: localTime(v.preMs) });
	case "signin": return t("queueSignin");
	case "solving": return t("queueSolving", { p: Math.min(99, Math.floor(v.solving.tried * 100 / v.solving.expected)) });
	case "joining": return t("queueJoining");
	case "joined": return t("queueJoined", { time: localTime(v.opensMs) });
	case "drawing": return t("queueDrawing");
	case "waiting": return waitingLine(v);
	case "turn": return t("queueTurn");
	case "pass": return t("queuePass");
	case "bought": return t("queueBought");
	case "lapsed": return t("queueLapsed");
	case "soldout": return t("queueSoldOut");
	case "queueClosed": return t("queueClosed");
	case "ended": return t("queueEnded");
	}
	return "";
}

/* Draws the panel; answers the phase's words so that view.js can announce a change. */
export function renderQueue(announce) {
	const sec = $("queue"), v = queueView();
	sec.hidden = v === null;
	if (!v)
		return;
	sec.dataset.phase = v.phase;
	const text = phaseText(v);
	const st = $("queue-status");
	st.textContent = text;
	if (v.phase === "waiting") {
		st.dataset.ahead = String(v.ahead);
		st.dataset.minutes = v.minutes === null ? "" : String(v.minutes);
	}
	if (v.score !== null)
		sec.dataset.score = String(v.score);
	/* The estimate changes every second: only a new phase is spoken. */
	if (spokenPhase !== v.phase) {
		spokenPhase = v.phase;
		if (v.phase !== "solving")
			announce(text);
	}
	const bar = $("queue-progress");
	bar.hidden = v.phase !== "solving";
	if (v.phase === "solving")
		bar.firstElementChild.style.width = `${Math.min(99, v.solving.tried * 100 / v.solving.expected)}%`;
	const passing = v.phase === "pass";
	$("queue-pass").hidden = !passing;
	if (passing) {
		$("queue-pass-countdown").textContent = mmss(v.passLeftMs);
		$("queue-pass-countdown").dataset.left = String(Math.max(0, Math.ceil(v.passLeftMs / 1000)));
	}
	$("queue-commit").textContent = v.seedCommit ? t("queueCommit", { commit: v.seedCommit }) : "";
	const draw = $("queue-draw");
	draw.textContent = v.seedCheck ? t(v.seedCheck.ok ? "queueDrawOk" : "queueDrawBad", { seed: v.seedCheck.seed }) : "";
	draw.dataset.ok = v.seedCheck ? String(v.seedCheck.ok) : "";
}
