#!/bin/sh
# Draws a flashsale-load CSV (t_ms,status,latency_us,attempt) as PNG files:
#   outcomes.png      answers per 100 ms since the opening, one line an outcome
#   latency-cdf.png   share of requests answered within x, log-scale x
#   latency-tail.png  share of requests slower than x, log-log: the p99-p99.9
#                     region that a CDF squeezes against its top edge
# awk does the binning and the ranks, gnuplot only draws; prints the paths.
# With --queue, a waiting room's timeline (flashsale-load --queue-csv:
# t_ms,state,joined,admitted,through,units_left,passes_out) instead:
#   queue.png         admitted places, units left and passes outstanding
#                     over the seconds since the opening
#
# usage: tests/load/report.sh results.csv outdir
#        tests/load/report.sh --queue timeline.csv outdir
set -eu

prog=${0##*/}

die() {
	echo "$prog: $*" >&2
	exit 1
}

queue=0
if [ "${1:-}" = --queue ]; then
	queue=1
	shift
fi
[ $# -eq 2 ] || { echo "usage: $prog [--queue] results.csv outdir" >&2; exit 2; }
csv=$1
out=$2
for tool in awk sort gnuplot; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "$tool not found (gnuplot: apt-get install gnuplot-nox)"
done
[ -r "$csv" ] || die "cannot read $csv"
mkdir -p "$out"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/flashsale-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# The waiting room's timeline: one point a status document read.
queue_timeline() {
	[ "$(head -n 1 "$csv")" = "t_ms,state,joined,admitted,through,units_left,passes_out" ] ||
		die "$csv is not a flashsale-load --queue-csv timeline"
	awk -F, 'NR > 1 { printf "%.3f %s %s %s\n", $1 / 1000, $4, $6, $7 }' "$csv" >"$tmp/queue.dat"
	[ -s "$tmp/queue.dat" ] || die "$csv has no readings"
	title=$(basename "$csv" | tr -d "\"'\\\\")
	cat >"$tmp/plot.gp" <<EOF
set terminal pngcairo size 1200,700 noenhanced font ',11'
set grid
set key outside right top
set output 'queue.png'
set title 'The waiting room: $title'
set xlabel 'seconds since the opening (the joining before it left out)'
set xrange [-2:*]
set ylabel 'places, units, passes'
set yrange [0:*]
plot 'queue.dat' using 1:2 with steps lw 2 lc rgb '#1a9850' title 'admitted', \
     'queue.dat' using 1:3 with steps lw 2 lc rgb '#4575b4' title 'units left', \
     'queue.dat' using 1:4 with steps lw 2 lc rgb '#d73027' title 'passes outstanding'
EOF
	(cd "$tmp" && gnuplot plot.gp) || die "gnuplot failed"
	mv "$tmp/queue.png" "$out/queue.png"
	echo "$out/queue.png"
}
if [ "$queue" = 1 ]; then
	queue_timeline
	exit 0
fi
[ "$(head -n 1 "$csv")" = "t_ms,status,latency_us,attempt" ] ||
	die "$csv is not a flashsale-load CSV"

# The outcomes of flashsale-load's summary; status 0 is a network error.
cats="202 409 410 429 503 other neterr"
# One colour an outcome, the same in every picture.
colour() {
	case $1 in
	202) echo '#1a9850' ;;
	409) echo '#fdae61' ;;
	410) echo '#4575b4' ;;
	429) echo '#984ea3' ;;
	503) echo '#d73027' ;;
	other) echo '#878787' ;;
	*) echo '#000000' ;;
	esac
}

# Binning, and one file of latencies per outcome, in one pass.
awk -F, -v cats="$cats" -v dir="$tmp" '
function cat(s) {
	if (s == 0)
		return "neterr"
	if (s == 202 || s == 409 || s == 410 || s == 429 || s == 503)
		return s
	return "other"
}
NR > 1 {
	c = cat($2 + 0)
	b = int($1 / 100)
	n[b, c]++
	if (b > max)
		max = b
	print $3 + 0 > (dir "/lat." c)
}
END {
	if (NR < 2)
		exit
	k = split(cats, names, " ")
	for (b = 0; b <= max; b++) {
		# Mid-bin time, so that a line point sits on its 100 ms.
		printf "%.2f", b / 10 + 0.05 > (dir "/bins.dat")
		for (i = 1; i <= k; i++)
			printf " %d", n[b, names[i]] > (dir "/bins.dat")
		printf "\n" > (dir "/bins.dat")
	}
}' "$csv"
[ -s "$tmp/bins.dat" ] || die "$csv has no requests"

# Ranks of the sorted latencies, thinned to about 2000 points an outcome
# but keeping the slowest 2000 whole: the tail is what the picture is for.
present=
for c in $cats; do
	[ -s "$tmp/lat.$c" ] || continue
	present="$present $c"
	sort -n "$tmp/lat.$c" | awk -v n="$(wc -l < "$tmp/lat.$c")" '
	BEGIN { step = int((n + 1999) / 2000) }
	{
		i = NR
		if (i == 1 || i == n || i % step == 0 || n - i < 2000) {
			x = $1 < 1 ? 1 : $1
			# within: share at or below x; slower: share at or above x.
			printf "%d %.9g %.9g\n", x, i / n, (n - i + 1) / n
		}
	}' > "$tmp/cdf.$c"
done

title=$(basename "$csv" | tr -d "\"'\\\\")
col=1
plot_bins=
plot_cdf=
plot_tail=
for c in $cats; do
	col=$((col + 1))
	case " $present " in *" $c "*) ;; *) continue ;; esac
	lc="lc rgb '$(colour "$c")'"
	plot_bins="$plot_bins${plot_bins:+, }'bins.dat' using 1:$col with lines lw 2 $lc title '$c'"
	plot_cdf="$plot_cdf${plot_cdf:+, }'cdf.$c' using 1:2 with steps lw 2 $lc title '$c'"
	plot_tail="$plot_tail${plot_tail:+, }'cdf.$c' using 1:3 with steps lw 2 $lc title '$c'"
done

# gnuplot runs in the private directory: no user path reaches its strings.
cat > "$tmp/plot.gp" <<EOF
set terminal pngcairo size 1200,700 noenhanced font ',11'
set grid
set key outside right top

set output 'outcomes.png'
set title 'Outcomes per 100 ms: $title'
set xlabel 'seconds since the opening'
set ylabel 'requests completed per 100 ms'
set yrange [0:*]
plot $plot_bins

set output 'latency-cdf.png'
set title 'Latency per outcome, CDF: $title'
set logscale x
set format x '%.0s%c'
set xlabel 'latency (microseconds, log scale)'
set ylabel 'share of requests answered within x'
set yrange [0:1]
set ytics 0.1
plot $plot_cdf

set output 'latency-tail.png'
set title 'Latency tail per outcome: $title'
set logscale xy
set ylabel 'share of requests slower than x (log scale)'
set yrange [*:1]
set ytics auto
set format y '%g'
set arrow 1 from graph 0, first 0.01 to graph 1, first 0.01 nohead dt 2 lc rgb '#555555'
set arrow 2 from graph 0, first 0.001 to graph 1, first 0.001 nohead dt 2 lc rgb '#555555'
set label 1 'p99' at graph 0.01, first 0.012
set label 2 'p99.9' at graph 0.01, first 0.0012
plot $plot_tail
EOF
(cd "$tmp" && gnuplot plot.gp) || die "gnuplot failed"

for png in outcomes.png latency-cdf.png latency-tail.png; do
	mv "$tmp/$png" "$out/$png"
	echo "$out/$png"
done
