# SPDX-License-Identifier: GPL-2.0-or-later
# bench/cluster_jobs.sh: sourced by the benches that submit jobs to the testbed
# cluster (py_relaunch.sh, grow.sh): bench_jobs_setup NAME makes the scratch
# directory D (jobs of other users may write there), cancels the jobs submitted
# with `submit` at exit and removes D (kept when BENCH_KEEP is set), points the
# Python package and Open MPI's scratch at the build and D, and writes
# $D/train.sbatch: the PyTorch example's script without its --elastic-gpus line.
bench_jobs_setup() { # name
	D=$(mktemp -d "/tmp/$1.XXXXXX")
	chmod 1777 "$D"
	mkdir -p "$D/tmp" "$D/sm"
	chmod 1777 "$D/tmp" "$D/sm"
	jobs_file=$D/jobs
	trap 'for j in $(cat "$jobs_file" 2>/dev/null); do scancel "$j" 2>/dev/null; done
		if [ -n "${BENCH_KEEP:-}" ]; then echo "outputs kept in $D"; else rm -rf "$D"; fi' EXIT
	export PYTHONPATH=$top_builddir/python${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
	export TMPDIR=$D/tmp OMPI_MCA_btl_sm_backing_directory=$D/sm
	grep -v '^#SBATCH --elastic' "$top_srcdir/examples/pytorch/train.sbatch" >"$D/train.sbatch"
}

submit() { # args... -> job id
	local id
	id=$(cd "$D" && sbatch --parsable "$@") || return 1
	id=${id%%;*}
	echo "$id" >>"$jobs_file"
	echo "$id"
}
state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
wait_for() { # file regex seconds
	local end=$((SECONDS + $3))
	until grep -aEq "$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.05
	done
}
