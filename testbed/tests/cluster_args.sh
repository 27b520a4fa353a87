#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/tests/cluster_args.sh: testbed/cluster takes its options on either
# side of the action, and refuses what it does not know with a clear line
# instead of acting on the default instance.
. "$(dirname "$0")/lib.sh"
C=$TT_TB/cluster
unset ELASTIC_TESTBED_INSTANCE

# An instance that was never set up: status names it, wherever --instance stands.
tt_run "$C" status --instance nosuchinst
[ "$TT_RC" != 0 ] && grep -q '^\[cluster nosuchinst' <<<"$TT_OUT" ||
	tt_fail "'cluster status --instance nosuchinst' did not act on nosuchinst (rc $TT_RC): $TT_OUT"
tt_ok "option after the action: 'cluster status --instance nosuchinst' acts on nosuchinst"
tt_run "$C" --instance=nosuchinst status
grep -q '^\[cluster nosuchinst' <<<"$TT_OUT" || tt_fail "'cluster --instance=nosuchinst status': $TT_OUT"
tt_ok "option before the action still works"

tt_run "$C" env --instance nosuchinst
tt_expect_out "env after the action" '^export ELASTIC_TESTBED_INSTANCE=nosuchinst$'
tt_ok "'cluster env --instance nosuchinst' prints that instance's environment"

tt_run "$C" env --ompi
# (the runtime's network: the host's loopback on ompi5, the private bridge on ompi6 and sid)
if [ "${ELASTIC_TESTBED_RUNTIME:-ompi5}" != ompi5 ]; then
	tt_expect_out "env --ompi" '^export OMPI_MCA_btl_tcp_if_include=10\.77\.0\.0/24 PRTE_MCA_prte_if_include=10\.77\.0\.0/24 OMPI_MCA_coll=\^han$'
else
	tt_expect_out "env --ompi" '^export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_coll=\^han$'
fi
tt_expect_out "env --ompi" '^export OMPI_MCA_mpi_yield_when_idle=1$'
grep -q SLURM_CONF <<<"$TT_OUT" && tt_fail "'cluster env --ompi' printed more than Open MPI's settings: $TT_OUT"
tt_ok "'cluster env --ompi' prints the testbed's Open MPI settings only"
tt_expect_fail "--ompi outside env" "$C" up --ompi
tt_expect_out "--ompi outside env" "--ompi is an option of env only"
tt_ok "--ompi is refused outside env"

tt_expect_fail "unknown option" "$C" up --frobnicate
tt_expect_out "unknown option" "unknown option '--frobnicate'"
tt_ok "an unknown option after the action is refused by name"
tt_expect_fail "stray argument" "$C" up nosuchinst
tt_expect_out "stray argument" "unexpected argument 'nosuchinst' after 'up'"
tt_ok "a stray word after the action is refused, not ignored"
tt_expect_fail "unknown action" "$C" frob
tt_expect_out "unknown action" "unknown action 'frob'"
tt_ok "an unknown action is refused by name"
tt_expect_fail "--user outside exec" "$C" up --user alice
tt_expect_out "--user outside exec" "--user is an option of exec only"
tt_ok "--user is refused outside exec"
tt_expect_fail "missing instance name" "$C" up --instance
tt_expect_out "missing instance name" "--instance needs a name"
tt_ok "--instance without a name is refused"

# exec: options after exec, and the command's own options left alone.
tt_run "$C" exec --instance nosuchinst -- printenv ELASTIC_TESTBED_INSTANCE
[ "$TT_RC" = 0 ] && [ "$TT_OUT" = nosuchinst ] || tt_fail "exec --instance X -- printenv: rc $TT_RC: $TT_OUT"
tt_ok "'cluster exec --instance X -- CMD' runs CMD for instance X"
tt_run "$C" exec --instance nosuchinst sh -c 'echo "$0 $1"' --instance x
[ "$TT_OUT" = "--instance x" ] || tt_fail "exec CMD --instance x: the command's own arguments were taken: $TT_OUT"
tt_ok "arguments of the command after exec are passed to it untouched"

# The cluster's size: refused by name outside its range, before anything starts.
ELASTIC_TESTBED_NODES=65 tt_expect_fail "65 nodes" "$C" up --instance nosuchinst
tt_expect_out "65 nodes" "ELASTIC_TESTBED_NODES=65 is not in 1..64"
ELASTIC_TESTBED_NODES=0 tt_expect_fail "0 nodes" "$C" up --instance nosuchinst
tt_expect_out "0 nodes" "ELASTIC_TESTBED_NODES=0 is not in 1..64"
ELASTIC_TESTBED_GPUS_PER_NODE=9 tt_expect_fail "9 GPUs a node" "$C" up --instance nosuchinst
tt_expect_out "9 GPUs a node" "ELASTIC_TESTBED_GPUS_PER_NODE=9 is not in 1..8"
tt_ok "a size outside 1..64 nodes or 1..8 GPUs a node is refused by name"
