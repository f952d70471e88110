#!/bin/sh
# No include cycle in lib/ or handlers/, and no include that goes up a floor
# of lib/README: prints each cycle or upward include found and exits 1, or
# prints nothing and exits 0. Two graphs, each checked with tsort(1):
#   files    a file -> each project header it includes ("name.h");
#   modules  the same between modules, a module being a file's name without
#            .c/.h, and a family's files (NAME_job.c, NAME_int.h beside a
#            NAME.h in the same directory) counted as module NAME; an
#            include within one module is no edge. This finds a lower layer
#            that includes an upper one's header while the upper includes
#            the lower (fcgiproto.h -> fcgi.h, fcgi.c -> fcgiproto.h).
#            A module is named with its directory: handlers/metrics.c is
#            not lib/metrics.
# Floors: lib/README lists every lib/ module under its floor, top to bottom
# (wiring, rules, drivers, base); a module may include its own floor or
# below, never a handler. A lib/ module missing from that list has no floor
# and is reported too.
# It reads #include lines only: a function declared in one module's header
# and defined in another (a link-time circle) is not seen.
# Usage: includes.sh [top_srcdir]
set -u

top=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d /tmp/flashsale-includes.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The module of lib/x.c or handlers/x.h (relative to $top): its family's name when it has one.
module() {
	dir=${1%/*}
	stem=${1##*/}
	stem=${stem%.[ch]}
	case $stem in
	*_*) [ -f "$top/$dir/${stem%%_*}.h" ] && stem=${stem%%_*} ;;
	esac
	printf '%s/%s\n' "$dir" "$stem"
}

: >"$tmp/files"
: >"$tmp/modules"
for f in "$top"/lib/*.[ch] "$top"/handlers/*.[ch]; do
	[ -f "$f" ] || continue
	rel=${f#"$top"/}
	from=$(module "$rel")
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while IFS= read -r inc; do
			for d in "${rel%/*}" lib handlers; do
				[ -f "$top/$d/$inc" ] || continue
				printf '%s %s\n' "$rel" "$d/$inc" >>"$tmp/files"
				to=$(module "$d/$inc")
				[ "$to" = "$from" ] || printf '%s %s\n' "$from" "$to" >>"$tmp/modules"
				break
			done
		done
done
# "floor module" a line, from lib/README: a floor's name at the start of a
# line followed by its description in parentheses, then its modules indented
# by exactly two spaces (a family's files are indented further).
awk '/^[a-z]+ \(/ { floor++; next }
     /^  [a-z0-9_]+ / && floor { print floor, $1 }' "$top/lib/README" >"$tmp/floors"

rc=0
sort -u "$tmp/modules" | while read -r from to; do
	case $from in lib/*) ;; *) continue ;; esac
	f=$(awk -v m="${from#lib/}" '$2 == m { print $1 }' "$tmp/floors")
	case $to in
	handlers/*) echo "up a floor: $from includes $to (a handler)"; continue ;;
	esac
	t=$(awk -v m="${to#lib/}" '$2 == m { print $1 }' "$tmp/floors")
	if [ -z "$f" ]; then
		echo "no floor in lib/README for $from"
	elif [ -z "$t" ]; then
		echo "no floor in lib/README for $to"
	elif [ "$t" -lt "$f" ]; then
		echo "up a floor: $from includes $to (lib/README puts it above)"
	fi
done >"$tmp/floor.err"
if [ -s "$tmp/floor.err" ]; then
	sort -u "$tmp/floor.err"
	rc=1
fi
for graph in files modules; do
	if ! tsort "$tmp/$graph" >/dev/null 2>"$tmp/$graph.err"; then
		echo "include cycle among $graph:"
		sed -n 's/^tsort: //p' "$tmp/$graph.err" | grep -v 'input contains a loop' | sed 's/^/  /'
		rc=1
	fi
done
exit "$rc"
