/*
 * The waiting room join's proof of work (docs/QUEUE.md), in a Web Worker
 * so that the page stays responsive while it runs: SHA-256 (WebCrypto) of
 * "fsq1|<sale>|<sub>|<nonce>" until the digest starts with `bits` zero
 * bits. It binds the work to the account and the sale; it prices a join,
 * it does not stop a farm of accounts.
 *
 * In:  { prefix: "fsq1|<sale>|<sub>|", bits }
 * Out: { tried, ms } about every 100 ms, then { nonce, tried, ms }.
 *
 * Nonces are a counter in base 36 ([0-9a-z], within the contract's
 * [A-Za-z0-9_-]{1,32}) from a random start. WebCrypto's digest is
 * asynchronous: a batch of them in flight at once hides most of the cost
 * of each promise.
 */
const BATCH = 1024;
const enc = new TextEncoder();

function hasZeroBits(d, bits) {
	let i = 0;
	for (; bits >= 8; bits -= 8, i++)
		if (d[i] !== 0)
			return false;
	return bits === 0 || (d[i] >> (8 - bits)) === 0;
}

async function solve(prefix, bits) {
	const t0 = performance.now();
	let next = Math.floor(Math.random() * 2 ** 40);
	let tried = 0, told = t0;
	for (;;) {
		const nonces = [], work = [];
		for (let i = 0; i < BATCH; i++) {
			const n = (next++).toString(36);
			nonces.push(n);
			work.push(crypto.subtle.digest("SHA-256", enc.encode(prefix + n)));
		}
		const digests = await Promise.all(work);
		for (let i = 0; i < BATCH; i++) {
			tried++;
			if (hasZeroBits(new Uint8Array(digests[i]), bits))
				return { nonce: nonces[i], tried, ms: performance.now() - t0 };
		}
		const now = performance.now();
		if (now - told >= 100) {
			told = now;
			postMessage({ tried, ms: now - t0 });
		}
	}
}

onmessage = async (ev) => {
	const { prefix, bits } = ev.data || {};
	if (typeof prefix !== "string" || !Number.isInteger(bits) || bits < 0 || bits > 64)
		return;
	postMessage(await solve(prefix, bits));
};
