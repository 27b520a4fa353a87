# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/common.sh: shared setup of the Python binding's tests (sourced): the
# package from the build tree, mpirun under ULFM as the libelastic tests run it.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$(cd "${PWD}/.." && pwd)}"
. "$top_srcdir/tests/lib.sh"

[ -e "$top_builddir/python/slurm_elastic/_core.so" ] ||
	t_skip "the Python binding is not built (configure found no Python >= 3.12 headers)"
export PYTHONPATH=$top_builddir/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
command -v mpirun >/dev/null || t_skip "no mpirun in PATH"
ompi_info 2>/dev/null | grep -q "FT MPI support: yes" ||
	t_skip "this Open MPI has no ULFM fault tolerance (ompi_info: FT MPI support)"
t_ompi_env
# one thread per rank: these 2 cores run several ranks
export OMP_NUM_THREADS=1
# oneDNN's AVX-512 convolutions in torch 2.6 evaluate examples/pytorch's ResNet to
# NaN on some AVX-512 CPUs (an AMD EPYC with avx512_vp2intersect); its AVX2 kernels
# give other hosts' figures. Set before any process starts: a warm interpreter has
# chosen its kernels before the script runs.
export ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-AVX2}
MPIRUN="mpirun --with-ft ulfm --oversubscribe --bind-to none -x PYTHONPATH -x OMP_NUM_THREADS -x ONEDNN_MAX_CPU_ISA"

t_mpi_scratch() {
	mkdir -p "$T_DIR/tmp" "$T_DIR/sm"
	chmod 1777 "$T_DIR/tmp" "$T_DIR/sm" # jobs of test users inherit them (--export=ALL)
	export TMPDIR=$T_DIR/tmp OMPI_MCA_btl_sm_backing_directory=$T_DIR/sm
}

# A warm interpreter for script, as elastic-run starts one on each node of
# a job (python3 -m slurm_elastic.warm), listening before this returns;
# ranks started by $MPIRUN with -x SLURMD_NODENAME -x ELASTIC_RUN_WARM
# through elastic-run --rank are forked by it. Its pid in $zygote, its
# output in $T_DIR/zygote.out; it is killed when the test ends.
py_zygote() { # name script
	export SLURMD_NODENAME=$1 ELASTIC_RUN_WARM=elastic-warm-$1.$$
	python3 -m slurm_elastic.warm -v "$ELASTIC_RUN_WARM.$SLURMD_NODENAME" "$2" </dev/null \
		>"$T_DIR/zygote.out" 2>&1 &
	zygote=$!
	trap 'rc=$?; kill $zygote 2>/dev/null; t_cleanup $rc' EXIT
	local end=$((SECONDS + 120))
	until grep -q "@$ELASTIC_RUN_WARM.$SLURMD_NODENAME" /proc/net/unix; do
		[ $SECONDS -lt $end ] && kill -0 $zygote 2>/dev/null ||
			{ cat "$T_DIR/zygote.out"; t_fail "the warm interpreter did not start"; }
		sleep 0.1
	done
}

# run scenario $2 of script $1 on $3 ranks; output in $T_DIR/<scenario>
t_py() { # script scenario np [args...]
	local script=$1 sc=$2 np=$3
	shift 3
	timeout -s KILL 120 $MPIRUN -np "$np" python3 "$here/$script" "$sc" "$@" >"$T_DIR/$sc" 2>&1
}

# every one of n ranks printed "OK scenario"
t_py_ok() { # scenario n
	local n
	n=$(grep -c "^OK $1 rank" "$T_DIR/$1" || true)
	[ "$n" = "$2" ] || { cat "$T_DIR/$1"; t_fail "$1: $n of $2 ranks passed"; }
	t_log "$1: passed on $2 ranks"
}

# A test of the PyTorch example on the cluster: torch and sklearn there.
py_need_torch() {
	python3 -c 'import torch, sklearn' 2>/dev/null || t_skip "no torch/sklearn (python3-torch, python3-sklearn)"
}

# The start of a test of the PyTorch example on the cluster: the cluster with
# the SPANK plugin, torch, a scratch directory for the jobs; ex is the example's
# directory.
py_cluster_setup() {
	t_need_cluster
	t_need_spank
	py_need_torch
	t_scratch
	t_mpi_scratch
	ex=$top_srcdir/examples/pytorch
}

# $T_DIR/train.sbatch: the example's script without its --elastic-gpus line
# (such a job takes its grants from elasticd, which these tests do not run).
py_plain_sbatch() {
	grep -v '^#SBATCH --elastic' "$ex/train.sbatch" >"$T_DIR/train.sbatch"
}

# The static reference of the example: the same training on 2 ranks, no
# failure; its model in out (default $T_DIR/ref.npy), its output beside it
# (.out for .npy).
py_digits_reference() { # epochs steps [out]
	local out=${3:-$T_DIR/ref.npy}
	timeout -s KILL 300 $MPIRUN -np 2 python3 "$top_srcdir/examples/pytorch/train_digits.py" \
		--epochs "$1" --quiet --out "$out" >"${out%.npy}.out" 2>&1 ||
		{ cat "${out%.npy}.out"; t_fail "reference run"; }
	t_grep "^done: $2 steps" "${out%.npy}.out" "reference run"
}

