# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lib.sh: helpers for the shell tests that run against the testbed
# cluster (sourced). Tests exit 0 pass, 1 fail, 77 skip (automake's codes).

T_NAME=$(basename "$0" .sh)
t_log() { printf '[%s %s] %s\n' "$T_NAME" "$(date +%H:%M:%S.%3N)" "$*"; }
# t_fail ends the whole test, also when it is called inside $(...) or a
# pipeline (a subshell): the subshell tells the test's own shell, which
# exits 1 as soon as the command that ran the subshell returns. Without
# this, `id=$(t_sbatch ...)` that failed left only the subshell and the test
# went on (and could pass).
T_MAIN=$$
trap 'exit 1' USR2
t_fail() {
	printf '[%s] FAIL: %s\n' "$T_NAME" "$*" >&2
	[ -z "${T_DIR:-}" ] || : >"$T_DIR/.failed" 2>/dev/null || true
	[ "${BASHPID:-$$}" = "$T_MAIN" ] || kill -USR2 "$T_MAIN" 2>/dev/null || true
	exit 1
}
t_skip() {
	printf '[%s] SKIP: %s\n' "$T_NAME" "$*" >&2
	exit 77
}

# A test that would repeat what another root of testbed/check already
# proves (the same packages under it) is left out there: testbed/check
# names it in ELASTIC_CHECK_ELSEWHERE (globs of paths under tests/, such as
# "python/ddp.sh libelastic/*") and says where it runs instead in
# ELASTIC_CHECK_ELSEWHERE_WHY.
t_elsewhere() { # path-under-tests
	local g globs
	# read (every line), not a bare expansion: the globs must not match
	# files here
	read -r -d "" -a globs <<<"${ELASTIC_CHECK_ELSEWHERE:-}" || true
	for g in "${globs[@]}"; do
		# shellcheck disable=SC2053 # a glob on purpose
		[[ $1 == $g ]] && t_skip "${ELASTIC_CHECK_ELSEWHERE_WHY:-runs on another root of testbed/check}"
	done
	return 0
}
T_PATH=/$0
t_elsewhere "${T_PATH##*/tests/}"

# Skip unless a testbed cluster answers (SLURM_CONF set by testbed/cluster exec).
t_need_cluster() {
	[ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ] ||
		t_skip "no testbed cluster (run the suite with testbed/check, or inside 'testbed/cluster exec')"
	scontrol ping >/dev/null 2>&1 || t_skip "the testbed cluster at $SLURM_CONF does not answer"
}

# Whether sbatch knows --elastic-gpus: the cluster runs this build's SPANK
# plugin.
# (grep reads all of it: with -q it could stop early, and sbatch's SIGPIPE fails the
# pipeline in a test that sets pipefail)
t_have_spank() { sbatch --help 2>&1 | grep -- --elastic-gpus >/dev/null; }
t_need_spank() {
	t_have_spank || t_skip "the SPANK plugin is not loaded (cluster started without this build's plugins)"
}

# The testbed's Open MPI settings (loopback only, no coll/han under ULFM,
# mpirun as root), exported from `testbed/cluster env --ompi`, the one place
# that names them. Jobs the test submits inherit them (sbatch --export=ALL).
t_ompi_env() {
	local env
	env=$(bash "$(dirname "${BASH_SOURCE[0]}")/../testbed/cluster-inner.sh" env --ompi) ||
		t_fail "testbed/cluster-inner.sh env --ompi failed"
	eval "$env"
}

