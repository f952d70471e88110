# shellcheck shell=sh
# shellcheck disable=SC2154 # repo is deploy/stack's
# The programs' environment ("deploy/stack env"), the state directory and
# its secrets (sourced by deploy/stack).

# Prints the environment of every program as NAME=value lines: the
# operator's (ROLE admin, the default) or the handlers' (ROLE handlers;
# consumer and purchase: the same as the consumer's and the purchase
# handler's; replayer: flashsale-admin dlq replay's), which differ in their
# Redis user and their Kafka principal (each job its own: lib/ordertopic.h;
# the handlers', flashsale-monitor, reads the order group's lag only; the
# replayer's reads dead letters and writes orders, nothing else).
env_lines() {
	case ${1:-admin} in
	admin) redis_user=flashsale-admin kafka_user=operator ;;
	handlers) redis_user=flashsale kafka_user=monitor ;;
	consumer | purchase) redis_user=flashsale kafka_user=$1 ;;
	# The replay re-takes a unit for an order as the operator does in Redis.
	replayer) redis_user=flashsale-admin kafka_user=replayer ;;
	*) die "no environment '$1' (admin, handlers, consumer, purchase, replayer)" ;;
	esac
	cat <<EOF
FLASHSALE_STATE=$STATE
FLASHSALE_PORT_BASE=$BASE
FLASHSALE_REDIS=$REDIS_ADDR
FLASHSALE_REDIS_USER=$redis_user
FLASHSALE_REDIS_PASSWORD_FILE=$SECRETS/redis-$redis_user.password
FLASHSALE_PG=$(pg_conninfo flashsale)
FLASHSALE_KAFKA_BROKERS=$KAFKA_BROKERS
FLASHSALE_KAFKA_TOPIC=$TOPIC
FLASHSALE_KAFKA_USER=flashsale-$kafka_user
FLASHSALE_KAFKA_PASSWORD_FILE=$SECRETS/kafka-$kafka_user.password
FLASHSALE_KAFKA_CA_FILE=$TLS_PUBLIC/ca.crt
FLASHSALE_KEYS_DIR=$STATE/keys
FLASHSALE_JWKS_FILE=$JWKS_FILE
FLASHSALE_ORDER_KEYS_FILE=$SECRETS/order.keys
FLASHSALE_DATADIR=$DATADIR
FLASHSALE_SOLDOUT_DIR=$SOLDOUT_DIR
FLASHSALE_NCHAN_PUB=$NCHAN_PUB
FLASHSALE_EXPIRE_TOKEN=$(cat "$STATE/expire.token" 2>/dev/null || true)
FLASHSALE_METRICS_DIR=$METRICS_DIR
FLASHSALE_EDGE_URL=http://127.0.0.1:$PORT_EDGE
FLASHSALE_ORIGIN_URL=http://$ORIGIN_HOST:$PORT_ORIGIN
FLASHSALE_SHOP_URL=http://127.0.0.1:$PORT_EDGE
FLASHSALE_PAYMENT_URL=http://127.0.0.1:$PORT_PROVIDER
FLASHSALE_PAYMENT_API_KEY=$(cat "$STATE/payment/api.key" 2>/dev/null || true)
FLASHSALE_PAYMENT_WEBHOOK_SECRET=$(cat "$STATE/payment/webhook.secret" 2>/dev/null || true)
EOF
	oidc_env_lines
}

# Points the functions at the parts whose environment "env" prints: this
# stack's (stack.d/cluster.sh: the first origin host's).
select_env() {
	:
}

# The same as "export NAME='value'" lines, quoted for the shell.
env_exports() {
	env_lines "$@" | sed "s/'/'\\\\''/g; s/=/='/; s/^/export /; s/\$/'/"
}

# Exports an environment (ROLE: admin, handlers) into this shell, for the
# programs we start.
export_env() {
	eval "$(env_exports "${1:-admin}")"
}

