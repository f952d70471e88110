/*
 * How fast the page's proof-of-work worker (static/pow.js) hashes in
 * Debian's headless Chromium, to calibrate a sale's powBits: prints the
 * SHA-256 per second of three runs of SECONDS each, their median, and the
 * bits that take about one second at a phone's speed (RATE / SLOWDOWN).
 *   node pow-rate.mjs [SECONDS] [SLOWDOWN]    (defaults 3 and 4.5)
 * Needs no stack: the worker is served from the checkout by page.route at
 * http://localhost/ (a secure context, as WebCrypto needs).
 */
import { readFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const seconds = Number(process.argv[2] || 3);
const slowdown = Number(process.argv[3] || 4.5);
const here = dirname(fileURLToPath(import.meta.url));
const worker = readFileSync(join(here, "..", "..", "static", "pow.js"), "utf8");
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--disable-component-update", "--no-first-run", "--disable-sync"];

const dir = mkdtempSync(join(tmpdir(), "fs-chromium-pow-"));
const ctx = await chromium.launchPersistentContext(dir, { executablePath: "/usr/bin/chromium", headless: true, args: ARGS });
try {
	const page = ctx.pages()[0] || (await ctx.newPage());
	await page.route("http://localhost/**", (route) => {
		const u = new URL(route.request().url());
		if (u.pathname === "/pow.js")
			return route.fulfill({ status: 200, contentType: "text/javascript", body: worker });
		return route.fulfill({ status: 200, contentType: "text/html", body: "<!doctype html><title>pow</title>" });
	});
	await page.goto("http://localhost/");
	const rates = [];
	for (let run = 0; run < 3; run++) {
		/* 64 bits never come: the worker only reports progress until it is stopped. */
		const r = await page.evaluate((ms) => new Promise((resolve) => {
			const w = new Worker("/pow.js");
			let last = null;
			w.onmessage = (ev) => { last = ev.data; };
			w.postMessage({ prefix: "fsq1|1|calibrate|", bits: 64 });
			setTimeout(() => { w.terminate(); resolve(last); }, ms);
		}), seconds * 1000);
		rates.push(r.tried / (r.ms / 1000));
		console.log(`run ${run + 1}: ${r.tried} SHA-256 in ${Math.round(r.ms)} ms = ${Math.round(rates[run])}/s`);
	}
	rates.sort((a, b) => a - b);
	const median = rates[1], phone = median / slowdown;
	const bits = Math.floor(Math.log2(phone));
	console.log(`median ${Math.round(median)}/s; a phone ${slowdown}x slower: ${Math.round(phone)}/s`);
	console.log(`powBits ${bits}: 2^${bits} = ${2 ** bits} hashes expected, ${(2 ** bits / phone).toFixed(2)} s on the phone, ` +
		`${(2 ** bits / median).toFixed(2)} s here; powBits ${bits + 1}: ${(2 ** (bits + 1) / phone).toFixed(2)} s on the phone`);
} finally {
	await ctx.close();
	rmSync(dir, { recursive: true, force: true });
}