# Does the MPI runtime heal a lost node in place (Open MPI 6: PRRTE 5
# survives a lost daemon)? As elastic-run itself decides (`--runtime`).
t_runtime_in_place() {
	"${top_builddir:?}/launcher/elastic-run" --runtime 2>/dev/null | grep -q 'heals in place$'
}
# Does elastic-run take a grant on a new node in place (the runtime starts
# ranks inside a running mpirun under fault tolerance)?
t_runtime_grows() {
	"${top_builddir:?}/launcher/elastic-run" --runtime 2>/dev/null | grep -q 'joins in place$'
}
# Did the runtime itself fail the spawn of a growth in place, so that
# elastic-run re-formed the job instead? Open MPI 5.0.7's PRRTE now and then
# fails the spawn's connect ("PMIX ERROR: ... pmix_server_dyn.c"), and once
# mpirun aborted on it with a corrupted heap. Prints the runtime's line. A
# re-form for any other reason (libelastic's own error, a joiner that did not
# start) is not the runtime's and returns 1.
t_runtime_failed_spawn() { # output-file
	local why
	why=$(grep -am1 'PMIX ERROR: .* in file .*pmix_server_dyn\.c at line' "$1") || return 1
	grep -aq 're-form cause: grow' "$1" || return 1
	echo "$why"
}

# A scratch directory every test user can write (job output lands here).
t_scratch() {
	T_DIR=$(mktemp -d "/tmp/$T_NAME.XXXXXX")
	chmod 1777 "$T_DIR"
	trap 't_cleanup' EXIT
}
# Jobs to cancel at exit (a file: t_sbatch runs in a command substitution).
# A test that failed leaves a copy of its scratch files (job outputs, daemon
# logs; each under 2 MiB) next to its log, as <test>.sh.files, which
# testbed/check keeps with the log: a failure seen once in CI can be read
# after the scratch directory is gone.
t_cleanup() { # [exit status, for a trap that runs other commands first]
	local rc=${1:-$?} j
	t_ctld_revive
	for j in $(cat "$T_DIR/.jobs" 2>/dev/null); do scancel "$j" 2>/dev/null || true; done
	if [ -n "${T_DIR:-}" ] && [ -d "$T_DIR" ] &&
		{ [ -f "$T_DIR/.failed" ] || { [ "$rc" != 0 ] && [ "$rc" != 77 ]; }; }; then
		t_keep_files "$T_DIR"
	fi
	[ -n "${T_DIR:-}" ] && [ -z "${T_KEEP:-}" ] && rm -rf "$T_DIR"
	return 0
}
t_keep_files() { # dir
	local rel=$0 dest
	case "$rel" in
	*/tests/*) rel=${rel##*/tests/} ;;
	*) rel=$T_NAME.sh ;;
	esac
	dest=${top_builddir:-.}/tests/$rel.files
	rm -rf "$dest" && mkdir -p "$dest" || return 0
	(cd "$1" && find . -type f -size -2048k -print0 | tar --null -T - -cf -) 2>/dev/null |
		tar -C "$dest" -xf - 2>/dev/null || true
	printf '[%s] scratch files kept in %s\n' "$T_NAME" "$dest" >&2
}

# Process PID's environment, as it was exec'd (/proc/PID/environ: a process
# forked by a zygote shows the zygote's), in T_ENV: one VAR=VALUE a line,
# with a newline at both ends; 1 when it cannot be read. No fork: a test
# that scans every process of a loaded host must do it while what it looks
# for still runs.
t_env_read() { # pid
	local -a e
	T_ENV=
	mapfile -d '' -t e 2>/dev/null <"/proc/$1/environ" || return 1
	printf -v T_ENV '\n%s' "${e[@]}"
	T_ENV+=$'\n'
}

# Whether process PID's environment (t_env_read) holds every VAR=VALUE given.
t_env_has() { # pid VAR=VALUE...
	local kv
	t_env_read "$1" || return 1
	shift
	for kv; do [[ $T_ENV == *$'\n'"$kv"$'\n'* ]] || return 1; done
	return 0
}

# pgrep over this root's processes only: testbed/check runs the roots'
# clusters side by side on one host, and their programs have the same names
# and command lines. Exits 1 when none matched, as pgrep.
t_pgrep() { # pgrep-args...
	local me p n=0
	me=$(stat -L -c %d:%i /proc/self/root/)
	for p in $(pgrep "$@"); do
		[ "$(stat -L -c %d:%i "/proc/$p/root/" 2>/dev/null)" = "$me" ] || continue
		echo "$p"
		n=$((n + 1))
	done
	[ $n -gt 0 ]
}

