#!/bin/sh
# What `make install` delivers, checked the way a packager would (TAP):
# the manual pages are clean (mandoc -T lint), the environment that
# flashsale.conf(5) and the example environment file describe is exactly
# the one the programs read (`flashsale-admin config` plus the variables
# read with getenv) and deploy/stack's (the page's LOCAL STACK), the
# documents keep no copy of it, lib/README names every module, the
# installed tree holds every program, script, page and unit,
# `systemd-analyze verify` accepts the units as installed, and nginx and
# Varnish accept the production examples, which follow the local templates.
set -u

top_srcdir=$(cd "${top_srcdir:-$(dirname "$0")/../..}" && pwd)
bindir=${FLASHSALE_BINDIR:-$(pwd)}
tmp=$(mktemp -d /tmp/flashsale-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/integration/lib.sh"

# 1. The pages are clean.
if command -v mandoc >/dev/null 2>&1; then
	lint=$(cd "$top_srcdir" && mandoc -T lint -W warning man/*.[1-9] 2>&1)
	is "$lint" "" "mandoc -T lint finds nothing in the manual pages"
else
	not_ok "mandoc -T lint finds nothing in the manual pages" "no mandoc: run deploy/install-deps"
fi

# 2. One list of variables: "NAME DEFAULT" lines, the data directory's
# default written as $prefix/share/flashsale.
# (in an empty environment: the table, not a check of this one's settings).
env -i PATH="$PATH" "$bindir/flashsale-admin" config 2>/dev/null |
	awk '/^FLASHSALE_/ { d = $2; if (d == "(required)") d = "required"; else if (d == "(empty)") d = "empty";
		sub(/.*\/share\/flashsale$/, "$prefix/share/flashsale", d); print $1, d }' >"$tmp/config"
grep -oh 'getenv("FLASHSALE_[A-Z_]*")' "$top_srcdir"/lib/*.c "$top_srcdir"/handlers/*.c |
	sed 's/getenv("\(.*\)")/\1/' | sort -u >"$tmp/getenv"
# The programs' variables are those of the page's ENVIRONMENT section.
sed -n '/^\.Sh ENVIRONMENT/,/^\.Sh /s/^\.It Ev \(FLASHSALE_[A-Z_]*\) Pq \(Li \)\{0,1\}\(.*\)$/\1 \3/p' \
	"$top_srcdir/man/flashsale.conf.5" >"$tmp/man"
is "$(grep -v -F -f "$tmp/getenv" "$tmp/man")" "$(cat "$tmp/config")" \
	"flashsale.conf(5) lists the variables and defaults of flashsale-admin config, in order"
is "$(cut -d' ' -f1 "$tmp/man" | grep -F -x -f "$tmp/getenv")" "$(cat "$tmp/getenv")" \
	"flashsale.conf(5) lists the variables read outside the table (getenv)"

# The example environment file names each variable once; a commented line
# shows the default.
env=$top_srcdir/deploy/systemd/flashsale.env
is "$(sed -n 's/^#\{0,1\}\(FLASHSALE_[A-Z_]*\)=.*/\1/p' "$env" | sort)" \
	"$( (cut -d' ' -f1 "$tmp/config"; cat "$tmp/getenv") | sort)" \
	"deploy/systemd/flashsale.env names every variable"
bad_defaults=$(sed -n 's/^#\(FLASHSALE_[A-Z_]*\)=\(.*\)/\1 \2/p' "$env" | while read -r name val; do
	want=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/config")
	# shellcheck disable=SC2016 # the literal $prefix of the page
	case $want in
	empty) want= ;;
	'$prefix/share/flashsale') continue ;;
	'') continue ;;
	esac
	[ "$val" = "$want" ] || echo "$name=$val (default: $want)"
done)
is "$bad_defaults" "" "the commented lines of flashsale.env show the defaults"
# Configuration has one reference, the page: no table of variables in the
# README or docs/.
# shellcheck disable=SC2016 # a Markdown pattern, with backquotes
is "$(cd "$top_srcdir" && grep -l '^| `FLASHSALE_[A-Z_]*` |' README.md docs/*.md)" "" \
	"README.md and docs/ leave the table of variables to flashsale.conf(5)"
