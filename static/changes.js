/*
 * How the page's modules say "something changed": the view listens and
 * draws again. The modules that own state never touch the page themselves.
 */

const listeners = [];

export function onChange(fn) {
	listeners.push(fn);
}

export function changed() {
	for (const fn of listeners)
		fn();
}