# Run a command as a test user, keeping the cluster environment.
t_as() { # user cmd...
	local u=$1
	shift
	if [ "$u" = root ]; then "$@"; else runuser -u "$u" -- env SLURM_CONF="$SLURM_CONF" "$@"; fi
}

# sbatch as USER; prints the job id; the job is cancelled at exit.
t_sbatch() { # user sbatch-args...
	local u=$1 out id
	shift
	out=$(cd "$T_DIR" && t_as "$u" sbatch --parsable "$@" 2>&1) || t_fail "sbatch $* as $u: $out"
	id=${out%%;*}
	[[ "$id" =~ ^[0-9]+$ ]] || t_fail "sbatch $* as $u printed no job id: $out"
	echo "$id" >>"$T_DIR/.jobs"
	echo "$id"
}

# slurmctld's log and pid files (scontrol show config) in T_CTLD_LOG and
# T_CTLD_PIDFILE; SKIP when it names none.
t_ctld_files() {
	local cfg
	cfg=$(scontrol show config)
	T_CTLD_LOG=$(sed -n 's/^SlurmctldLogFile *= *//p' <<<"$cfg")
	T_CTLD_PIDFILE=$(sed -n 's/^SlurmctldPidFile *= *//p' <<<"$cfg")
	[ -f "$T_CTLD_LOG" ] && [ -n "$T_CTLD_PIDFILE" ] ||
		t_skip "slurmctld's log or pid file not in scontrol show config"
}

# The threads of a process that does not end, as /proc shows them: id, name,
# state, CPU ticks (user + system), the kernel function it sleeps in.
t_threads() { # pid
	local t
	for t in /proc/"$1"/task/*; do
		[ -r "$t/stat" ] || continue
		printf '%s %s %s\n' "${t##*/}" "$(sed 's/^[0-9]* (\(.*\)) \([A-Z]\) \([^ ]* \)\{10\}\([0-9]*\) \([0-9]*\).*/\1 \2 \4+\5/' "$t/stat" 2>/dev/null)" \
			"$(cat "$t/wchan" 2>/dev/null)"
	done
}

