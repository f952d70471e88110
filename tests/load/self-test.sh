#!/bin/sh
# make check (TAP): the load generator's HTTP response parser, every case
# fed whole, byte by byte and cut in two at every offset.
exec "${FLASHSALE_BINDIR:-.}/tests/load/flashsale-load" --self-test
