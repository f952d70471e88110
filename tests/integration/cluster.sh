#!/bin/sh
# The cluster topology's suite (after the single one): `deploy/stack up
# --cluster` in a state directory of its own, then the cluster/*.sh files
# of tests/integration/ORDER, each killing one node mid-sale (a Redis
# master, a Kafka broker, an origin host, a consumer) and proving the
# invariants.
FLASHSALE_TOPOLOGY=cluster exec "$(dirname "$0")/suite.sh"