# Every variable that the local stack's scripts read with a default is in
# the page's LOCAL STACK section (or, being a program's, in ENVIRONMENT).
# shellcheck disable=SC2016 # the pattern of a shell expansion
grep -oh '${FLASHSALE_[A-Z_]*:\{0,1\}-' "$top_srcdir"/deploy/stack "$top_srcdir"/deploy/stack.d/*.sh \
	"$top_srcdir"/deploy/install-deps "$top_srcdir"/deploy/demo |
	sed 's/^${//; s/:\{0,1\}-$//' | sort -u >"$tmp/stackvars"
grep '^\.It Ev FLASHSALE_' "$top_srcdir/man/flashsale.conf.5" | grep -o 'FLASHSALE_[A-Z_]*' |
	sort -u >"$tmp/manvars"
is "$(comm -23 "$tmp/stackvars" "$tmp/manvars")" "" \
	"flashsale.conf(5) lists every variable deploy/stack, demo and install-deps read"

# lib/README names the module (or family: stock for stock_reserve.c) of
# every lib/*.c.
unlisted=
for c in "$top_srcdir"/lib/*.c; do
	m=$(basename "$c" .c)
	grep -q "^  ${m%%_*} " "$top_srcdir/lib/README" || grep -q "^  $m " "$top_srcdir/lib/README" ||
		unlisted="$unlisted $m"
done
is "$unlisted" "" "lib/README lists the module of every lib/*.c"
# ... and every module (a family once) has its unit test program (a copy
# of what the install needs, as single/checkout_reach.sh makes, has none).
if [ -d "$top_srcdir/tests/unit" ]; then
	untested=
	for c in "$top_srcdir"/lib/*.c; do
		m=$(basename "$c" .c)
		grep -q "^  $m " "$top_srcdir/lib/README" || m=${m%%_*}
		[ -f "$top_srcdir/tests/unit/test_$m.c" ] || untested="$untested $m"
	done
	is "$untested" "" "every lib module has its tests/unit/test_<module>.c"
else
	ok "every lib module has its tests/unit/test_<module>.c # SKIP no tests/unit in this tree"
fi

# 3. make install into a staging directory.
dest=$tmp/dest
if ${MAKE:-make} -C "$bindir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1; then
	ok "make install DESTDIR=..."
else
	not_ok "make install DESTDIR=..." "$(tail -n 20 "$tmp/install.log")"
fi
prefix=$(sed -n 's/^prefix = //p' "$bindir/Makefile")
# The programs, and a page for every program installed: a new
# program needs one.
programs=$( (echo flashsale-admin flashsale-purchase flashsale-order flashsale-sale \
	flashsale-signin flashsale-expire flashsale-consumer | tr ' ' '\n'
	ls "$dest$prefix/bin" 2>/dev/null) | sort -u)
missing=
for f in $(for p in $programs; do echo "bin/$p"; done) \
	share/flashsale/lua/reserve.lua share/flashsale/lua/release.lua share/flashsale/lua/layout.lua \
	share/flashsale/sql/001_schema.sql share/flashsale/sql/002_orders.sql share/flashsale/sql/003_payments.sql \
	share/flashsale/sql/007_place_orders_joins.sql share/flashsale/sql/008_orders_item_check.sql \
	share/flashsale/static/index.html share/flashsale/static/app.js \
	share/flashsale/examples/flashsale.env share/flashsale/examples/nginx.conf \
	share/flashsale/examples/nginx-push.conf share/flashsale/examples/nginx-edge.conf \
	share/flashsale/examples/varnish.vcl share/man/man5/flashsale.conf.5 \
	$(for p in $programs; do echo "share/man/man8/$p.8"; done) \
	lib/systemd/system/flashsale-purchase.socket lib/systemd/system/flashsale-purchase@.service \
	lib/systemd/system/flashsale-consumer.service lib/systemd/system/flashsale-expire.timer \
	lib/systemd/system/flashsale-jwks.timer lib/systemd/system/flashsale-jwks.service \
	lib/systemd/system/flashsale-push.service \
	lib/tmpfiles.d/flashsale.conf lib/sysusers.d/flashsale.conf \
	share/doc/flashsale/README.md \
	$(cd "$top_srcdir" && for d in docs/*.md; do echo "share/doc/flashsale/$d"; done); do
	[ -s "$dest$prefix/$f" ] || missing="$missing $f"
done
is "$missing" "" "the install holds the programs, Lua, SQL, static files, pages, units, examples, documents"

# 4. The units as installed: systemd-analyze verify against the staging
# root (with the host's own units for the targets they name), each
# program present and executable, each Documentation= page installed.
# Any complaint counts, not only a non-zero exit.
if command -v systemd-analyze >/dev/null 2>&1; then
	# systemd looks for units in its own directories only: the prefix may
	# be anything (make distcheck's), so they are copied to /etc's.
	mkdir -p "$dest/usr/lib/systemd" "$dest/etc/systemd/system"
	cp -a /usr/lib/systemd/system "$dest/usr/lib/systemd/"
	# flashsale-push.service runs the host's nginx (deploy/install-deps).
	mkdir -p "$dest/usr/sbin"
	cp /usr/sbin/nginx "$dest/usr/sbin/"
	cp "$dest$prefix"/lib/systemd/system/flashsale* "$dest/etc/systemd/system/"
	# Every unit installed; a template as its first instance.
	# shellcheck disable=SC2012 # unit names: letters, digits, @ . - only
	units=$(cd "$dest/etc/systemd/system" && ls flashsale* | sed 's/@\.service$/@1.service/')
	# shellcheck disable=SC2086 # one word per unit
	verify=$(cd "$dest/etc/systemd/system" && MANPATH=$dest$prefix/share/man \
		systemd-analyze verify --root="$dest" $units 2>&1; echo "exit $?")
	is "$verify" "exit 0" "systemd-analyze verify accepts every unit"
else
	not_ok "systemd-analyze verify accepts every unit" "no systemd-analyze: run deploy/install-deps"
fi

# 5. The production examples: nginx -t (on loopback ports of the test's
# own and with a private pid and log) and Varnish's compiler.
base=${FLASHSALE_TEST_PORT_BASE:-28080}
# nginx -t reads their certificates and keys: an authority of the test's
# own stands for the site's (/etc/ssl/flashsale), with the same file names.
. "$top_srcdir/deploy/stack.d/tls.sh"
production_certs() {
	tls_ca "$tmp/tls" || return 1
	for name in shop edge origin; do
		tls_cert "$tmp/tls" "$tmp/tls" "$name" "DNS:$name.flashsale.internal" || return 1
	done
}
check "certificates for the production examples (deploy/stack.d/tls.sh)" production_certs
sed -e "s|listen 10.0.0.11:443 |listen 127.0.0.1:$((base + 10)) |" \
	-e "s|listen 127.0.0.1:80 |listen 127.0.0.1:$((base + 11)) |" \
	-e "s|/etc/ssl/flashsale/|$tmp/tls/|g" \
	-e "s|listen unix:/run/flashsale/nchan/|listen unix:$tmp/|" \
	-e "s|listen 127.0.0.1:8087|listen 127.0.0.1:$((base + 12))|" \
	-e "s|/run/nginx.pid|$tmp/nginx.pid|" -e "s|/var/log/nginx/|$tmp/|g" \
	-e "s|/run/flashsale/ticks/|$tmp/|g" \
	"$top_srcdir/deploy/production/nginx.conf" >"$tmp/nginx.conf"
mkdir -p "$tmp/nginx"
check "nginx -t accepts deploy/production/nginx.conf" \
	nginx -t -q -p "$tmp/nginx" -e "$tmp/error.log" -c "$tmp/nginx.conf"
sed -e "s|listen unix:/run/flashsale/nchan/|listen unix:$tmp/|" \
	-e "s|listen unix:/run/flashsale/push/|listen unix:$tmp/|" \
	-e "s|/run/flashsale-push.pid|$tmp/nginx-push.pid|" -e "s|/var/log/nginx/|$tmp/|g" \
	"$top_srcdir/deploy/production/nginx-push.conf" >"$tmp/nginx-push.conf"
check "nginx -t accepts deploy/production/nginx-push.conf" \
	nginx -t -q -p "$tmp/nginx" -e "$tmp/error.log" -c "$tmp/nginx-push.conf"
sed -e "s|listen 80 |listen 127.0.0.1:$((base + 13)) |" \
	-e "s|listen 443 |listen 127.0.0.1:$((base + 14)) |" \
	-e "s|listen unix:/run/flashsale-edge/|listen unix:$tmp/|" \
	-e "s|/etc/ssl/flashsale/|$tmp/tls/|g" \
	-e "s|/run/nginx-edge.pid|$tmp/nginx-edge.pid|" -e "s|/var/log/nginx/|$tmp/|g" \
	-e "s|/var/cache/nginx/flashsale-edge|$tmp/edge-cache|" \
	"$top_srcdir/deploy/production/nginx-edge.conf" >"$tmp/nginx-edge.conf"
check "nginx -t accepts deploy/production/nginx-edge.conf" \
	nginx -t -q -p "$tmp/nginx" -e "$tmp/error.log" -c "$tmp/nginx-edge.conf"
# The nchan publisher listens on a unix socket only (nginx makes it 0666),
# in a directory that only root and the handlers' group enter, and the
# example environment points the handlers there.
publisher_listens() {
	awk '/^[ \t]*server[ \t]*\{/ && depth == 1 { in_server = 1; listens = ""; pub = 0 }
		in_server && $1 == "listen" { listens = listens " " $2 }
		in_server && $1 == "nchan_publisher;" { pub = 1 }
		{ depth += gsub(/\{/, "{"); depth -= gsub(/\}/, "}") }
		in_server && depth == 1 { if (pub) print listens; in_server = 0 }' "$1"
}
is "$(publisher_listens "$top_srcdir/deploy/production/nginx-push.conf")" \
	" unix:/run/flashsale/nchan/pub.sock;" \
	"deploy/production/nginx-push.conf: the nchan publisher listens on a unix socket only"
is "$(grep -c 'nchan_' "$top_srcdir/deploy/production/nginx.conf")" "0" \
	"deploy/production/nginx.conf leaves nchan to the push server"
is "$(grep '/run/flashsale/push ' "$top_srcdir/deploy/systemd/flashsale.tmpfiles")" \
	"d /run/flashsale/push 0750 root www-data -" \
	"tmpfiles makes the push server's subscriber directory 0750 root:www-data"
is "$(sed -n 's/^FLASHSALE_NCHAN_PUB=//p' "$env") $(grep '/run/flashsale/nchan ' \
	"$top_srcdir/deploy/systemd/flashsale.tmpfiles")" \
	"unix:/run/flashsale/nchan/pub.sock:/pub d /run/flashsale/nchan 0750 root flashsale -" \
	"flashsale.env publishes there; tmpfiles makes its directory 0750 root:flashsale"
# No file that root opens (nginx's logs, pid files and sockets, the units'
# pid files) lives under a directory that another user may write.
tmpfiles=$top_srcdir/deploy/systemd/flashsale.tmpfiles
is "$(sh "$top_srcdir/tests/install/root-dirs.sh" -t "$tmpfiles" \
	"$top_srcdir/deploy/production/nginx.conf" "$top_srcdir/deploy/production/nginx-push.conf" \
	"$top_srcdir/deploy/production/nginx-edge.conf" "$top_srcdir"/deploy/systemd/*.service.in)" "" \
	"root opens no file of the production examples in a directory another user may write"
# flashsale-metrics reads nginx's ticks files in FLASHSALE_METRICS_DIR: each
# has its link there.
metrics_dir=$(sed -n 's/^FLASHSALE_METRICS_DIR=//p' "$env")
is "$(sed -n 's/.*access_log \([^ ]*\.ticks\) .*/\1/p' "$top_srcdir/deploy/production/nginx.conf" | sort -u |
	while read -r ticks; do
		grep -q -x "L $metrics_dir/$(basename "$ticks") - - - - $ticks" "$tmpfiles" || echo "$ticks"
	done)" "" "every ticks file of deploy/production/nginx.conf has its link in $metrics_dir"
