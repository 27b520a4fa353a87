#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/give_up_cause.sh: when elastic-run gives up (failures in a row
# on the same GPUs), its last line names the cause: the rank, where it ran and
# the signal or exit status it died of, not only the count.
set -u
. "$(dirname "$0")/../lib.sh"
t_need_cluster
t_ompi_env
t_scratch
run=${top_builddir:?}/launcher/elastic-run
[ -x "$run" ] || t_skip "launcher/elastic-run not built"
cp "$run" "$T_DIR/"
# a program that dies of SIGBUS, as a rank that wrote past a full tmpfs did
bus=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:1 -o "$T_DIR/bus.out" -D "$T_DIR" --wrap \
	"exec ./elastic-run --max-stuck 0 -- sh -c 'kill -BUS \$\$'")
# and one that exits with an error status
ex=$(t_sbatch root -N1 -n1 -w node2 --gres=gpu:1 -o "$T_DIR/exit.out" -D "$T_DIR" --wrap \
	"exec ./elastic-run --max-stuck 0 -- sh -c 'exit 3'")
t_wait_job "$bus" 120 FAILED
t_wait_job "$ex" 120 FAILED
last() { grep -a 'elastic-run' "$1" | tail -1; }
[[ "$(last "$T_DIR/bus.out")" =~ "failures in a row on the same GPUs: giving up; the last: rank 0 on node1 GPU "[0-9]": killed by signal 7 (Bus error)" ]] ||
	{ cat "$T_DIR/bus.out"; t_fail "the SIGBUS job's last line does not name the signal: $(last "$T_DIR/bus.out")"; }
t_log "$(last "$T_DIR/bus.out")"
[[ "$(last "$T_DIR/exit.out")" =~ "giving up; the last: rank 0 on node2 GPU "[0-9]": exit status 3" ]] ||
	{ cat "$T_DIR/exit.out"; t_fail "the failing job's last line does not name the status: $(last "$T_DIR/exit.out")"; }
t_log "PASS: $(last "$T_DIR/exit.out")"
