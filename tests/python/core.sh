#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/core.sh: slurm_elastic under mpirun --with-ft ulfm: errors as exceptions
# with the library's text, the GIL released in blocking calls, callback exceptions reaching
# the caller, bad use refused on every rank, a SIGKILLed rank healed in place with each step
# applied once, the exit hook + flushed output when the library ends the process, and a
# program that runs on after the context ended is not killed by the finalize guard.
set -u
. "$(dirname "$0")/common.sh"
t_scratch
t_mpi_scratch

t_py core_checks.py api 2 || true
t_py_ok api 2
t_py core_checks.py gil 2 || true
t_py_ok gil 2
t_log "$(grep 'thread ticks' "$T_DIR/gil")"
t_py core_checks.py mismatch 2 || true
t_py_ok mismatch 2
t_py core_checks.py inside 2 || true
t_py_ok inside 2
t_py core_checks.py sigusr1 1 || true
t_py_ok sigusr1 1
t_py core_checks.py usr1_none 1 || true
t_py_ok usr1_none 1
ELASTIC_FINALIZE_TIMEOUT=1 t_py core_checks.py after_close 2 || true
t_py_ok after_close 2
t_py core_checks.py kill 3 || true
t_py_ok kill 2
t_grep '^KILL rank 2 at step 4' "$T_DIR/kill" "the victim was killed"
k=$(sed -n 's/^KILL .* t=//p' "$T_DIR/kill")
c=$(sed -n 's/^first commit after a change t=\([0-9.]*\).*/\1/p' "$T_DIR/kill" | head -1)
[ -n "$c" ] || { cat "$T_DIR/kill"; t_fail "no commit after the kill"; }
t_log "kill -> next commit: $(awk -v k="$k" -v c="$c" 'BEGIN { printf "%.0f ms", (c - k) * 1000 }')"

# exit hook: every rank ends with the library's _exit(75) after its hook ran
t_py core_checks.py exit_hook 2 "$T_DIR/hook" || true
for r in 0 1; do
	f=$T_DIR/hook.$r
	[ -f "$f" ] || { cat "$T_DIR/exit_hook"; t_fail "rank $r wrote no output file"; }
	t_grep '^step 3 begun' "$f" "rank $r: buffered output flushed before _exit"
	t_grep '^exit hook: status 75 \(planned re-form\)' "$f" "rank $r: exit hook ran"
	grep -q 'NOT REACHED' "$f" && t_fail "rank $r: the loop ran on after the re-form"
done
t_log "exit hook ran and output was flushed on both ranks"

# SIGTERM where no snapshot is owed (node snapshots every 50 steps): before
# the first step and after the training completed, the rank dies of it at
# once, saying why (it used to wait 2 s: "between steps for 2 s")
for when in before after; do
	ELASTIC_JOB_ID="termidle$$" ELASTIC_SHM_DIR="$T_DIR" ELASTIC_SNAPSHOT_EVERY=50 \
		t_py core_checks.py term_idle 1 "$when" || true
	f=$T_DIR/term_idle
	t_grep "^SIGTERM $when t=" "$f" "$when: the scenario did not reach its SIGTERM"
	grep -q 'NOT REACHED' "$f" && { cat "$f"; t_fail "$when: the rank lived on after SIGTERM"; }
	t_grep 'SIGTERM: committed step [0-9]* owes no snapshot' "$f" "$when: SIGTERM was not passed on at once"
	t_log "SIGTERM $when the training: $(grep -o 'SIGTERM: committed.*' "$f")"
done

# SIGUSR1 pending from before elastic_init (blocked, as elastic-run starts
# ranks): the rank lives, and the re-form happens after the first commit
t_py core_checks.py early_usr1 2 "$T_DIR/early" || true
for r in 0 1; do
	f=$T_DIR/early.$r
	[ -f "$f" ] || { cat "$T_DIR/early_usr1"; t_fail "rank $r wrote no output file"; }
	t_grep '^exit hook: status 75 \(planned re-form\)' "$f" "rank $r: the early request became a planned re-form"
	grep -q '^step 1 begun' "$f" && { cat "$f"; t_fail "rank $r: step 1 began: the request was not taken at the first commit"; }
	grep -q 'NOT REACHED' "$f" && t_fail "rank $r: the loop ran on"
done
t_log "a SIGUSR1 pending from before elastic_init is taken at the first commit"
exit 0