# Wait until job's output ($T_DIR/job.out) shows step N; fail after 180 s or
# when the job ended first.
py_wait_step() { # job step [poll seconds]
	local end=$((SECONDS + 180))
	until grep -aq "^step $2 " "$T_DIR/job.out" 2>/dev/null; do
		[ $SECONDS -lt $end ] || { cat "$T_DIR/job.out"; t_fail "job $1 did not reach step $2"; }
		case "$(t_job_state "$1")" in PENDING | RUNNING | CONFIGURING | "") ;; *)
			cat "$T_DIR/job.out"; t_fail "job $1 ended early" ;; esac
		sleep "${3:-0.1}"
	done
}

# The pid of job's elastic-run (not a rank wrapper, nor a launch agent).
py_elastic_run_pid() { # job
	t_pgrep -f "elastic-run .*train_digits.py" | while read -r p; do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -Eq -- ' --(rank|rank-in-step|agent) ' && continue
		t_env_has "$p" "SLURM_JOB_ID=$1" && echo "$p"
	done | head -n1
}

# The pid of rank $2 of job $1's launch: its wrapper's child when it started cold, else
# the one its node's zygote forked for it (the wrapper's last "started warm: pid" line
# in the job's output $3, written with elastic-run -v); a forked rank's
# /proc/PID/environ is its zygote's, so the wrapper is found by its environment.
py_rank_pid() { # job rank out
	local p w="" c comm
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$p/comm" || continue
		[ "$comm" = elastic-run ] || continue
		t_env_has "${p#/proc/}" "SLURM_JOB_ID=$1" "OMPI_COMM_WORLD_RANK=$2" && w=${p#/proc/}
	done
	[ -n "$w" ] || return 0
	c=$(t_pgrep -P "$w" | head -n1)
	[ -n "$c" ] || c=$(grep -a "elastic-run --rank $2: started warm: pid" "$3" | tail -n1 | awk '{ print $7 }')
	[ -n "$c" ] && [ -d "/proc/$c" ] && echo "$c"
	return 0
}

# Wait up to SECONDS for a line matching REGEX in FILE, else fail with WHAT.
py_wait_line() { # file regex seconds what
	local end=$((SECONDS + $3))
	until grep -aEq -- "$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $end ] || { cat "$1"; t_fail "$4"; }
		sleep 0.1
	done
}

# A node lost: SIGKILL every process of grant jobs $1 (one id, or several separated by
# spaces) on node $2 (PRRTE daemon, rank wrappers, ranks, the zygote) and cancel the
# grants; the pids in $victims.
py_kill_node() { # grant(s) node
	local p comm g hit
	victims=""
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$p/comm" || continue
		case "$comm" in prted | elastic-run | python3*) ;; *) continue ;; esac
		t_env_has "${p#/proc/}" "SLURMD_NODENAME=$2" || continue
		hit=0
		for g in $1; do t_env_has "${p#/proc/}" "SLURM_JOB_ID=$g" && hit=1; done
		[ $hit = 1 ] && victims="$victims ${p#/proc/}"
	done
	[ -n "$victims" ] || t_fail "no process of job(s) $1 found on $2"
	t_kill=$(date +%s.%N)
	kill -KILL $victims
	scancel $1
}

# The job's loss fell below a third of its first value, and its final model
# ($T_DIR/elastic.npy) equals the static run's within float32
# summation-order noise (rtol 1e-3, atol 1e-4), and a static replay of its
# world sizes bit for bit, with the same loss at every step.
py_check_loss_and_model() { # epochs
	local first final
	first=$(sed -n 's/^step 0 .* loss \([0-9.]*\) .*/\1/p' "$T_DIR/job.out")
	final=$(sed -n "s/^epoch $(($1 - 1)) done .* loss \([0-9.]*\), test accuracy \([0-9.]*\).*/\1 \2/p" "$T_DIR/job.out")
	[ -n "$first" ] && [ -n "$final" ] || t_fail "no loss lines"
	awk -v a="$first" -v b="${final% *}" 'BEGIN { exit !(b < a / 3) }' || t_fail "loss did not fall: $first -> ${final% *}"
	t_log "loss $first -> ${final% *}, test accuracy ${final#* }"
	python3 - "$T_DIR" <<'PY' || t_fail "the final model differs from the static run's"
import sys, numpy as np
d = sys.argv[1]
a, b = np.load(d + "/elastic.npy"), np.load(d + "/ref.npy")
print("final model vs static 2-rank run: max abs difference %.3g" % float(np.max(np.abs(a - b))))
sys.exit(0 if np.allclose(a, b, rtol=1e-3, atol=1e-4) else 1)
PY
	# and bit for bit: the same training replayed at the job's world sizes
	# (examples/pytorch/replay.py)
	timeout -s KILL 300 python3 "$top_srcdir/examples/pytorch/replay.py" --mpirun "$MPIRUN" \
		--log "$T_DIR/job.out" --model "$T_DIR/elastic.npy" --workdir "$T_DIR/replay" \
		-- python3 "$top_srcdir/examples/pytorch/train_digits.py" --epochs "$1" >"$T_DIR/replay.out" 2>&1 ||
		{ cat "$T_DIR/replay.out"; t_fail "the job differs from a static replay of its world sizes"; }
	t_log "$(grep '^replay: equal' "$T_DIR/replay.out")"
}
