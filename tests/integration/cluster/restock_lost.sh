# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# On the cluster, restock messages are lost (published on the master that
# holds the unit, heard by no listener on either origin host, as after a
# bus link reset) while every listener's connection stays healthy: both
# hosts' sold-out memory and markers heal themselves within
# FLASHSALE_SOLDOUT_RECHECK_MS, and each host sells a unit again through
# its nginx (see restock_lost_lib.sh for the steps and the bound).

. "$top_srcdir/tests/integration/restock_lost_lib.sh"

rl_lost_restock "$FLASHSALE_ORIGIN_URL" "$FLASHSALE_STATE/origin-a/soldout" \
    "http://127.0.0.3:$((FLASHSALE_PORT_BASE + 1))" "$FLASHSALE_STATE/origin-b/soldout"
