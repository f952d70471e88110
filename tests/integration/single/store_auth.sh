# shellcheck shell=sh disable=SC2046 # set -- $(...) splits ids into words on purpose
# The stores authenticate: PostgreSQL asks the application role for its
# scram-sha-256 password and refuses everyone else; Redis has no default
# user, the handlers' ACL user runs only what the handlers need and the
# operator's no dangerous command; the nchan publisher has no TCP port;
# the secrets are 0600 files that no log repeats.

secrets=$FLASHSALE_STATE/secrets
run=$FLASHSALE_STATE/run
pg_port=$((FLASHSALE_PORT_BASE + 3))
set -- $(new_sale -5 3)
sale=$1 item=$2

# --- secrets -----------------------------------------------------------------
is "$(stat -c %a "$secrets")" "700" "the secrets directory is 0700"
is "$(stat -c %a "$secrets"/* | sort -u)" "600" "every secret file is 0600"
is "$(wc -c <"$secrets/pg.password" | tr -d ' ')" "64" "the PostgreSQL password is 32 random bytes (hex)"
case $FLASHSALE_PG in
*password=*) not_ok "FLASHSALE_PG carries no password (a passfile instead)" "$FLASHSALE_PG" ;;
*"passfile=$secrets/pgpass"*) ok "FLASHSALE_PG carries no password (a passfile instead)" ;;
*) not_ok "FLASHSALE_PG carries no password (a passfile instead)" "$FLASHSALE_PG" ;;
esac

# --- PostgreSQL ----------------------------------------------------------------
no_pass() { PGPASSFILE=/nonexistent PGPASSWORD='' psql -X -w -A -t "$1" -c 'SELECT 1'; }
is "$(psql_q 'SELECT current_user')" "flashsale" "the programs connect as the role flashsale"
is "$(psql_q "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" "f" \
    "which is no superuser"
refuse "PostgreSQL refuses flashsale on the socket without the password" \
    no_pass "host=$run/postgres port=$pg_port dbname=flashsale user=flashsale"
refuse "PostgreSQL refuses flashsale on 127.0.0.1 without the password" \
    no_pass "host=127.0.0.1 port=$pg_port dbname=flashsale user=flashsale"
refuse "PostgreSQL refuses a wrong password" env PGPASSWORD=0000 \
    psql -X -w "host=127.0.0.1 port=$pg_port dbname=flashsale user=flashsale passfile=/nonexistent" -c 'SELECT 1'
refuse "PostgreSQL refuses the superuser over TCP" \
    no_pass "host=127.0.0.1 port=$pg_port dbname=flashsale user=postgres"
refuse "PostgreSQL refuses the superuser to root on the socket (peer: OS user postgres only)" \
    no_pass "host=$run/postgres port=$pg_port dbname=flashsale user=postgres"
is "$(stat -c %a "$run/postgres/.s.PGSQL.$pg_port")" "770" "the PostgreSQL socket is not world-writable (0770)"

# --- Redis -------------------------------------------------------------------
hredis() { redis_as flashsale "$secrets/redis-flashsale.password" "$@"; }
is "$(redis-cli -s "$FLASHSALE_REDIS" GET "fs:{$sale}:stock:$item" 2>&1)" \
    "NOAUTH Authentication required." "Redis: no command without AUTH (default user off)"
is "$(REDISCLI_AUTH=wrong redis-cli --no-auth-warning --user flashsale -s "$FLASHSALE_REDIS" PING 2>&1 |
	grep -c WRONGPASS)" "1" "Redis: a wrong password is refused"
is "$(hredis GET "fs:{$sale}:stock:$item")" "3" "the handlers' user reads the stock"
for cmd in "FLUSHALL" "FLUSHDB" "CONFIG GET port" "KEYS fs:*" "DEL fs:{$sale}:holders" \
	"SET fs:{$sale}:stock:$item 100" "EVAL return 1 0" "SHUTDOWN NOSAVE" "ACL LIST" \
	"MONITOR" "SWAPDB 0 1"; do
	# shellcheck disable=SC2086 # the command and its arguments, one word each
	is "$(hredis $cmd 2>&1 | cut -c1-6)" "NOPERM" "the handlers' user may not run $cmd"
