#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/lost_daemon.sh: node2's PRRTE daemon and ranks are lost
# while the node and its grant live on: left out for the hold, then taken
# again (tests/launcher/lost_node.sh, LOST=daemon).
LOST=daemon
. "$(dirname "$0")/lost_node.sh"
