#!/bin/sh
# Prints every file that root opens or creates in a directory that another
# user could write, one "FILE: DIR owner:group mode" line each; nothing when
# there is none. Another user who can write a directory on the way can put
# a symbolic link where root's file goes (a log nginx's master opens with
# create-and-append at start, reload and rotation; a pid file), and root
# then writes any file it may.
#
#   tests/install/root-dirs.sh [-t TMPFILES] ITEM...
#
# ITEM: an nginx configuration (*.conf, *.conf.in: its pid, error_log,
# access_log, *_temp_path and unix listen paths), a systemd unit
# (*.service, *.service.in: its PIDFile=), or a path itself. A directory
# is judged by the line of TMPFILES (tmpfiles.d format) that makes it,
# else by the file system; one that neither knows is reported unknown.
# Safe: owned by root, writable by nobody else (group root aside); above
# the file's own directory a sticky one (/tmp) too, as nobody else may
# rename or remove root's entries in it.
set -eu

tmpfiles=/dev/null
if [ "${1:-}" = -t ]; then
	tmpfiles=$2
	shift 2
fi

# The paths that root opens in ITEM.
root_paths() {
	case $1 in
	*.conf | *.conf.in)
		# A temp path is a directory that nginx creates files in.
		awk '{ sub(/#.*/, ""); sub(/;$/, "", $2) }
			$1 == "pid" || $1 == "error_log" || $1 == "access_log" { p = $2 }
			$1 ~ /_temp_path$/ { p = $2 "/file" }
			$1 == "listen" && $2 ~ /^unix:/ { p = substr($2, 6) }
			p ~ /^\// { print p }
			{ p = "" }' "$1"
		;;
	*.service | *.service.in) sed -n 's/^PIDFile=//p' "$1" ;;
	*) echo "$1" ;;
	esac
}

# "owner group mode" of DIR: its tmpfiles line, else the file system.
dir_owner() {
	line=$(awk -v d="$1" '($1 == "d" || $1 == "D") && $2 == d { print $4, $5, $3 }' "$tmpfiles" | tail -n 1)
	if [ -n "$line" ]; then
		echo "$line"
	elif [ -d "$1" ] && [ ! -L "$1" ]; then
		stat -c '%U %G %a' "$1"
	else
		echo "unknown unknown unknown"
	fi
}

# True when a user other than root may write in a directory of OWNER,
# GROUP and octal MODE that holds root's file (ABOVE empty) or holds a
# directory of root's on its way (ABOVE 1).
unsafe() {
	[ "$1" = root ] || return 0
	case $3 in
	*[!0-7]* | '') return 0 ;;
	esac
	mode=$((0$3))
	[ -n "$4" ] && [ $((mode & 512)) -ne 0 ] && return 1
	[ $((mode & 2)) -ne 0 ] && return 0
	[ $((mode & 16)) -ne 0 ] && [ "$2" != root ] && return 0
	return 1
}

for item in "$@"; do
	root_paths "$item"
done | sort -u | while read -r path; do
	dir=$(dirname "$path")
	above=
	while :; do
		# shellcheck disable=SC2046 # the owner and mode, one word each
		set -- $(dir_owner "$dir")
		if unsafe "$1" "$2" "$3" "$above"; then
			echo "$path: $dir $1:$2 $3"
			break
		fi
		[ "$dir" != / ] || break
		dir=$(dirname "$dir")
		above=1
	done
done
