# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Who may write and enter what, around the local stack:
# - root opens no file of the running stack (nginx's logs, pid files and
#   sockets, Varnish's and Redis's pid files, the ticks files) in a
#   directory that another user may write (tests/install/root-dirs.sh);
# - the README's two commands work from a checkout that the other users
#   cannot enter (a 0700 home, root's): deploy/stack keeps its state in
#   /var/tmp/flashsale-<checksum> and says so, and tests/install/check.sh
#   has Varnish compile a copy it can read;
# - deploy/stack finds the programs that deploy/demo built in build/, and
#   refuses to start ("up" fails, saying what to run) without them.
# The second stack runs PostgreSQL and Varnish only (the parts that run as
# other users), on ports of its own (base + 50), and is stopped by its
# own "down"; every command is bounded by timeout.

cr_run=$FLASHSALE_STATE/run
is "$(sh "$top_srcdir/tests/install/root-dirs.sh" "$FLASHSALE_STATE/conf/nginx.conf" \
    "$FLASHSALE_STATE/conf/nginx-push.conf" "$FLASHSALE_STATE/conf/nginx-edge.conf" "$cr_run/varnish.pid" \
    "$cr_run/redis.pid" "$FLASHSALE_STATE/metrics/edge-sold_out.ticks")" "" \
    "root opens no file of the running stack in a directory another user may write"

# A copy of the checkout (the working tree's files) under a 0700 directory.
cr_dir=$(mktemp -d /tmp/flashsale-t73.XXXXXX)
cr_co=$cr_dir/checkout
mkdir -p "$cr_co/tests/integration"
cp -R "$top_srcdir/deploy" "$top_srcdir/man" "$top_srcdir/lib" "$top_srcdir/handlers" \
    "$top_srcdir/sql" "$top_srcdir/lua" "$top_srcdir/static" "$top_srcdir/docs" \
    "$top_srcdir/README.md" "$cr_co/"
cp -R "$top_srcdir/tests/install" "$cr_co/tests/"
cp "$top_srcdir/tests/integration/lib.sh" "$cr_co/tests/integration/"
is "$(stat -c %a "$cr_dir")" "700" "the copy of the checkout lies under a 0700 directory"
cr_base=$((FLASHSALE_PORT_BASE + 50))
cr_state=/var/tmp/flashsale-$(printf '%s' "$cr_co" | cksum | cut -d' ' -f1)
# cr_stack ARG...: that checkout's deploy/stack as a newcomer runs it: no
# FLASHSALE_ setting but the port base; "STATUS" then its output in $cr_out.
cr_stack() {
	cr_out=$(cd "$cr_co" && env -u FLASHSALE_STATE -u FLASHSALE_BINDIR -u FLASHSALE_DATADIR \
	    -u FLASHSALE_TOPOLOGY FLASHSALE_PORT_BASE=$cr_base timeout 120 deploy/stack "$@" 2>&1)
	cr_rc=$?
}

# Nothing built in the checkout: "up" fails before it starts anything, and
# says what to run.
cr_stack up
is "$cr_rc $(printf '%s\n' "$cr_out" | grep -c '^stack: not built in .*flashsale-purchase.*; run deploy/demo')" "1 1" \
    "deploy/stack up without a build fails and says what to run"
is "$(printf '%s\n' "$cr_out" | grep -c ' up\| started')" "0" "and it started nothing"

# deploy/demo builds in build/: the stack finds the programs there.
ln -s "$FLASHSALE_BINDIR" "$cr_co/build"
cr_stack start postgres
is "$cr_rc" "0" "PostgreSQL (user postgres) starts from a checkout under a 0700 directory"
is "$(printf '%s\n' "$cr_out" | grep -c "^state  *$cr_state (users postgres and vcache cannot enter $cr_co")" "1" \
    "deploy/stack says that its state is in $cr_state"
[ "$cr_rc" = 0 ] || diag "$cr_out"
cr_stack start varnish
is "$cr_rc" "0" "Varnish (its compiler and worker: user vcache) starts from there"
[ "$cr_rc" = 0 ] || diag "$cr_out"
cr_stack start flashsale-metrics
is "$cr_rc $(printf '%s\n' "$cr_out" | grep -c "^flashsale-metrics .*started")" "0 1" \
    "deploy/stack start finds the handler that deploy/demo built in build/"
[ "$cr_rc" = 0 ] || diag "$cr_out"
cr_stack env
is "$(printf '%s\n' "$cr_out" | sed -n "s/^export FLASHSALE_STATE='\(.*\)'$/\1/p")" "$cr_state" \
    "deploy/stack env names that state directory"
cr_stack status postgres
is "$cr_rc" "0" "deploy/stack status: PostgreSQL is up"
cr_stack down
is "$cr_rc" "0" "deploy/stack down stops it"
cr_left=
for cr_part in postgres varnish flashsale-metrics; do
	cr_stack pids "$cr_part"
	cr_left="$cr_left$cr_out"
done
is "$cr_left" "" "nothing of it runs any more"

# tests/run's install check from there (Varnish compiles the production VCL).
cr_check=$(cd "$FLASHSALE_BINDIR" && top_srcdir=$cr_co timeout 300 sh "$cr_co/tests/install/check.sh" 2>&1)
is "$(printf '%s\n' "$cr_check" | grep -c '^ok [0-9]* - varnishd -C compiles')" "1" \
    "tests/install/check.sh from there: Varnish compiles the production VCL"
is "$(printf '%s\n' "$cr_check" | grep '^not ok')" "" "tests/install/check.sh from there: every case passes"

case $cr_state in
/var/tmp/flashsale-[0-9]*) rm -rf "$cr_state" ;;
esac
rm -rf "$cr_dir"
