/*
 * The sale page. It counts down to the start on the server's clock, asks
 * the edge for the reveal document at the start instant (never before),
 * buys with the shopper's bearer token, and follows the order live by
 * Server-Sent Events, polling the order when the stream is unavailable.
 *
 * Modules (ES modules, no build step): i18n (words), api (the one request
 * function), clock (the server's time), auth (the shopper's token), sale
 * (sale and reveal documents), stock (units left), outcomes (per-item answers), buy, order
 * (status, stream, checkout, cancel), changes (change notification), queue
 * (the waiting room of a sale that has one; pow.js its worker, queueview.js
 * its panel), oidc (the shop's OpenID Connect sign-in), view (the page).
 * This one starts them and runs the clock tick.
 */
import { onSignedOut } from "./api.js";
import { currentAuth, loadAuth } from "./auth.js";
import { serverNow, syncClock } from "./clock.js";
import { pickLanguage, t } from "./i18n.js";
import { finishSignIn, loadOidcConfig } from "./oidc.js";
import { checkExpiry, findMyOrder, restoreOrder } from "./order.js";
import { queueTick } from "./queue.js";
import { currentSale, fetchReveal, loadSale, revealed, useSale } from "./sale.js";
import { loadStock } from "./stock.js";
import { announce, bindView, render, setLanguage, showNoSale, showSignInProblem, signOut } from "./view.js";

const spoken = new Set();

/* One tick drives the countdowns; it runs faster close to the start. */
function tick() {
	let wait = 250;
	const sale = currentSale();
	if (sale) {
		const now = serverNow(), left = sale.startsMs - now;
		if (left <= 0 && now < sale.endsMs && !revealed())
			fetchReveal();
		if (left > 0) {
			wait = Math.min(250, Math.max(5, left));
			const secs = Math.ceil(left / 1000);
			if (secs === 60 && !spoken.has(60)) {
				spoken.add(60);
				announce(t("announceMinute"));
			} else if (secs === 10 && !spoken.has(10)) {
				spoken.add(10);
				announce(t("announceTen"));
			}
		}
		checkExpiry();
		queueTick();
		render();
	}
	setTimeout(tick, wait);
}

async function main() {
	setLanguage(pickLanguage());
	bindView();
	onSignedOut(signOut);
	/* Back from the provider: the code becomes the token, the URL the page's again. */
	const back = await finishSignIn();
	loadOidcConfig().then(render);
	const sale = new URLSearchParams(location.search).get("sale");
	if (!sale || !/^[1-9][0-9]{0,17}$/.test(sale)) {
		showNoSale();
		return;
	}
	useSale(sale);
	loadAuth();
	render();
	if (back && !back.ok)
		showSignInProblem(back.reason);
	await syncClock();
	render();
	await loadSale();
	loadStock();
	if (currentAuth()) {
		restoreOrder();
		/* The server's word: an order bought elsewhere, or after a 503. */
		findMyOrder();
	}
	tick();
	/* Clocks drift and sleeping tabs lose time: re-sync now and then. */
	setInterval(syncClock, 60000);
	document.addEventListener("visibilitychange", () => {
		if (!document.hidden)
			syncClock();
	});
}

main();
