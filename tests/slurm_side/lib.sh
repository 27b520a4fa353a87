# SPDX-License-Identifier: GPL-2.0-or-later
# tests/slurm_side/lib.sh: helpers of the Slurm-side cluster tests (SPANK and
# job_submit plugins), sourced after tests/lib.sh.

# Skip unless the cluster runs this build's plugins; sets ES_CONF (the
# elastic.conf the cluster uses), ES_SPANK_SO, ES_PORT, ES_MAXGPUS, ES_MAXGRACE.
es_need_plugins() {
	local psc cfg
	t_need_cluster
	cfg=$(scontrol show config)
	grep -Eq '^JobSubmitPlugins +=.*elastic' <<<"$cfg" ||
		t_skip "slurmctld runs without job_submit/elastic (start the cluster with ELASTIC_BUILD_DIR pointing at a build that has the plugins)"
	psc=$(sed -n 's/^PlugStackConfig *= *//p' <<<"$cfg")
	[ -n "$psc" ] && [ -f "$psc" ] || t_skip "no PlugStackConfig in the cluster's slurm.conf"
	ES_SPANK_SO=$(awk '$2 ~ /elastic\.so$/ {print $2; exit}' "$psc")
	[ -n "$ES_SPANK_SO" ] || t_skip "plugstack.conf ($psc) does not load elastic.so"
	ES_CONF=$(awk '$2 ~ /elastic\.so$/ {for (i = 3; i <= NF; i++) if ($i ~ /^conf=/) print substr($i, 6)}' "$psc")
	[ -n "$ES_CONF" ] || ES_CONF=$(dirname "$SLURM_CONF")/elastic.conf
	[ -f "$ES_CONF" ] || t_skip "the cluster has no elastic.conf at $ES_CONF"
	ES_PORT=$(es_conf_value ControllerPort 6820)
	ES_MAXGPUS=$(es_conf_value MaxGpusPerJob 64)
	ES_MAXGRACE=$(es_conf_value MaxGrace 600)
	ES_DEFGRACE=$(es_conf_value DefaultGrace 30)
}

# The value of an elastic.conf key (case-insensitive), or the default.
es_conf_value() { # key default
	local v
	v=$(sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\([^#[:space:]]*\).*/\1/Ip" "$ES_CONF" | tail -n1)
	echo "${v:-$2}"
}

# sbatch as USER that must be refused: non-zero exit, output containing
# EXPECT (fixed string) and $ES_ALSO when set, and no job under the unique
# name the submission used. Counts refusals in ES_N.
ES_N=0
es_refused() { # user expect sbatch-args...
	local u=$1 expect=$2 out rc=0 left name
	shift 2
	ES_N=$((ES_N + 1))
	name=es-bad-$$-$ES_N
	out=$(cd "$T_DIR" && t_as "$u" sbatch --hold --job-name="$name" -o /dev/null "$@" --wrap true 2>&1) || rc=$?
	if [ $rc = 0 ]; then
		local id=${out##* }
		[[ "$id" =~ ^[0-9]+$ ]] && es_track_job "$id"
		t_fail "sbatch $* as $u was accepted ($out); expected: $expect"
	fi
	case "$out" in
	*"$expect"*) ;;
	*) t_fail "sbatch $* as $u: message does not contain '$expect'; got: $out" ;;
	esac
	case "$out" in
	*"${ES_ALSO:-}"*) ;;
	*) t_fail "sbatch $* as $u: message does not contain '$ES_ALSO'; got: $out" ;;
	esac
	left=$(squeue -h -n "$name" -o %i)
	[ -z "$left" ] || {
		es_track_job $left
		t_fail "sbatch $* was refused but squeue shows job(s) $left named $name"
	}
	t_log "refused as expected: sbatch $* -> $(printf '%s' "$out" | grep -F -- "$expect" | head -n1)"
}

# Have a job cancelled at exit (works with either form of tests/lib.sh's
# cleanup: the T_JOBS list or the $T_DIR/.jobs file).
es_track_job() { # id...
	local j
	for j in "$@"; do
		echo "$j" >>"$T_DIR/.jobs"
		T_JOBS="${T_JOBS:-} $j"
	done
}

# A field of scontrol show job (e.g. AdminComment, TresPerJob).
es_job_field() { # id field
	scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1
}

# A private copy of the cluster's client configuration whose plugstack.conf
# loads elastic.so with ARGS instead; prints the SLURM_CONF to use. The copy
# talks to the same slurmctld.
es_client_conf() { # plugstack-args...
	local d=$T_DIR/client
	mkdir -p "$d"
	sed "s|^PlugStackConfig=.*|PlugStackConfig=$d/plugstack.conf|" "$SLURM_CONF" >"$d/slurm.conf"
	echo "required $ES_SPANK_SO $*" >"$d/plugstack.conf"
	chmod -R a+rX "$d"
	echo "$d/slurm.conf"
}