ensure_dirs() {
	if [ -n "$STATE_MOVED" ]; then
		(umask 022 && mkdir -p "$STATE")
		check_moved_state
		say state "$STATE (users postgres and vcache cannot enter $repo; FLASHSALE_STATE chooses another)"
	fi
	mkdir -p "$STATE" "$CONF" "$LOG" "$RUN" "$SOLDOUT_DIR" "$METRICS_DIR"
	chmod 755 "$STATE" "$CONF" "$METRICS_DIR"
	# Logs are for root and the group of PostgreSQL (which writes its own):
	# nobody else reads what a request line or an error message carried.
	chgrp postgres "$LOG"
	chmod 750 "$LOG"
	# Root opens its pid files and sockets in $RUN: nobody else may write
	# there (a symbolic link in place of nginx.pid would have root write
	# anywhere). PostgreSQL (user postgres) has a directory of its own for
	# its socket; root uses it too.
	chown "$(id -u):$(id -g)" "$RUN"
	chmod 755 "$RUN"
	mkdir -p "$PG_SOCKDIR"
	chown postgres:postgres "$PG_SOCKDIR"
	chmod 755 "$PG_SOCKDIR"
	# The secret of the operator expiry endpoint (deploy/crontab sends it).
	if [ ! -s "$STATE/expire.token" ]; then
		(umask 077 && od -An -tx1 -N24 /dev/urandom | tr -d ' \n' >"$STATE/expire.token")
	fi
	# The payment provider's API key and webhook signing secret, shared by
	# the simulator and flashsale-payment through the environment.
	(umask 077 && mkdir -p "$STATE/payment")
	for secret in api.key:sk_test_ webhook.secret:whsec_; do
		if [ ! -s "$STATE/payment/${secret%%:*}" ]; then
			(umask 077 && { printf '%s' "${secret#*:}"; od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; } \
				>"$STATE/payment/${secret%%:*}")
		fi
	done
	ensure_secrets
}

# Writes 32 random bytes, hex, into the file NAME of $SECRETS unless it
# holds one already.
ensure_secret() {
	if [ ! -s "$SECRETS/$1" ]; then
		(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$SECRETS/$1.tmp" &&
			mv "$SECRETS/$1.tmp" "$SECRETS/$1")
	fi
	chmod 600 "$SECRETS/$1"
}

# The stores' passwords, and libpq's passfile (host:port:db:user:password;
# "*" for the database, so the rehearsal's second database works too).
ensure_secrets() {
	mkdir -p "$SECRETS"
	chmod 700 "$SECRETS"
	ensure_secret pg.password
	ensure_secret redis-flashsale.password
	ensure_secret redis-flashsale-admin.password
	ensure_order_keys
	ensure_kafka_secrets
	pg_password=$(cat "$SECRETS/pg.password")
	(umask 077 && for pg_port in $PG_PORTS; do
		printf '%s:%s:*:%s:%s\n' "$PG_SOCKDIR" "$pg_port" "$PG_ROLE" "$pg_password"
		printf '127.0.0.1:%s:*:%s:%s\n' "$pg_port" "$PG_ROLE" "$pg_password"
	done >"$SECRETS/pgpass.tmp" && mv "$SECRETS/pgpass.tmp" "$SECRETS/pgpass")
}

# The order keys (FLASHSALE_ORDER_KEYS_FILE): one line "kid:key", a random
# key id and 32 random bytes in base64url, unless the file holds keys
# already (a rotation edits it: docs/SECURITY.md).
ensure_order_keys() {
	if [ ! -s "$SECRETS/order.keys" ]; then
		(umask 077 && printf 'o%s:%s\n' "$(od -An -tx1 -N4 /dev/urandom | tr -d ' \n')" \
			"$(head -c 32 /dev/urandom | basenc --base64url -w0 | tr -d =)" \
			>"$SECRETS/order.keys.tmp" && mv "$SECRETS/order.keys.tmp" "$SECRETS/order.keys")
	fi
	chmod 600 "$SECRETS/order.keys"
}
