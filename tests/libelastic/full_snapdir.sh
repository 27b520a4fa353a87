#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/full_snapdir.sh: a full snapshot directory is an error, not a
# signal. ELASTIC_SHM_DIR is a 64 KiB tmpfs: a state too big for its two slots,
# and a relaunch that finds the first launch's snapshot taking the room, must
# both train to the model of a run without snapshots, with one line naming
# ENOSPC and the path and what protection is lost; no rank may die of SIGBUS,
# and no launch may call itself fenced by "a newer launch" (also when the
# directory has no room left for a new owner file).
set -u
. "$(dirname "$0")/common.sh"
[ "$(id -u)" = 0 ] || t_skip "mounting a tmpfs needs root"
t_scratch
t_mpi_scratch
tiny=$T_DIR/tiny
mkdir -p "$tiny"
mount -t tmpfs -o size=64k tmpfs "$tiny" 2>/dev/null || t_skip "cannot mount a tmpfs at $tiny"
trap 'umount "$tiny" 2>/dev/null; t_cleanup' EXIT
export ELASTIC_SHM_DIR=$tiny ELASTIC_SNAPSHOT_EVERY=1
unset ELASTIC_JOB_STAMP ELASTIC_SNAPSHOT_THREAD

# the run's end: exit 0, the reference model, the ENOSPC line, no bus error
t_clean_end() { # rc out what
	! grep -Eq 'Bus error|signal 7|SIGBUS' "$2" || { cat "$2"; t_fail "$3: a rank died of SIGBUS"; }
	[ "$1" = 0 ] || { cat "$2"; t_fail "$3: exit status $1"; }
	t_grep "cannot reserve [0-9]+ bytes for $tiny/elastic-$ELASTIC_JOB_ID-[^ ]*: No space left on device" "$2" "$3"
	t_grep "training goes on without this node's snapshot" "$2" "$3"
	t_grep '^model matches reference' "$2" "$3"
	! grep -q "a newer launch of job" "$2" || { cat "$2"; t_fail "$3: a launch said a newer launch owns the snapshots"; }
}

for samples in 12000 5500; do
	args="--epochs 2 --samples $samples --global-batch 64"
	ELASTIC_JOB_ID='' t_reference 60 2 $args --quiet
	mv "$T_DIR/ref.model" "$T_DIR/ref$samples.model"
done

# 12,000 samples: about 48 KB of state, one slot fits, two do not
export ELASTIC_JOB_ID=big$$
timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" --epochs 2 --samples 12000 --global-batch 64 \
	--compare "$T_DIR/ref12000.model" >"$T_DIR/big.out" 2>&1
t_clean_end $? "$T_DIR/big.out" "a state bigger than the directory"
[ -z "$(ls -A "$tiny")" ] || t_fail "files left in $tiny after the training completed: $(ls -A "$tiny")"
t_log "a state bigger than the directory: ENOSPC named, model exact, nothing left"

# 5,500 samples: about 22 KB, two slots fit; a relaunch finds them there
export ELASTIC_JOB_ID=again$$
args="--epochs 2 --samples 5500 --global-batch 64"
timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" $args --stop-after 10 >"$T_DIR/first.out" 2>&1
ls "$tiny"/elastic-"$ELASTIC_JOB_ID"-*.snap >/dev/null 2>&1 ||
	{ cat "$T_DIR/first.out"; t_fail "the first launch left no snapshot in $tiny"; }
# the rest of the directory filled too: the relaunch cannot even write a
# new owner file, yet must take the node's snapshots over
dd if=/dev/zero of="$tiny/filler" bs=4k 2>/dev/null
timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" $args --compare "$T_DIR/ref5500.model" >"$T_DIR/second.out" 2>&1
t_clean_end $? "$T_DIR/second.out" "a relaunch into a full directory"
t_grep "resumed at committed step 10 " "$T_DIR/second.out" "the relaunch"
t_log "PASS: the relaunch resumed at step 10, then trained without snapshots (ENOSPC named), model exact"
exit 0
