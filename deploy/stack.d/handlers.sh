# shellcheck shell=sh
# deploy/stack's part the FastCGI handlers: start, ready, stop, status
# (sourced by deploy/stack).

# Prints "program processes" for every handler of deploy/handlers.conf.
handler_list() {
	grep -v '^[[:space:]]*#' "$here/handlers.conf" | while read -r prog procs; do
		[ -n "$prog" ] || continue
		if [ "$prog" = flashsale-purchase ] && [ -n "${FLASHSALE_PURCHASE_PROCS:-}" ]; then
			procs=$FLASHSALE_PURCHASE_PROCS
		fi
		echo "$prog $procs"
	done
}

# Processes of a handler for name lookups: "flashsale-order" -> "2".
handler_procs() {
	handler_list | awk -v p="$1" '$1 == p { print $2 }'
}

ensure_keys() {
	# A key directory of an older version lacks the demo pair or the waiting
	# room's queue.key: generate adds what is missing.
	if [ -d "$STATE/keys" ] && [ -f "$STATE/keys/demo-ed25519.pub" ] &&
		[ -f "$STATE/keys/queue.key" ]; then
		:
	elif [ -x "$BINDIR/flashsale-admin" ]; then
		export_env admin
		"$BINDIR/flashsale-admin" keys generate "$STATE/keys" ||
			die "flashsale-admin keys generate failed"
		say keys "generated in $STATE/keys"
	else
		warn "no $STATE/keys and no $BINDIR/flashsale-admin to generate them"
	fi
	write_jwks
}

# The stack's own token keys as a JWK Set (FLASHSALE_JWKS_FILE): tokens that
# name them by kid, as an identity provider's do, pass like those without.
# Rewritten from the key files at every start, by a rename that running
# handlers never see half done; the demo key keeps its own kid "demo".
write_jwks() {
	[ -f "$STATE/keys/jwt-ed25519.pub" ] && [ -f "$STATE/keys/jwt-hs256.key" ] || return 0
	x=$(basenc --base64url -w0 <"$STATE/keys/jwt-ed25519.pub" | tr -d =)
	k=$(basenc --base64url -w0 <"$STATE/keys/jwt-hs256.key" | tr -d =)
	(
		umask 077
		printf '{"keys":[\n{"kty":"OKP","crv":"Ed25519","kid":"%s","use":"sig","alg":"EdDSA","x":"%s"},\n{"kty":"oct","kid":"%s","use":"sig","alg":"HS256","k":"%s"}\n]}\n' \
			stack-ed25519 "$x" stack-hs256 "$k" >"$JWKS_FILE.new"
	) && mv -f "$JWKS_FILE.new" "$JWKS_FILE" || die "cannot write $JWKS_FILE"
}

# spawn-fcgi -F N forks N processes on one socket and writes all N PIDs to
# the -P file, one per line. Its children have stdout and stderr on
# /dev/null: a shell in between sends them to the handler's log instead.
start_handler() {
	prog=$1
	procs=$2
	pidfile=$RUN/$prog.pid
	if [ -n "$(part_pids "$prog")" ]; then
		alive=$(part_pids "$prog" | wc -l | tr -d ' ')
		say "$prog" "already running ($alive of $(wc -w <"$pidfile" | tr -d ' ') processes)"
		return 0
	fi
	[ -x "$BINDIR/$prog" ] || die "$(not_built "$prog")"
	case $procs in
	'' | *[!0-9]* | 0) die "$prog: bad process count '$procs'" ;;
	esac
	# The purchase handlers write orders as their own Kafka principal.
	if [ "$prog" = flashsale-purchase ]; then
		export_env purchase
	else
		export_env handlers
	fi
	rm -f "$pidfile"
	spawn-fcgi -s "$RUN/$prog.sock" -M 0660 -F "$procs" -P "$pidfile" -- \
		/bin/sh -c 'exec "$0" >>"$1" 2>&1' "$BINDIR/$prog" "$LOG/$prog.log" \
		>>"$LOG/spawn-fcgi.log" 2>&1 || die "spawn-fcgi $prog failed; see $LOG/spawn-fcgi.log"
	# spawn-fcgi leaves the last line without its newline (wc -l is one short).
	printf '%s\n' $(cat "$pidfile") >"$pidfile.tmp"
	mv "$pidfile.tmp" "$pidfile"
	say "$prog" "started ($procs processes, $RUN/$prog.sock)"
}

# Serving: the socket exists, a process is alive, and the handler answers
# its /healthz through nginx (the FastCGI driver answers it).
ready_handler() {
	[ -S "$RUN/$1.sock" ] || return 1
	[ -n "$(part_pids "$1")" ] || return 1
	[ "$(http_probe GET "/healthz/$1")" = 200 ]
}

# What the handler's /readyz says: "ready", or why not (its detail).
handler_readiness() {
	body=$(curl -s -m 5 "http://$ORIGIN_HOST:$PORT_ORIGIN/readyz/$1" 2>/dev/null)
	case $body in
	*'"status":"ready"'*) echo ready ;;
	*'"detail":"'*) printf 'NOT READY: %s\n' "$(printf '%s' "$body" | sed 's/.*"detail":"\([^"]*\)".*/\1/')" ;;
	*) echo "NOT READY: no answer" ;;
	esac
}

stop_handler() {
	stop_pidfile "$1" "$RUN/$1.pid" 10
	rm -f "$RUN/$1.sock"
}

status_handler() {
	if [ ! -x "$BINDIR/$1" ] && [ ! -f "$RUN/$1.pid" ]; then
		say "$1" "absent (not built)"
		return 0
	fi
	alive=$(part_pids "$1" | wc -l | tr -d ' ')
	if [ "$alive" -gt 0 ] && [ -S "$RUN/$1.sock" ]; then
		# Readiness is asked through nginx, when it runs.
		if [ -z "$(part_pids nginx)" ]; then
			say "$1" "up ($alive of $2 processes)"
			return 0
		fi
		readiness=$(handler_readiness "$1")
		say "$1" "up ($alive of $2 processes, $readiness)"
		[ "$readiness" = ready ]
		return
	fi
	say "$1" "down"
	return 1
}

start_handlers() {
	ensure_keys
	handler_list | while read -r prog procs; do
		start_handler "$prog" "$procs"
	done
}

# Run after nginx is up: the probes go through it.
ready_handlers() {
	handler_list | while read -r prog procs; do
		[ -f "$RUN/$prog.pid" ] || continue
		wait_for 10 ready_handler "$prog" ||
			die "$prog does not answer through nginx; see $LOG/$prog.log"
	done
}

# All handlers at once: the grace period runs once, not once per program.
stop_handlers() {
	running=$(handler_list | while read -r prog procs; do
		echo "$prog" $(part_pids "$prog")
	done)
	# shellcheck disable=SC2046
	kill_pids 10 $(printf '%s\n' "$running" | cut -s -d' ' -f2-)
	printf '%s\n' "$running" | while read -r prog pids; do
		rm -f "$RUN/$prog.pid" "$RUN/$prog.sock"
		if [ -n "$pids" ]; then
			say "$prog" "stopped (pid $pids)"
		else
			say "$prog" "not running"
		fi
	done
}

status_handlers() {
	handler_list | {
		rc=0
		while read -r prog procs; do
			status_handler "$prog" "$procs" || rc=1
		done
		exit $rc
	}
}
