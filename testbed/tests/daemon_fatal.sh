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
# Limit: the quickest wait it replaces is 30 s (slurmctld), slurmdbd's 60 s.
# (cluster up itself, MariaDB first, takes up to 17 s on a loaded 2-core host)
LIMIT=25

_case() { # daemon variable value
	local d=$1 var=$2 t0 dt line
	"$C" down >/dev/null 2>&1 || true
	t0=$(date +%s%N)
	tt_run env "$var=$3" "$C" up
	dt=$((($(date +%s%N) - t0) / 1000000))
	[ "$TT_RC" != 0 ] || tt_fail "$d: cluster up succeeded with $var='$3'"
	tt_expect_out "$d" "error: cluster did not come up: $d failed at start: .*fatal: "
	line=$(sed -n "s/.*error: cluster did not come up: $d failed at start: //p" <<<"$TT_OUT")
	# The quoted line is the daemon's own, from its log.
	"$C" exec -- grep -qF -- "$line" "/var/lib/elastic-testbed/fataltest/log/$d.log" ||
		tt_fail "$d: the quoted line is not in $d.log: $line"
	[ "$dt" -lt $((LIMIT * 1000)) ] || tt_fail "$d: reported after $dt ms (limit ${LIMIT} s)"
	tt_ok "$d dying at start is named with its own line after $dt ms: $line"
}

_case slurmdbd ELASTIC_TESTBED_SLURMDBD_CONF_EXTRA 'StorageType=accounting_storage/nonexistent'
_case slurmctld ELASTIC_TESTBED_SLURM_CONF_EXTRA 'SchedulerType=sched/nonexistent'

# And a healthy start still comes up.
"$C" down >/dev/null 2>&1 || true
tt_run "$C" up
[ "$TT_RC" = 0 ] || tt_fail "cluster up without broken settings failed: $TT_OUT"
tt_ok "the same instance comes up without the broken settings"