done
is "$(hredis GET other-key 2>&1 | cut -c1-6)" "NOPERM" "the handlers' user reads fs:* keys only"
is "$(hredis PUBLISH other-channel x 2>&1 | cut -c1-6)" "NOPERM" "the handlers' user publishes on fs:restock only"
for cmd in "FLUSHALL" "CONFIG GET port" "KEYS fs:*" "SHUTDOWN NOSAVE" "ACL LIST"; do
	# shellcheck disable=SC2086 # the command and its arguments, one word each
	is "$(redis $cmd 2>&1 | cut -c1-6)" "NOPERM" "the operator's user may not run $cmd either"
done
is "$(redis GET "fs:{$sale}:stock:$item")" "3" "after all that the stock is intact"
# The handlers hold their user: a purchase runs the scripts as it.
path=$(purchase_path "$sale")
ans=$(http POST "$path" "$(admin token mint --user "auth-$sale")")
is "${ans%% *}" "202" "a purchase runs its scripts as the handlers' user"
is "$(hredis GET "fs:{$sale}:stock:$item")" "2" "and took one unit"

# A program refuses a password file that others may read, and a wrong one,
# without printing the password.
cp "$FLASHSALE_REDIS_PASSWORD_FILE" "$FLASHSALE_STATE/open.password"
chmod 644 "$FLASHSALE_STATE/open.password"
out=$(FLASHSALE_REDIS_PASSWORD_FILE=$FLASHSALE_STATE/open.password admin sale show "$sale" 2>&1)
case $out in
*0600*) ok "a program refuses a Redis password file readable by others" ;;
*) not_ok "a program refuses a Redis password file readable by others" "$out" ;;
esac
printf 'not-the-password\n' >"$FLASHSALE_STATE/open.password"
chmod 600 "$FLASHSALE_STATE/open.password"
out=$(FLASHSALE_REDIS_PASSWORD_FILE=$FLASHSALE_STATE/open.password admin sale show "$sale" 2>&1)
case $out in
*not-the-password*) not_ok "a wrong Redis password fails without being printed" "$out" ;;
*WRONGPASS*) ok "a wrong Redis password fails without being printed" ;;
*) not_ok "a wrong Redis password fails without being printed" "$out" ;;
esac
rm -f "$FLASHSALE_STATE/open.password"

# --- the nchan publisher -------------------------------------------------------
is "$(curl -s -o /dev/null -w '%{http_code}' -m 2 -X POST -d '{}' \
	"http://127.0.0.1:$((FLASHSALE_PORT_BASE + 6))/pub/00000000-0000-7000-8000-000000000001")" \
    "000" "no publisher on TCP (the old port answers nothing)"
nginx_ports=$(ss -ltnpH 2>/dev/null | grep "pid=$(cat "$run/nginx.pid")," | awk '{print $4}' | sort -u | tr '\n' ' ')
is "$nginx_ports" "127.0.0.1:$((FLASHSALE_PORT_BASE + 1)) " "nginx listens on TCP on the origin port only"
is "$(stat -c %a "$run/nchan")" "700" "the publisher's socket is in a root-only directory"
# 202: published, nobody subscribed yet.
is "$(curl -s -o /dev/null -w '%{http_code}' -m 2 --unix-socket "$run/nchan/pub.sock" -X POST \
	-d '{}' "http://localhost/pub/00000000-0000-7000-8000-000000000001")" "202" \
    "the publisher answers on its unix socket"

# --- no secret in any log ------------------------------------------------------
leaked=
for f in "$secrets/pg.password" "$secrets/redis-flashsale.password" \
	"$secrets/redis-flashsale-admin.password"; do
	if grep -rlF "$(cat "$f")" "$FLASHSALE_STATE/log" "$FLASHSALE_STATE/conf" \
		"$FLASHSALE_STATE"/*.log 2>/dev/null; then
		leaked="$leaked $(basename "$f")"
	fi
done
is "$leaked" "" "no password appears in a log or configuration file"
