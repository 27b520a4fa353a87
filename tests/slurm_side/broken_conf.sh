#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_side/broken_conf.sh: a broken elastic.conf disables elastic
# jobs, never the site. For each broken file (a typo, an unknown key, a bad
# value, a key given twice, a file users cannot read, a directory in its
# place) slurmctld is restarted with it and: it stays up and logs one line
# naming file:line and the problem; a plain `sbatch --wrap true` runs and
# `srun true` works; an elastic sbatch is refused with a message naming the
# problem, by sbatch's SPANK plugin and (through a client that reads a good
# copy) by slurmctld's job_submit plugin. A file broken while slurmctld runs
# is seen at the next submission, and the good file is taken back.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
es_need_plugins
t_scratch
t_ctld_files
log=$T_CTLD_LOG
good=$T_DIR/good.conf
cp -p "$ES_CONF" "$good"
chmod 644 "$good"
nlines=$(wc -l <"$good")
# A client whose SPANK plugin reads the good copy: what it lets through is
# refused (or not) by slurmctld alone.
client=$(es_client_conf "conf=$good")

# Put the good file back and restart slurmctld with it, whatever happened.
_restore() {
	rm -rf "$ES_CONF"
	cp -p "$good" "$ES_CONF"
	if ! scontrol ping >/dev/null 2>&1 || [ "${restarted:-0}" = 1 ]; then
		_restart_ctld || true
	fi
}
trap 'rc=$?; _restore; t_cleanup $rc' EXIT

# Stop slurmctld and start it again (tests/lib.sh); from: where this start's
# part of the log begins.
_restart_ctld() {
	restarted=1
	t_ctld_restart 0
	from=$T_CTLD_FROM
}

# The checks every broken file must pass; why is the problem as the plugins
# name it, ctld says whether slurmctld itself cannot use the file.
_check_site_works() { # name why ctld
	local name=$1 why=$2 ctld=$3 id out line
	if [ "$ctld" = yes ]; then
		line=$(tail -c +$from "$log" | grep -F "elastic: $why" | head -n1)
		[ -n "$line" ] || t_fail "$name: slurmctld's log does not name the problem '$why': $(tail -c +$from "$log" | grep elastic | head -n 5)"
		grep -q "elastic jobs are refused until it is fixed" <<<"$line" ||
			t_fail "$name: slurmctld's log line does not say what it does: $line"
		t_log "$name: slurmctld up, logged: ${line#*elastic: }"
	fi
	id=$(t_sbatch alice -o /dev/null --wrap true)
	t_wait_job "$id" 60
	out=$(cd "$T_DIR" && t_as alice srun -N1 -n1 true 2>&1) || t_fail "$name: srun true failed: $out"
	t_log "$name: plain sbatch job $id completed, srun true worked"
	es_refused alice "elastic: elastic jobs are refused until elastic.conf is fixed: $why" --elastic-gpus=1-2
	if [ "$ctld" = yes ]; then
		SLURM_CONF=$client ES_ALSO="Batch job submission failed" es_refused alice \
			"sbatch: error: elastic: elastic jobs are refused until elastic.conf is fixed: $why" \
			--elastic-gpus=1-2
	fi
}

_case() { # name why ctld line...
	local name=$1 why=$2 ctld=$3
	shift 3
	rm -rf "$ES_CONF"
	{
		cat "$good"
		printf '%s\n' "$@"
	} >"$ES_CONF"
	chmod 644 "$ES_CONF"
	_restart_ctld
	_check_site_works "$name" "$why" "$ctld"
}

n=$((nlines + 1))
_case typo "$ES_CONF:$n: unknown key 'TickSecond' (did you mean 'TickSeconds'?)" yes "TickSecond=2"
_case "unknown key" "$ES_CONF:$n: unknown key 'Bogus' (known: " yes "Bogus=1"
_case "bad value" "$ES_CONF:$n: ChannelIdleTimeout=0 is out of range [1, 3600]" yes "ChannelIdleTimeout=0"
first=$(grep -n -i '^[[:space:]]*TickSeconds[[:space:]]*=' "$good" | head -n1 | cut -d: -f1)
[ -n "$first" ] || t_fail "the cluster's elastic.conf has no TickSeconds line to repeat"
_case "duplicate key" "$ES_CONF:$n: TickSeconds given a second time (first at $ES_CONF:$first)" yes "TickSeconds=5"

# Unreadable for users (root-only, as a site might install it): slurmctld
# (root here) reads it; sbatch as alice cannot.
rm -rf "$ES_CONF"
cp -p "$good" "$ES_CONF"
chmod 600 "$ES_CONF"
_restart_ctld
_check_site_works "unreadable by users" "$ES_CONF: cannot open: Permission denied" no
# Unreadable for slurmctld too: a directory where the file should be.
rm -rf "$ES_CONF"
mkdir -m 755 "$ES_CONF"
_restart_ctld
_check_site_works "a directory" "$ES_CONF: read error: Is a directory" yes

# The good file again, then broken while slurmctld runs: the next elastic
# submission sees it, and the fixed file is taken back without a restart.
rm -rf "$ES_CONF"
cp -p "$good" "$ES_CONF"
_restart_ctld
grep -qF "elastic: loaded $ES_CONF" <(tail -c +$from "$log") || t_fail "slurmctld did not load the good file back"
id=$(SLURM_CONF=$client t_sbatch alice --hold -o /dev/null --elastic-gpus=1-2 --wrap true)
t_log "good file: elastic job $id accepted"
sleep 1 # a new mtime for the change check
printf 'Bogus=1\n' >>"$ES_CONF"
SLURM_CONF=$client ES_ALSO="Batch job submission failed" es_refused alice \
	"sbatch: error: elastic: elastic jobs are refused until elastic.conf is fixed: $ES_CONF:$n: unknown key 'Bogus'" \
	--elastic-gpus=1-2
sleep 1
cp "$good" "$ES_CONF"
id=$(SLURM_CONF=$client t_sbatch alice --hold -o /dev/null --elastic-gpus=1-2 --wrap true)
t_log "file fixed while slurmctld runs: elastic job $id accepted"
t_log "PASS: 6 broken elastic.conf files: slurmctld up, plain sbatch/srun work, elastic sbatch refused naming the problem ($ES_N refusals)"
