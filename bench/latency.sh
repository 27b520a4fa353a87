#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/latency.sh: runs bench/latency.py (re-split latency with training,
# elasticd's slow reaction timing against the default one; see its --help) on a
# cluster of 2 nodes x 4 GPUs, found or started the way bench/compare.sh does.
#
# usage: latency.sh [BUILD_DIR] [latency options: --arrivals N --swaps N --modes slow,fast]
exec "$(dirname "$0")/compare.sh" "$@" --parts latency
