#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# slurm-conf/qos-setup.sh: create the QOS of elasticd's grant jobs and let
# users of elastic jobs use it (needs slurmdbd; run as a Slurm administrator).
#
# usage: qos-setup.sh [QOS] [ACCOUNT...]
#   QOS       name, as GrantQos in elastic.conf (default: elastic)
#   ACCOUNT   accounts whose users run elastic jobs (default: every account)
#
# What the settings mean:
#   Priority=0          grants never get ahead of ordinary jobs in the queue;
#                       elasticd only submits them for GPUs that are free.
#   Preempt/PreemptMode ordinary jobs of the QOS "normal" may preempt grants
#                       (with PreemptType=preempt/qos in slurm.conf), so an
#                       elastic job's extra GPUs go back to the queue when
#                       Slurm needs them; the elastic job keeps its MIN GPUs.
#   GraceTime=60        seconds a preempted grant gets before it is killed:
#                       at least the MaxGrace of elastic.conf is kind to jobs.
#   Flags=NoReserve     grants do not hold back backfill reservations.
set -eu
qos=${1:-elastic}
[ $# -gt 0 ] && shift
sacctmgr -i add qos "$qos" Priority=0 GraceTime=60 PreemptMode=cancel Flags=NoReserve ||
	sacctmgr -i modify qos "$qos" set Priority=0 GraceTime=60 PreemptMode=cancel Flags=NoReserve
sacctmgr -i modify qos normal set Preempt+="$qos"
if [ $# -eq 0 ]; then
	set -- $(sacctmgr -n -P list account format=Account)
fi
for a in "$@"; do
	sacctmgr -i modify account "$a" set QOS+="$qos"
done
echo "QOS $qos ready; users of account(s) $* may run grants in it (elasticd submits them)."
sacctmgr list qos "$qos" format=Name,Priority,GraceTime,PreemptMode,Flags