# varnishd -C compiles as the user vcache, which may not enter the checkout
# (a 0700 home): it reads a copy in a directory of its own that it can.
vcl_dir=$(mktemp -d /tmp/flashsale-vcl.XXXXXX)
trap 'rm -rf "$tmp" "$vcl_dir"' EXIT
chmod 755 "$vcl_dir"
cp "$top_srcdir/deploy/production/varnish.vcl" "$vcl_dir/varnish.vcl"
chmod 644 "$vcl_dir/varnish.vcl"
if out=$(varnishd -C -f "$vcl_dir/varnish.vcl" 2>&1 >/dev/null); then
	ok "varnishd -C compiles deploy/production/varnish.vcl"
else
	not_ok "varnishd -C compiles deploy/production/varnish.vcl" "$(printf '%s\n' "$out" | tail -n 5)"
fi

# 6. The production examples follow the local templates: every location of
# deploy/nginx.conf.in (and of deploy/push.conf.in, deploy/edge.conf.in) and every URL pattern
# of deploy/varnish.vcl (the benchmarks' parts aside) is in them too.
# Change both in one commit.
locations() {
	sed '/@BENCH_BEGIN@/,/@BENCH_END@/d' "$1" |
		sed -n 's/^[[:space:]]*\(location [^{]*\){.*/\1/p' | sed 's/[[:space:]]*$//' | sort -u
}
patterns() {
	sed '/@BENCH_BEGIN@/,/@BENCH_END@/d' "$1" | grep -o '~ "[^"]*"' | sort -u
}
locations "$top_srcdir/deploy/nginx.conf.in" >"$tmp/loc.local"
locations "$top_srcdir/deploy/production/nginx.conf" >"$tmp/loc.prod"
is "$(comm -23 "$tmp/loc.local" "$tmp/loc.prod")" "" \
	"deploy/production/nginx.conf has every location of deploy/nginx.conf.in"
