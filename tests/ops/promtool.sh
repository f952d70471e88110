#!/bin/sh
# The monitoring files that deploy/ ships, checked by Prometheus's own tool
# (TAP): the alerting rules parse and their unit tests pass, every query of
# the Grafana dashboard parses (as a recording rule), and every flashsale_
# metric they name is one that the programs export.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
prom=$top_srcdir/deploy/prometheus
dashboard=$top_srcdir/deploy/grafana/flashsale.json
tmp=$(mktemp -d /tmp/fs-promtool.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

result() { # NAME STATUS OUTPUT
	n=$((n + 1))
	if [ "$2" = 0 ]; then
		echo "ok $n - $1"
	else
		failed=$((failed + 1))
		echo "not ok $n - $1"
		printf '%s\n' "$3" | sed 's/^/# /'
	fi
}

out=$(promtool check rules "$prom/alerts.yml" 2>&1)
result "promtool check rules deploy/prometheus/alerts.yml" $? "$out"
out=$(cd "$prom" && promtool test rules alerts.test.yml 2>&1)
result "promtool test rules: every alert fires when and only when its test says" $? "$out"

# The dashboard's queries, one a line, read as JSON (tests/tools/fs-json);
# every "expr" of the file must be one of them.
"${FLASHSALE_BINDIR:-.}/tests/tools/fs-json" '.panels[].targets[].expr' <"$dashboard" >"$tmp/exprs"
count=$(wc -l <"$tmp/exprs" | tr -d ' ')
total=$(grep -c '"expr"' "$dashboard")
result "dashboard: $count queries read, as many as it has" "$([ "$count" = "$total" ] && [ "$count" -gt 0 ]; echo $?)" "read $count of $total"
{
	echo "groups:"
	echo "  - name: dashboard"
	echo "    rules:"
	i=0
	while IFS= read -r expr; do
		i=$((i + 1))
		printf '      - record: dashboard:query_%d\n        expr: %s\n' "$i" \
			"'$(printf '%s' "$expr" | sed "s/'/''/g")'"
	done <"$tmp/exprs"
} >"$tmp/dashboard-rules.yml"
out=$(promtool check rules "$tmp/dashboard-rules.yml" 2>&1)
result "promtool check rules: every dashboard query parses" $? "$out"

# Names the programs export: the metrics table and flashsale-metrics.
grep -oh 'flashsale_[a-z_]*' "$top_srcdir/lib/metrics.c" "$top_srcdir/handlers/metrics.c" | sort -u >"$tmp/exported"
cat "$tmp/exprs" "$prom/alerts.yml" | grep -o 'flashsale_[a-z_]*' |
	sed 's/_bucket$//' | sort -u >"$tmp/used"
missing=$(comm -23 "$tmp/used" "$tmp/exported")
result "every metric the alerts and the dashboard use is exported" "$([ -z "$missing" ]; echo $?)" "$missing"

echo "1..$n"
[ "$failed" -eq 0 ]
