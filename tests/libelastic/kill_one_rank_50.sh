#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/kill_one_rank_50.sh: the issue's 50-run figure of kill_one_rank.sh (for
# make bench; ELASTIC_KILL_RUNS still overrides).
ELASTIC_KILL_RUNS=${ELASTIC_KILL_RUNS:-50} exec "$(dirname "$0")/kill_one_rank.sh" "$@"
