# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A unit comes back and its restock message is lost while the listener's
# connection stays healthy: the sold-out memory of every purchase process
# heals itself within FLASHSALE_SOLDOUT_RECHECK_MS, and nginx's marker with
# it (see restock_lost_lib.sh for the steps and the bound).

. "$top_srcdir/tests/integration/restock_lost_lib.sh"

rl_lost_restock "$FLASHSALE_ORIGIN_URL" "$FLASHSALE_SOLDOUT_DIR"
