# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (stack)
# The local stack's logs are rotated by size (issue 36, item 5: the
# origin's access log reached 1.15 GB in a load test). With the logkeeper
# at FLASHSALE_LOG_MAX_MB=1 looking every second, 8,000 requests (some
# 1.5 MB of access log) make nginx's access log rotate: the copy
# nginx-access.log.1 holds the old lines, and nginx writes on at the start
# of the truncated file (it appends: no hole of zeros where the old lines
# were), without being told to reopen anything.

lr_log=$FLASHSALE_STATE/log/nginx-access.log
# The access log starts empty (the earlier files' lines kept beside it, for
# logs_free_of_secrets), so that the first rotation under the 1 MB limit is
# the burst's: in a whole suite the log is past 1 MB before this file, and
# the logkeeper would first copy aside lines that are not the burst's.
cp -p "$lr_log" "$lr_log.before" && : >"$lr_log"
rm -f "$lr_log.1" "$lr_log.2"
FLASHSALE_LOG_MAX_MB=1 FLASHSALE_LOG_CHECK_S=1 "$stack" restart logkeeper >/dev/null ||
	not_ok "the logkeeper restarts with a 1 MB limit"
curl -s --no-progress-meter -Z --parallel-max 50 -o /dev/null "$FLASHSALE_ORIGIN_URL/api/time?lr=[1-8000]"
lr_n=0
while [ ! -f "$lr_log.1" ] && [ $lr_n -lt 100 ]; do
	lr_n=$((lr_n + 1))
	sleep 0.2
done
if [ -f "$lr_log.1" ] && [ "$(du -k "$lr_log.1" | cut -f1)" -gt 1024 ]; then
	ok "the access log past 1 MB is copied aside (nginx-access.log.1, $(du -k "$lr_log.1" | cut -f1) KB)"
else
	not_ok "the access log past 1 MB is copied aside" "$(ls -l "$FLASHSALE_STATE/log/")"
fi
lr_count=$(grep -c 'GET /api/time?lr=' "$lr_log.1")
if [ "$lr_count" -gt 3000 ]; then
	ok "the copy holds the burst's lines ($lr_count)"
else
	not_ok "the copy holds the burst's lines" "$lr_count"
fi
curl -s -o /dev/null "$FLASHSALE_ORIGIN_URL/api/time?lr=after"
lr_n=0
until grep -q 'lr=after' "$lr_log" || [ $lr_n -ge 50 ]; do
	lr_n=$((lr_n + 1))
	sleep 0.1
done
lr_size=$(stat -c %s "$lr_log")
if [ "$lr_size" -lt 1048576 ] && grep -q 'lr=after' "$lr_log" &&
    [ "$(head -c 1 "$lr_log" | od -An -tx1 | tr -d ' ')" != 00 ]; then
	ok "nginx writes on at the start of the truncated log ($lr_size bytes, no hole)"
else
	not_ok "nginx writes on at the start of the truncated log" "size $lr_size"
fi
is "$("$stack" status logkeeper >/dev/null 2>&1; echo $?)" 0 "deploy/stack status logkeeper: up"
"$stack" restart logkeeper >/dev/null || not_ok "the logkeeper restarts with its usual limit"