# 0 once process PID has ended, 1 while it still runs SECONDS seconds on.
t_wait_gone() { # pid seconds
	local end=$((SECONDS + $2))
	while [ -n "$1" ] && kill -0 "$1" 2>/dev/null; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

# 0 once slurmctld answers, 1 if it does not within SECONDS seconds.
t_ctld_answers() { # seconds
	local end=$((SECONDS + $1))
	until scontrol ping >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.5
	done
}

# Stop slurmctld (it saves its state, as SIGTERM does: an admin's restart
# for an upgrade or a failover), keep it down DOWN seconds and start it again
# as testbed/cluster does (slurmctld -i); fails unless it stops within 90 s,
# answers within 30 s of its start and still runs 2 s later. T_CTLD_DOWN_HOOK: a command run once it is
# down. T_CTLD_FROM: where this start's part of the log begins. Needs
# t_ctld_files.
t_ctld_restart() { # down-seconds
	local pid t0=$SECONDS
	pid=$(cat "$T_CTLD_PIDFILE" 2>/dev/null || true)
	T_CTLD_STOP_AT=$(($(stat -c %s "$T_CTLD_LOG") + 1))
	scontrol shutdown slurmctld >/dev/null 2>&1 || true
	T_CTLD_STOPPED=1
	# (as long as systemd waits for a stop by default: slurmctld waits for its
	# agents' RPCs to the slurmds, slow on a loaded host)
	t_wait_gone "$pid" 90 || {
		t_threads "$pid" >"$T_DIR/slurmctld-threads.txt"
		t_fail "slurmctld $pid did not stop within 90 s (its threads: slurmctld-threads.txt in the scratch files): $(tail -c +$T_CTLD_STOP_AT "$T_CTLD_LOG" | tail -n 3)"
	}
	[ $((SECONDS - t0)) -le 10 ] || t_log "slurmctld took $((SECONDS - t0)) s to stop"
	[ -z "${T_CTLD_DOWN_HOOK:-}" ] || eval "$T_CTLD_DOWN_HOOK"
	sleep "$1"
	T_CTLD_FROM=$(($(stat -c %s "$T_CTLD_LOG") + 1))
	slurmctld -i </dev/null >/dev/null 2>>"$T_CTLD_LOG" ||
		t_fail "slurmctld -i failed to start: $(tail -c +$T_CTLD_FROM "$T_CTLD_LOG" | tail -n 3)"
	t_ctld_answers 30 ||
		t_fail "slurmctld did not answer within 30 s: $(tail -c +$T_CTLD_FROM "$T_CTLD_LOG" | grep -E 'fatal|elastic' | head -n 3)"
	sleep 2
	pid=$(cat "$T_CTLD_PIDFILE" 2>/dev/null || true)
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null ||
		t_fail "slurmctld stopped after its start: $(tail -c +$T_CTLD_FROM "$T_CTLD_LOG" | grep -E 'fatal|elastic' | head -n 3)"
	T_CTLD_STOPPED=
}

# At the exit of a test that failed while slurmctld was stopped: its log
# since the stop kept with the scratch files, and slurmctld running again for
# the tests after (once a stop still under way is over).
t_ctld_revive() {
	local pid
	[ -n "${T_CTLD_STOPPED:-}" ] || return 0
	[ -z "${T_DIR:-}" ] || tail -c +"${T_CTLD_STOP_AT:-1}" "$T_CTLD_LOG" 2>/dev/null | tail -n 400 >"$T_DIR/slurmctld.log"
	pid=$(cat "$T_CTLD_PIDFILE" 2>/dev/null || true)
	# a stop that never ends is ended as systemd ends it, before a new start
	t_wait_gone "$pid" 30 || {
		[ -z "${T_DIR:-}" ] || [ -s "$T_DIR/slurmctld-threads.txt" ] || t_threads "$pid" >"$T_DIR/slurmctld-threads.txt"
		kill -KILL "$pid" 2>/dev/null || true
		sleep 1
	}
	scontrol ping >/dev/null 2>&1 || slurmctld -i </dev/null >/dev/null 2>>"$T_CTLD_LOG" || true
	t_ctld_answers 30 || true
}

t_job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }

# Stand in for elasticd: a grant job "elastic:LEAD" holding GPUS GPUs on NODE
# (default node2); once it runs, release LEAD (submitted held, -H). Sets grant.
t_grant_start() { # lead gpus [node]: sets grant, once it runs
	local end
	grant=$(t_sbatch root -N1 -w "${3:-node2}" --gres=gpu:"$2" -J "elastic:$1" -o /dev/null --wrap "sleep 600")
	end=$((SECONDS + 120))
	until [ "$(t_job_state "$grant")" = RUNNING ]; do
		[ $SECONDS -lt $end ] || t_fail "grant job $grant did not start"
		sleep 0.2
	done
}
t_grant_release() { # lead gpus [node]
	t_grant_start "$@"
	scontrol release "$1"
}

# Wait until job ends (or the timeout); fail on timeout or a state other
# than the one expected (default COMPLETED).
t_wait_job() { # id timeout [expected-state]
	local id=$1 t=$2 want=${3:-COMPLETED} st end=$((SECONDS + $2))
	while :; do
		st=$(t_job_state "$id")
		case "$st" in
		PENDING | RUNNING | CONFIGURING | COMPLETING | "") ;;
		*) break ;;
		esac
		[ $SECONDS -lt $end ] || t_fail "job $id still '$st' after ${t}s"
		sleep 0.5
	done
	[ "$st" = "$want" ] || t_fail "job $id ended $st, expected $want ($(scontrol show job "$id" | grep -o 'Reason=[^ ]*'))"
}

# Assert a file contains a line matching an extended regex.
t_grep() { # regex file what
	grep -aEq -- "$1" "$2" || {
		echo "---- $2:" >&2
		cat "$2" >&2 || true
		t_fail "$3 (no line matching /$1/ in $2)"
	}
}
