#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/tests/daemon_fatal.sh: when a daemon dies at start (as slurmdbd
# did with Debian 13.8's libmariadb3), `cluster up` names the daemon and
# quotes its own fatal line within seconds, instead of waiting out its 60 s
# timeout in silence. The daemons are broken through the config files'
# extra lines, on a private instance with its own ports.
. "$(dirname "$0")/lib.sh"
C=$TT_TB/cluster
export ELASTIC_TESTBED_INSTANCE=fataltest ELASTIC_TESTBED_PORT_BASE=${TT_FATAL_PORT_BASE:-19500}
trap '"$C" down >/dev/null 2>&1 || true' EXIT
# Limit, from the daemon's fatal line to cluster up's end: the quickest wait it
# replaces is 30 s (slurmctld), slurmdbd's 60 s. (The daemons before it, MariaDB
# first, take up to 30 s more on a loaded 2-core host: not counted.)
LIMIT=15

_case() { # daemon variable value
	local d=$1 var=$2 t0 t1 tf dt all line
	"$C" down >/dev/null 2>&1 || true
	t0=$(date +%s%N)
	tt_run env "$var=$3" "$C" up
	t1=$(date +%s%N)
	all=$(((t1 - t0) / 1000000))
	[ "$TT_RC" != 0 ] || tt_fail "$d: cluster up succeeded with $var='$3'"
	tt_expect_out "$d" "error: cluster did not come up: $d failed at start: .*fatal: "
	line=$(sed -n "s/.*error: cluster did not come up: $d failed at start: //p" <<<"$TT_OUT")
	# The quoted line is the daemon's own, from its log.
	"$C" exec -- grep -qF -- "$line" "/var/lib/elastic-testbed/fataltest/log/$d.log" ||
		tt_fail "$d: the quoted line is not in $d.log: $line"
	# (Slurm's log time: [YYYY-MM-DDTHH:MM:SS.mmm], the host's clock and zone)
	tf=$(sed -n 's/^\[\([0-9-]*\)T\([0-9:.]*\)\].*/\1 \2/p' <<<"$line")
	[ -n "$tf" ] || tt_fail "$d: no time on the quoted line: $line"
	dt=$(((t1 - $(date -d "$tf" +%s%N)) / 1000000))
	[ "$dt" -lt $((LIMIT * 1000)) ] || tt_fail "$d: reported $dt ms after its fatal line (limit ${LIMIT} s)"
	tt_ok "$d dying at start is named with its own line $dt ms after it ($all ms of cluster up): $line"
}

_case slurmdbd ELASTIC_TESTBED_SLURMDBD_CONF_EXTRA 'StorageType=accounting_storage/nonexistent'
_case slurmctld ELASTIC_TESTBED_SLURM_CONF_EXTRA 'SchedulerType=sched/nonexistent'

# And a healthy start still comes up.
"$C" down >/dev/null 2>&1 || true
tt_run "$C" up
[ "$TT_RC" = 0 ] || tt_fail "cluster up without broken settings failed: $TT_OUT"
tt_ok "the same instance comes up without the broken settings"
