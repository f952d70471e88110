# shellcheck shell=sh
# Settings are checked when a program starts, each on its own and against
# those it depends on: a program refuses to start and says why.

st_out=$(FLASHSALE_HOLD_MAX_AGE=5 "$FLASHSALE_BINDIR/flashsale-expire" </dev/null 2>&1)
st_rc=$?
is "$st_rc" "1" "flashsale-expire refuses a hold age within the Kafka delivery timeout"
case "$st_out" in
*"FLASHSALE_HOLD_MAX_AGE (5 s) must exceed FLASHSALE_KAFKA_TIMEOUT_MS"*) ok "and says which settings clash" ;;
*) not_ok "and says which settings clash" "$st_out" ;;
esac
st_out=$(FLASHSALE_PURCHASE_THREADS=1000 admin config 2>&1)
is "$? $(printf '%s' "$st_out" | grep -c 'FLASHSALE_PURCHASE_THREADS=1000: must be an integer from 1 to 64')" "1 1" \
    "the admin tool refuses an out-of-range thread count by name"