locations "$top_srcdir/deploy/push.conf.in" >"$tmp/loc.push.local"
locations "$top_srcdir/deploy/production/nginx-push.conf" >"$tmp/loc.push.prod"
is "$(comm -23 "$tmp/loc.push.local" "$tmp/loc.push.prod")" "" \
	"deploy/production/nginx-push.conf has every location of deploy/push.conf.in"
locations "$top_srcdir/deploy/edge.conf.in" >"$tmp/loc.edge.local"
locations "$top_srcdir/deploy/production/nginx-edge.conf" >"$tmp/loc.edge.prod"
is "$(comm -23 "$tmp/loc.edge.local" "$tmp/loc.edge.prod")" "" \
	"deploy/production/nginx-edge.conf has every location of deploy/edge.conf.in"
patterns "$top_srcdir/deploy/varnish.vcl" >"$tmp/vcl.local"
patterns "$top_srcdir/deploy/production/varnish.vcl" >"$tmp/vcl.prod"
is "$(comm -23 "$tmp/vcl.local" "$tmp/vcl.prod")" "" \
	"deploy/production/varnish.vcl has every URL pattern of deploy/varnish.vcl"

# 7. docs/OPERATING.md's "Running a sale" says what to do for every alert of
# deploy/prometheus/alerts.yml, and for no other.
# shellcheck disable=SC2016 # a Markdown pattern, with backquotes
is "$(sed -n 's/^ *- alert: *\([A-Za-z]*\).*/\1/p' "$top_srcdir/deploy/prometheus/alerts.yml" | sort)" \
	"$(sed -n 's/^| `\(Flashsale[A-Za-z]*\)` |.*/\1/p' "$top_srcdir/docs/OPERATING.md" | sort)" \
	"docs/OPERATING.md's alert table names exactly the alerts of deploy/prometheus/alerts.yml"
# 8. Includes point one way: no cycle among the files or the modules of
# lib/ and handlers/ (tests/install/includes.sh names a cycle it finds).
is "$(sh "$top_srcdir/tests/install/includes.sh" "$top_srcdir" 2>&1)" "" \
	"no include cycle among the files and modules of lib/ and handlers/"
echo "1..$tap_n"
[ "$tap_failed" -eq 0 ]
