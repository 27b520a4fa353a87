#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/tests/node_cpu.sh: ELASTIC_TESTBED_NODE_CPU=own puts the nodes of
# a cluster in one cpu cgroup beside the controller's daemons
# (testbed/cluster): every slurmd and what a job runs on a node are in it,
# slurmctld is not, a node's slurmd started again joins it, `down` removes
# it; the default (shared) makes none, and a misspelt value is refused with
# its name. A private instance with its own ports.
. "$(dirname "$0")/lib.sh"
C=$TT_TB/cluster
export ELASTIC_TESTBED_INSTANCE=nodecputest ELASTIC_TESTBED_PORT_BASE=${TT_NODE_CPU_PORT_BASE:-19540}
export ELASTIC_TESTBED_NODES=2 ELASTIC_TESTBED_GPUS_PER_NODE=1
CG=/sys/fs/cgroup/cpu/elastic-testbed-$ELASTIC_TESTBED_INSTANCE-nodes
trap '"$C" down >/dev/null 2>&1 || true' EXIT
[ -w /sys/fs/cgroup/cpu/cgroup.procs ] || {
	tt_ok "skipped: this host has no writable cpu cgroup controller (/sys/fs/cgroup/cpu)"
	exit 0
}

# The cpu cgroup of a pid file's daemon, and of a job's task on each node.
_cg_of() { "$C" exec -- bash -c "sed -n 's/^[0-9]*:cpu:\\(.*\\)/\\1/p' /proc/\$(cat \$ELASTIC_TESTBED_DIR/run/$1.pid)/cgroup"; }
_task_cgs() { "$C" exec -- srun -N2 -n2 -t 1 sed -n 's/^[0-9]*:cpu:\(.*\)/\1/p' /proc/self/cgroup | sort -u | paste -sd' '; }

tt_run env ELASTIC_TESTBED_NODE_CPU=sole "$C" up
[ "$TT_RC" != 0 ] || tt_fail "cluster up accepted ELASTIC_TESTBED_NODE_CPU=sole"
tt_expect_out "a misspelt value" "ELASTIC_TESTBED_NODE_CPU=sole: own or shared"
tt_ok "ELASTIC_TESTBED_NODE_CPU=sole is refused by name"

"$C" down >/dev/null 2>&1 || true
tt_run env ELASTIC_TESTBED_NODE_CPU=own "$C" up
[ "$TT_RC" = 0 ] || tt_fail "cluster up with ELASTIC_TESTBED_NODE_CPU=own failed: $TT_OUT"
want=/${CG##*/}
for n in node1 node2; do
	[ "$(_cg_of "slurmd-$n")" = "$want" ] || tt_fail "slurmd of $n is in cpu cgroup '$(_cg_of "slurmd-$n")', not $want"
done
[ "$(_task_cgs)" = "$want" ] || tt_fail "a job's tasks are in cpu cgroups '$(_task_cgs)', not $want"
ctld=$(_cg_of slurmctld)
[ "$ctld" != "$want" ] || tt_fail "slurmctld is in the nodes' cpu cgroup $want"
tt_ok "both slurmd and a job's tasks on both nodes are in $want; slurmctld in $ctld"

# A node lost and back (bench/site_soak.sh does it, without the variable):
# its slurmd joins again.
"$C" exec -- bash -c 'kill -9 $(cat $ELASTIC_TESTBED_DIR/run/slurmd-node2.pid)'
"$C" exec -- bash /src/testbed/cluster-inner.sh node-start node2 >/dev/null 2>&1 ||
	tt_fail "node-start node2 failed"
[ "$(_cg_of slurmd-node2)" = "$want" ] || tt_fail "slurmd of node2 started again is in '$(_cg_of slurmd-node2)', not $want"
tt_ok "node2's slurmd killed and started again is in $want"

"$C" down >/dev/null 2>&1
[ ! -d "$CG" ] || tt_fail "$CG is left after down"
tt_ok "down removes $CG"

tt_run "$C" up
[ "$TT_RC" = 0 ] || tt_fail "cluster up failed: $TT_OUT"
[ ! -d "$CG" ] || tt_fail "the default (shared) made $CG"
[ "$(_cg_of slurmd-node1)" = "$ctld" ] || tt_fail "by default slurmd is in '$(_cg_of slurmd-node1)', not beside slurmctld ($ctld)"
tt_ok "by default (shared): slurmd beside slurmctld in $ctld, no nodes' cgroup"
