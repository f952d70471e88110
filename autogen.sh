#!/bin/sh
# Generates configure and the build scripts (run once after a fresh clone).
set -eu
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf -fi
# The integration suite speaks TAP; automake ships the driver but does not copy it.
for d in /usr/share/automake-*; do
	if [ -f "$d/tap-driver.sh" ]; then
		cp "$d/tap-driver.sh" build-aux/tap-driver.sh
		break
	fi
done
test -f build-aux/tap-driver.sh || { echo "autogen: tap-driver.sh not found (automake)" >&2; exit 1; }
