# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/cluster-inner.sh: the part of testbed/cluster that runs inside the
# root: writes the configuration of one private cluster instance and starts,
# stops and inspects its daemons. Called by testbed/cluster only.
set -euo pipefail

INST=${ELASTIC_TESTBED_INSTANCE:-main}
I=/var/lib/elastic-testbed/$INST
BUILD=${ELASTIC_BUILD_DIR:-/src/build-testbed}
NNODES=${ELASTIC_TESTBED_NODES:-4}
[[ "$NNODES" =~ ^[1-9][0-9]?$ ]] && [ "$NNODES" -le 64 ] ||
	{ echo "[cluster] error: ELASTIC_TESTBED_NODES=$NNODES is not in 1..64" >&2; exit 1; }
NODES=$(seq -f 'node%g' 1 "$NNODES" | paste -sd' ')
GPUS_PER_NODE=${ELASTIC_TESTBED_GPUS_PER_NODE:-4}
[[ "$GPUS_PER_NODE" =~ ^[1-8]$ ]] ||
	{ echo "[cluster] error: ELASTIC_TESTBED_GPUS_PER_NODE=$GPUS_PER_NODE is not in 1..8" >&2; exit 1; }
# 10 s: the node-loss tests see a dead slurmd quickly. A big job's launch on
# a few cores can keep slurmds from answering that long (bench/big_job.sh
# takes Slurm's default, 300).
SLURMD_TIMEOUT=${ELASTIC_TESTBED_SLURMD_TIMEOUT:-10}
[[ "$SLURMD_TIMEOUT" =~ ^[1-9][0-9]{0,3}$ ]] ||
	{ echo "[cluster] error: ELASTIC_TESTBED_SLURMD_TIMEOUT=$SLURMD_TIMEOUT is not in 1..9999 (seconds)" >&2; exit 1; }
if [ -n "${ELASTIC_TESTBED_PORT_BASE:-}" ]; then
	PB=$ELASTIC_TESTBED_PORT_BASE
else
	# 40 slots of 20 ports from 17000; the default instance gets 17000.
	if [ "$INST" = main ]; then slot=0; else slot=$((($(printf %s "$INST" | cksum | cut -d' ' -f1) % 39) + 1)); fi
	PB=$((17000 + slot * 20))
fi
P_CTLD=$PB P_DBD=$((PB + 1)) P_DB=$((PB + 2)) P_ELASTIC=$((PB + 3)) P_SLURMD0=$((PB + 10))
# More than 10 nodes (a site-sized cluster) do not fit the instance's 20
# ports: their slurmd ports are 64 from 30000 + 100 x the instance's slot.
[ "$NNODES" -le 10 ] || P_SLURMD0=$((30000 + ((PB - 17000) / 20 % 300) * 100))
CLUSTER=el$INST
MUNGE_SOCK=$I/run/munge.sock
# slurmctld, slurmdbd and elasticd run as SlurmUser, not root, as a site
# runs them; Debian's slurm-wlm-basic-plugins creates the user. slurmd stays
# root (SlurmdUser): it starts the jobs of every user.
SLURM_USER=slurm
export SLURM_CONF=$I/etc/slurm.conf
# The runtime of this root (testbed/mkroot; ELASTIC_TESTBED_RUNTIME) picks the
# network. ompi5: the fake nodes share the host's loopback. ompi6 and sid: PRRTE 5
# never advertises a loopback address and Open MPI's TCP transport refuses
# two nodes with one address, so each fake node is its own network + UTS
# namespace with its own address on a private bridge, as on a real cluster.
# The bridge lives in the cluster's own "head" namespace (the daemons,
# elasticd and `cluster exec` run there): nothing reaches the host's network.
RUNTIME=$(cat /etc/elastic-testbed-runtime 2>/dev/null || echo ompi5)
if [ "$RUNTIME" != ompi5 ]; then
	# its own build tree (testbed/check builds it there)
	[ -n "${ELASTIC_BUILD_DIR:-}" ] || BUILD=/src/build-testbed-$RUNTIME
	NET=netns
	SUBNET=10.77.0.0/24 HEAD_ADDR=10.77.0.1 HEAD_NAME=head
else
	NET=loopback
	HEAD_ADDR=127.0.0.1 HEAD_NAME=$(hostname -s)
fi
# A node's address: node K is 10.77.0.(10+K) in netns mode.
_node_addr() { if [ $NET = netns ]; then echo "10.77.0.$((10 + ${1#node}))"; else echo 127.0.0.1; fi; }

say() { printf '[cluster %s %s] %s\n' "$INST" "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	printf '[cluster %s] error: %s\n' "$INST" "$*" >&2
	exit 1
}

# pid from a pid file, only if that process is alive and is the expected program.
# PROG is a substring of the command line, or with a leading ^ its start (a
# namespace holder: until it has exec'ed, its starter's command line names it
# too). No pipe: `grep -q` ending first made tr die of SIGPIPE, and with
# pipefail a live daemon looked dead (a silent `up` failure under set -e).
_live_pid() { # file prog
	local pid cmd
	[ -s "$1" ] || return 1
	pid=$(tr -dc 0-9 <"$1")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	case $2 in
	^*) [[ $cmd == "${2#^}"* ]] || return 1 ;;
	*) [[ $cmd == *"$2"* ]] || return 1 ;;
	esac
	echo "$pid"
}

# The daemons of an instance: name, pid file, program. In netns mode the
# namespace holders come first (started first, stopped last).
_daemons() {
	if [ $NET = netns ]; then
		echo "netns-head $I/run/netns-head.pid ^elastic-netns"
		for n in $NODES; do echo "netns-$n $I/run/netns-$n.pid ^elastic-netns"; done
	fi
	echo "munged $I/run/munged.pid munged"
	echo "mariadbd $I/run/mariadbd.pid mariadbd"
	echo "slurmdbd $I/run/slurmdbd.pid slurmdbd"
	echo "slurmctld $I/run/slurmctld.pid slurmctld"
	for n in $NODES; do echo "slurmd-$n $I/run/slurmd-$n.pid slurmd"; done
}

_log_tails() {
	local f
	for f in "$I"/log/*.log; do
		[ -s "$f" ] || continue
		echo "---- last lines of $f" >&2
		tail -n 15 "$f" >&2
	done
}

# Extra lines from the environment (';'-separated) appended to a config
# file: settings to try without editing this script.
_conf_extra() { # variable file
	local v=${!1:-}
	[ -n "$v" ] || return 0
	printf '# from %s\n' "$1" >>"$2"
	tr ';' '\n' <<<"$v" >>"$2"
}

# Confinement (ELASTIC_TESTBED_CGROUP: v1, the default, or off): every job
# step in its own cgroup, seeing only its own GPUs' device files, as on a
# production GPU cluster. cgroup/v1 because these machines mount cgroups
# hybrid: the v1 controllers (devices and freezer included) under
# /sys/fs/cgroup and an empty cgroup2 at /sys/fs/cgroup/unified that has no
# controllers to give. Slurm's cgroup/v2 needs a unified hierarchy it can
# delegate controllers in (and, without systemd, one slurmd per host owning
# its root). IgnoreSystemd: there is no systemd in the root; several slurmd
# run on one host and each makes its own tree (slurm_NODE) in every
# controller.
CGROUP=${ELASTIC_TESTBED_CGROUP:-v1}
case $CGROUP in v1 | off) ;; *) die "ELASTIC_TESTBED_CGROUP=$CGROUP: v1 or off" ;; esac
_cgroup_slurm_conf() {
	if [ "$CGROUP" = off ]; then
		printf 'ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n'
	else
		printf 'ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup\n'
	fi
}
_cgroup_conf() {
	if [ "$CGROUP" = off ]; then
		echo "CgroupPlugin=disabled"
		return
	fi
	cat <<EOC
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
IgnoreSystemd=yes
ConstrainDevices=yes
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainSwapSpace=no
EOC
}

# The controller's CPU (ELASTIC_TESTBED_NODE_CPU). A site runs slurmctld,
# slurmdbd and elasticd on a host of their own; here they share the host's
# few cores with every node's slurmd and the ranks of every job. shared,
# the default: everything weighs alike, as the tests have always run. own:
# each slurmd of the instance, and so every step and rank it starts, runs
# in one cpu cgroup (v1) of the instance, which weighs as much as one
# process beside it, so that a few hundred busy ranks keep the controller's
# daemons waiting for a CPU no longer than one busy process would, as on a
# controller host of its own (bench/site_soak.sh). It weighs as one process
# against every other process too (other clusters' tests, compilers), so
# the suite keeps the default. Where there is no cpu controller to use,
# `up` says so and the nodes share the cores.
NODE_CPU=${ELASTIC_TESTBED_NODE_CPU:-shared}
case $NODE_CPU in own | shared) ;; *) die "ELASTIC_TESTBED_NODE_CPU=$NODE_CPU: own or shared" ;; esac
NODE_CPU_CG=/sys/fs/cgroup/cpu/elastic-testbed-$INST-nodes
# `up` chooses; a node started again later (node-start) follows the choice
# recorded in $I/run.
_node_cpu_setup() {
	[ "$NODE_CPU" = own ] || return 0
	if [ -w /sys/fs/cgroup/cpu/cgroup.procs ] && mkdir -p "$NODE_CPU_CG" 2>/dev/null &&
		[ -w "$NODE_CPU_CG/cgroup.procs" ]; then
		echo "$NODE_CPU_CG" >"$I/run/node-cpu-cgroup"
		say "nodes: one cpu cgroup ($NODE_CPU_CG), the controller's daemons beside it"
	else
		say "nodes: no cpu cgroup to put them in (/sys/fs/cgroup/cpu): they share the cores with the controller"
	fi
}
# The calling shell joins the nodes' cgroup, if `up` made one (what it
# execs inherits it).
_node_cpu_join() {
	local cg
	cg=$(cat "$I/run/node-cpu-cgroup" 2>/dev/null) && [ -w "$cg/cgroup.procs" ] || return 0
	echo "$BASHPID" >"$cg/cgroup.procs" 2>/dev/null || true
}
# Empty once every process of the instance is gone; a cgroup still in use
# stays for the next `up`.
_node_cpu_remove() {
	[ -d "$NODE_CPU_CG" ] || return 0
	rmdir "$NODE_CPU_CG" 2>/dev/null || true
}

_write_config() {
	local pdir spank js n i
	mkdir -p "$I"/{etc,run,log,state,db,spool,dev,jobs}
	chmod 755 "$I" "$I/jobs"
	chmod 1777 "$I/jobs"
	# munge: a private key, created once per instance.
	mkdir -p "$I/etc/munge"
	[ -s "$I/etc/munge/munge.key" ] || dd if=/dev/urandom of="$I/etc/munge/munge.key" bs=1024 count=1 status=none
	chmod 700 "$I/etc/munge"
	chmod 400 "$I/etc/munge/munge.key"
	# What SlurmUser's daemons write: slurmctld's state and its working
	# directory (its log's), both daemons' logs (their start commands append
	# stderr there first, as root).
	id "$SLURM_USER" >/dev/null 2>&1 || die "no user '$SLURM_USER' in the root (slurm-wlm-basic-plugins creates it)"
	touch "$I/log/slurmctld.log" "$I/log/slurmdbd.log"
	chown "$SLURM_USER:" "$I/state" "$I/log" "$I/log/slurmctld.log" "$I/log/slurmdbd.log"

	# Fake GPUs: character devices with NVIDIA's major number, per node.
	for n in $NODES; do
		mkdir -p "$I/dev/$n" "$I/spool/$n"
		for i in $(seq 0 $((GPUS_PER_NODE - 1))); do
			[ -c "$I/dev/$n/nvidia$i" ] || mknod "$I/dev/$n/nvidia$i" c 195 "$i"
		done
		# those of an earlier run with more GPUs a node: a rank's device
		# check would find them open to it, outside its job's GPUs
		for f in "$I/dev/$n"/nvidia*; do
			[ "${f##*/nvidia}" -lt "$GPUS_PER_NODE" ] 2>/dev/null || rm -f "$f"
		done
	done

	pdir=$(dirname "$(find /usr/lib -name select_cons_tres.so -print -quit)")
	[ -d "$pdir" ] || die "Slurm plugins not found in the root"
	spank= js=
	if [ -f "$BUILD/plugin/spank/.libs/elastic.so" ]; then
		spank="required $BUILD/plugin/spank/.libs/elastic.so conf=$I/etc/elastic.conf"
	fi
	if [ -f "$BUILD/plugin/job_submit/.libs/job_submit_elastic.so" ]; then
		js=elastic
		pdir="$pdir:$BUILD/plugin/job_submit/.libs"
	fi
	if [ -f /src/testbed/conf/elastic.conf ]; then
		sed -e "s|@ELASTIC_PORT@|$P_ELASTIC|g" -e "s|@INSTANCE_DIR@|$I|g" -e "s|@HEAD_ADDR@|$HEAD_ADDR|g" \
			/src/testbed/conf/elastic.conf >"$I/etc/elastic.conf"
	fi
	echo "${spank}" >"$I/etc/plugstack.conf"

	cat >"$I/etc/slurm.conf" <<EOF
# Private test cluster '$INST' written by testbed/cluster; do not edit.
ClusterName=$CLUSTER
# Job ids apart per instance: node snapshots in /dev/shm are named by job id,
# and instances running at once on this host share /dev/shm.
FirstJobId=$(((((PB - 17000) / 20 % 600) + 600) % 600 * 100000 + 1))
SlurmctldHost=$HEAD_NAME($HEAD_ADDR)
SlurmctldPort=$P_CTLD
SlurmUser=$SLURM_USER
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK,cred_expire=10
CommunicationParameters=NoInAddrAny
PluginDir=$pdir
PlugStackConfig=$I/etc/plugstack.conf
${js:+JobSubmitPlugins=$js}
StateSaveLocation=$I/state
SlurmdSpoolDir=$I/spool/%n
SlurmctldPidFile=$I/run/slurmctld.pid
SlurmdPidFile=$I/run/slurmd-%n.pid
SlurmctldLogFile=$I/log/slurmctld.log
SlurmdLogFile=$I/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
$(_cgroup_slurm_conf)
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightAge=0
PriorityWeightJobSize=0
PriorityWeightPartition=0
PriorityWeightQOS=0
PriorityCalcPeriod=1
PriorityDecayHalfLife=1-0
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$P_DBD
AccountingStoragePass=socket=$MUNGE_SOCK
AccountingStorageEnforce=associations,limits,qos
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/none
ReturnToService=1
SlurmdTimeout=$SLURMD_TIMEOUT
SlurmctldTimeout=30
MessageTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=60
TCPTimeout=5
NodeName=DEFAULT CPUs=8 RealMemory=4000 Gres=gpu:$GPUS_PER_NODE State=UNKNOWN
EOF
	i=0
	for n in $NODES; do
		if [ $NET = netns ]; then
			echo "NodeName=$n NodeHostname=$n NodeAddr=$(_node_addr $n) Port=$((P_SLURMD0 + i))" >>"$I/etc/slurm.conf"
		else
			echo "NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((P_SLURMD0 + i))" >>"$I/etc/slurm.conf"
		fi
		i=$((i + 1))
	done
	echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$I/etc/slurm.conf"
	_conf_extra ELASTIC_TESTBED_SLURM_CONF_EXTRA "$I/etc/slurm.conf"

	: >"$I/etc/gres.conf"
	for n in $NODES; do
		echo "NodeName=$n Name=gpu File=$I/dev/$n/nvidia[0-$((GPUS_PER_NODE - 1))]" >>"$I/etc/gres.conf"
	done
	_cgroup_conf >"$I/etc/cgroup.conf"

	cat >"$I/etc/slurmdbd.conf" <<EOF
# slurmdbd of test cluster '$INST' written by testbed/cluster; do not edit.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdPort=$P_DBD
SlurmUser=$SLURM_USER
PidFile=$I/run/slurmdbd.pid
LogFile=$I/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$P_DB
StorageUser=slurm
StoragePass=elastic-testbed
StorageLoc=slurm_acct_$INST
EOF
	_conf_extra ELASTIC_TESTBED_SLURMDBD_CONF_EXTRA "$I/etc/slurmdbd.conf"
	chmod 600 "$I/etc/slurmdbd.conf"
	chown "$SLURM_USER:" "$I/etc/slurmdbd.conf"
}

# The log of a daemon named as in _daemons.
_daemon_log() { echo "$I/log/$1.log"; }

# The line of a daemon's log that says why it stopped, or nothing while it
# has not given up. Slurm's daemons write "fatal: ..." and exit; munged
# "Error: ..." and exits; mariadbd "[ERROR] ..." lines and then "[ERROR]
# Aborting" (its first [ERROR] line is the cause). Logs are new at each up,
# so every line is from this start.
_daemon_fatal() { # name
	local log
	log=$(_daemon_log "$1")
	[ -s "$log" ] || return 0
	case "$1" in
	mariadbd) grep -q '\[ERROR\] Aborting' "$log" && grep -m1 '\[ERROR\]' "$log" ;;
	munged) grep -m1 -E 'Error:' "$log" ;;
	*) grep -m1 -E 'fatal:' "$log" ;;
	esac
	return 0
}

# Fail at once, naming the daemon and quoting its own fatal line, when a
# daemon started so far has given up or died: a broken package must not
# cost the whole start-up timeout in silence.
_check_daemons() {
	local name pf prog line
	while read -r name pf prog; do
		[ -e "$(_daemon_log "$name")" ] || continue # not started yet
		line=$(_daemon_fatal "$name")
		if [ -z "$line" ] && [ -s "$pf" ] && ! _live_pid "$pf" "$prog" >/dev/null; then
			# It may have written its last words since the first look.
			line=$(_daemon_fatal "$name")
			[ -n "$line" ] || line="(exited; last log line: $(tail -n 1 "$(_daemon_log "$name")"))"
		fi
		[ -n "$line" ] || continue
		say "$name died while the cluster was starting; its log says:"
		printf '    %s\n' "$line" >&2
		echo "---- last lines of $(_daemon_log "$name")" >&2
		tail -n 8 "$(_daemon_log "$name")" >&2
		die "cluster did not come up: $name failed at start: $line"
	done < <(_daemons)
}

_wait_for() { # seconds what command...
	local t=$1 what=$2
	shift 2
	local end=$((SECONDS + t))
	until "$@" >/dev/null 2>&1; do
		_check_daemons
		if [ $SECONDS -ge $end ]; then
			say "timed out after ${t}s waiting for $what"
			_log_tails
			die "cluster did not come up: $what (logs in $I/log)"
		fi
		sleep 0.2
	done
}

# A daemon's start command failed: name it with its own fatal line.
_start_failed() { # name
	_check_daemons
	_log_tails
	die "$1 did not start (logs in $I/log)"
}

_start_munge() {
	say "munged (socket $MUNGE_SOCK)"
	munged --socket="$MUNGE_SOCK" --key-file="$I/etc/munge/munge.key" \
		--pid-file="$I/run/munged.pid" --log-file="$I/log/munged.log" \
		--seed-file="$I/run/munged.seed" --force 2>>"$I/log/munged.log" ||
		_start_failed munged
	_wait_for 10 "munge credential round trip" bash -c "munge -S '$MUNGE_SOCK' -n | unmunge -S '$MUNGE_SOCK'"
}

_sql() { mariadb --no-defaults --socket="$I/run/mysql.sock" -u root "$@"; }

# MariaDB 11.6+ turns innodb_snapshot_isolation on, which slurmdbd 26.05
# refuses at start ("not supported by Slurm and will cause slurmdbd to fatal
# when a write conflicts"); older servers lack the option.
_mariadb_snapshot_isolation_off() {
	mariadbd --verbose --help 2>/dev/null | grep -q '^ *--innodb-snapshot-isolation' &&
		echo --innodb-snapshot-isolation=OFF
	return 0
}

_start_db() {
	if [ ! -d "$I/db/mysql" ]; then
		say "MariaDB: creating the database in $I/db"
		mariadb-install-db --no-defaults --datadir="$I/db" --user=root \
			--auth-root-authentication-method=socket --skip-test-db \
			>"$I/log/mariadb-install.log" 2>&1 ||
			{ tail -n 20 "$I/log/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
	fi
	say "mariadbd (127.0.0.1:$P_DB)"
	mariadbd --no-defaults --datadir="$I/db" --user=root --bind-address=127.0.0.1 \
		--port="$P_DB" --socket="$I/run/mysql.sock" --pid-file="$I/run/mariadbd.pid" \
		--log-error="$I/log/mariadbd.log" --skip-name-resolve \
		--innodb-buffer-pool-size=128M --innodb-log-file-size=64M --innodb-lock-wait-timeout=900 \
		--innodb-flush-log-at-trx-commit=0 --skip-log-bin \
		$(_mariadb_snapshot_isolation_off) </dev/null >/dev/null 2>&1 &
	_wait_for 60 "MariaDB to accept connections" _sql -e 'select 1'
	# The accounting database is created here, before slurmdbd starts, not by
	# slurmdbd. Measured 2026-11-23 on Debian 13's point release (libmariadb3
	# 1:11.8.9+ds-0+deb13u1 = Connector/C 3.4.10, slurmdbd 24.11.5-4+deb13u1):
	# a MYSQL handle that is reused after a failed mysql_real_connect()
	# ("1049 Unknown database") rejects every later result set with "5027
	# Number of columns in result (=1) set execeeds maxmimum allowed number of
	# columns (=0)". slurmdbd's first start does exactly that (connect to
	# StorageLoc, create it on ER_BAD_DB_ERROR, reconnect the same handle), so
	# its first query failed and it died in _check_mysql_concat_is_sane. A
	# 30-line client doing the same calls fails the same way; with the
	# database already there its first connect succeeds and every query
	# works. Creating the database (and granting on it) up front is what
	# Slurm's accounting guide allows anyway, keeps Debian's packages as they
	# are and keeps real accounting.
	_sql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_$INST;
		CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'elastic-testbed';
		GRANT ALL ON *.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
}

# Node N's slurmd, in its own UTS namespace named after it: what runs there
# (job steps, Open MPI's daemons) sees the node's name as its host name, as
# on real nodes; Open MPI's runtime tells nodes apart by it. In netns mode
# also in the node's network namespace.
_start_slurmd() { # node
	if [ $NET = netns ]; then
		(_node_cpu_join && exec nsenter --net=/proc/$(_ns_pid "$1")/ns/net \
			--uts=/proc/$(_ns_pid "$1")/ns/uts slurmd -N "$1") 2>>"$I/log/slurmd-$1.log" ||
			_start_failed "slurmd-$1"
	else
		(_node_cpu_join && exec unshare --uts sh -c "hostname $1 && exec slurmd -N $1") \
			2>>"$I/log/slurmd-$1.log" || _start_failed "slurmd-$1"
	fi
}

# node-start NODE: NODE's slurmd again, after it was killed (a node lost and
# back: bench/site_soak.sh); already running: says so.
do_node_start() {
	local n=${1:-}
	[[ " $NODES " == *" $n "* ]] || die "node-start: '$n' is not a node of this cluster ($NNODES nodes)"
	if _live_pid "$I/run/slurmd-$n.pid" "slurmd" >/dev/null; then
		say "node-start: slurmd of $n runs"
		return 0
	fi
	_start_slurmd "$n"
	say "node-start: slurmd of $n started"
}

_start_slurmdbd() {
	say "slurmdbd (port $P_DBD)"
	# slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF.
	slurmdbd 2>>"$I/log/slurmdbd.log" || _start_failed slurmdbd
	_wait_for 60 "slurmdbd to answer" sacctmgr -n show cluster
}

_accounts() {
	say "accounts: acct_a (alice), acct_b (bob), root; QOS elastic"
	{
		sacctmgr -i add cluster "$CLUSTER"
		sacctmgr -i add qos elastic
		sacctmgr -i add account acct_a,acct_b Cluster="$CLUSTER" Fairshare=1
		sacctmgr -i add user alice Account=acct_a DefaultAccount=acct_a
		sacctmgr -i add user bob Account=acct_b DefaultAccount=acct_b
		sacctmgr -i add user root Account=root DefaultAccount=root AdminLevel=Admin
		sacctmgr -i modify user alice,bob,root set qos+=elastic
	} >"$I/log/sacctmgr.log" 2>&1 || { cat "$I/log/sacctmgr.log" >&2; die "sacctmgr setup failed"; }
}

_start_slurm() {
	say "slurmctld (port $P_CTLD)"
	slurmctld -i 2>>"$I/log/slurmctld.log" || _start_failed slurmctld
	_wait_for 30 "slurmctld to answer" scontrol ping
	_node_cpu_setup
	for n in $NODES; do
		_start_slurmd "$n"
	done
	say "slurmd x$NNODES started; waiting for $NNODES idle nodes"
	_wait_for $((60 + NNODES)) "$NNODES idle nodes" bash -c "[ \"\$(sinfo -h -N -t idle -o %N | sort -u | wc -l)\" = $NNODES ]"
}

_all_up() {
	local name pf prog
	while read -r name pf prog; do
		_live_pid "$pf" "$prog" >/dev/null || return 1
	done < <(_daemons)
	scontrol ping >/dev/null 2>&1
}

# netns mode: the pid of the process holding a namespace (head, nodeN).
_ns_pid() { _live_pid "$I/run/netns-$1.pid" "^elastic-netns"; }

# Start a namespace holder: a process alone in a new network namespace (and
# UTS namespace named NAME) that keeps it alive until `down` kills it.
_ns_start() { # name
	mkdir -p "$I/run"
	setsid unshare --net --uts bash -c 'hostname "$1" && exec -a "elastic-netns $2 $1" sleep infinity' \
		_ "$1" "$INST" </dev/null >/dev/null 2>&1 &
	echo $! >"$I/run/netns-$1.pid"
	_wait_for 5 "the $1 namespace" _ns_pid "$1"
}

# In a namespace held by NAME's holder: run a command.
_in_ns() { # name command...
	local pid
	pid=$(_ns_pid "$1") || die "no $1 namespace (cluster not up)"
	shift
	nsenter --net=/proc/$pid/ns/net --uts=/proc/$pid/ns/uts -- "$@"
}

# The private network of netns mode: the head namespace with the bridge
# (HEAD_ADDR) and, per node, a namespace whose eth0 is a veth into the
# bridge; loopback up everywhere. Must run outside the head namespace.
_net_up() {
	local n hp np
	say "network: bridge $SUBNET in a head namespace ($HEAD_NAME $HEAD_ADDR), one namespace per node"
	_ns_start head
	hp=$(_ns_pid head)
	_in_ns head sh -ec "ip link set lo up; ip link add br0 type bridge; ip addr add $HEAD_ADDR/24 dev br0; ip link set br0 up"
	for n in $NODES; do
		_ns_start "$n"
		np=$(_ns_pid "$n")
		_in_ns head ip link add "v$n" type veth peer name eth0 netns "$np"
		_in_ns head ip link set "v$n" master br0 up
		_in_ns "$n" sh -ec "ip link set lo up; ip addr add $(_node_addr "$n")/24 dev eth0; ip link set eth0 up"
	done
	# reachable: a connection to a closed port is refused at once (no ping
	# in the root)
	case $(_in_ns head timeout 3 bash -c "exec 3<>/dev/tcp/$(_node_addr node1)/9" 2>&1) in
	*refused*) ;;
	*) die "network: the head namespace cannot reach node1 at $(_node_addr node1)" ;;
	esac
}

# netns mode: re-run this script inside the head namespace when not there yet.
_enter_head() { # action args...
	[ $NET = netns ] || return 0
	local hp
	hp=$(_ns_pid head) || return 0
	[ "$(readlink /proc/self/ns/net)" = "$(readlink "/proc/$hp/ns/net")" ] && return 0
	exec nsenter --net=/proc/$hp/ns/net --uts=/proc/$hp/ns/uts -- bash "$0" "$@"
}

do_up() {
	local t0
	t0=$(date +%s)
	# netns mode runs this twice: here, then (after _net_up) in the head
	# namespace with _TB_NET_READY set, from the configuration on.
	if [ -z "${_TB_NET_READY:-}" ]; then
		if [ -f "$SLURM_CONF" ] && _all_up; then
			say "already up (SLURM_CONF=$SLURM_CONF)"
			return 0
		fi
		# Something is left from a crash or a half start: clear it first.
		do_down quiet
		# Another instance whose name hashes to the same ports and that runs.
		local other
		for other in /var/lib/elastic-testbed/*/etc/slurm.conf; do
			[ "$other" = "$SLURM_CONF" ] || [ ! -f "$other" ] && continue
			grep -qx "SlurmctldPort=$P_CTLD" "$other" || continue
			local od=${other%/etc/slurm.conf}
			if _live_pid "$od/run/slurmctld.pid" slurmctld >/dev/null; then
				die "instance '${od##*/}' runs on ports $PB.. too: stop it, or set ELASTIC_TESTBED_PORT_BASE (e.g. $((PB + 1000)))"
			fi
		done
		rm -rf "$I/state" "$I/spool" "$I/run" "$I/log"
		if [ $NET = netns ]; then
			_net_up
			export _TB_NET_READY=1 _TB_T0=$t0
			_enter_head up
		fi
	fi
	t0=${_TB_T0:-$t0}
	_write_config
	_start_munge
	_start_db
	_start_slurmdbd
	_accounts
	_start_slurm
	say "up in $(($(date +%s) - t0)) s ($NET network, runtime $RUNTIME): $(sinfo -h -o '%D nodes %T, partition %P' | paste -sd';' -)"
	say "use: testbed/cluster --instance $INST exec -- sinfo   (SLURM_CONF=$SLURM_CONF)"
}

# Kill processes whose environment says they belong to this cluster (job
# tasks survive a killed slurmd) and the given pids.
# (grep reads to the end: with -q, tr could die of SIGPIPE and, under
# pipefail, a leftover be missed)
_kill_leftovers() {
	local p pids=""
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = $$ ] && continue
		if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -x "SLURM_CONF=$SLURM_CONF" >/dev/null; then
			pids="$pids ${p#/proc/}"
		fi
	done
	[ -z "$pids" ] && return 0
	# Our own ancestors (exec from inside a job) are spared.
	local self=$$ anc=""
	while [ "$self" -gt 1 ]; do
		anc="$anc $self"
		self=$(awk '{print $4}' "/proc/$self/stat" 2>/dev/null || echo 1)
	done
	for p in $pids; do
		case " $anc " in *" $p "*) continue ;; esac
		kill -9 "$p" 2>/dev/null || true
	done
}

# libelastic's node snapshots of this instance's jobs (job ids from its
# FirstJobId on) that no epilog removed: jobs killed with the cluster.
_remove_snapshots() {
	local first ids ctl=$BUILD/plugin/elasticd/elastic-ctl
	first=$(sed -n 's/^FirstJobId=//p' "$SLURM_CONF" 2>/dev/null || true)
	# elastic-ctl knows the file names (common/contract.h); without a build
	# no job of this tree wrote any
	[ -n "$first" ] && [ -x "$ctl" ] || return 0
	ids=$("$ctl" snapshots 2>/dev/null |
		awk -v lo="$first" -v hi=$((first + 100000)) 'NR > 1 && $1 >= lo && $1 < hi { print $1 }' | sort -u)
	[ -z "$ids" ] || "$ctl" snapshots --remove $ids >/dev/null || true
	return 0
}

do_down() {
	local quiet=${1:-} name pf prog pid stopped=0
	if [ -f "$SLURM_CONF" ] && scontrol ping >/dev/null 2>&1; then
		scancel --quiet --full --user=root 2>/dev/null || true
		for u in alice bob; do scancel --quiet --full --user=$u 2>/dev/null || true; done
	fi
	# Stop in reverse order of start, a tier at a time (the nodes' slurmd
	# together, then slurmctld, slurmdbd, the database, munged, the
	# namespaces), each daemon given 5 s after SIGTERM.
	local tier pids left
	for tier in 'slurmd-*' slurmctld slurmdbd mariadbd munged 'netns-node*' netns-head; do
		pids=""
		while read -r name pf prog; do
			# shellcheck disable=SC2053 # a glob on purpose
			[[ $name == $tier ]] || continue
			if pid=$(_live_pid "$pf" "$prog"); then
				kill -TERM "$pid" 2>/dev/null || true
				pids="$pids $pid"
				stopped=$((stopped + 1))
			fi
			rm -f "$pf"
		done < <(_daemons)
		for _ in $(seq 50); do
			left=""
			for pid in $pids; do [ ! -d "/proc/$pid" ] || left="$left $pid"; done
			pids=$left
			[ -n "$pids" ] || break
			sleep 0.1
		done
		for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
	done
	[ -f "$SLURM_CONF" ] && _kill_leftovers
	_remove_snapshots
	_node_cpu_remove
	[ -n "$quiet" ] || say "down: stopped $stopped daemons"
}

do_status() {
	local name pf prog pid bad=0
	[ -f "$SLURM_CONF" ] || { say "not configured ($I has no slurm.conf)"; return 1; }
	while read -r name pf prog; do
		if pid=$(_live_pid "$pf" "$prog"); then
			printf '  %-14s running (pid %s)\n' "$name" "$pid"
		else
			printf '  %-14s NOT running\n' "$name"
			bad=1
		fi
	done < <(_daemons)
	echo "SLURM_CONF=$SLURM_CONF"
	sinfo -N -o '%N %T %G' 2>&1 || bad=1
	return $bad
}

# Open MPI on the testbed, the one place that names these settings (tests,
# benches and examples source them: `env --ompi`, tests/lib.sh t_ompi_env):
# the fake nodes share one host and its loopback, so the ranks' TCP uses lo
# only. PRRTE 3 is not told to: its daemons refuse a loopback-only
# out-of-band channel and mpirun advertises the host's address anyway, and an
# OMPI_MCA_oob_tcp_if_include=lo reached only the daemon that a growth in
# place adds to a running mpirun (PMIX_ADD_HOST), which then could not call
# mpirun back (exit 213, the whole job lost). coll/han crashes under ULFM in Open MPI
# 5.0.7 (TESTBED-NOTES); mpirun runs as root inside the root. The fake nodes
# also share the host's few cores, so a rank waiting in MPI yields its core
# (mpi_yield_when_idle) rather than spin: 8 spinning ranks on 2 cores made a
# step of the C trainer 0.18 s instead of 0.06 s and every re-form slower
# (bench/latency.sh: swap 3.55 s -> 2.11 s). A real node gives each rank a core.
#
# ompi6 (netns network): TCP and PRRTE's daemons use the bridge's subnet
# (PRRTE 5 never uses loopback between daemons); coll/han stays off: after
# a failure it returned a wrong sum with MPI_SUCCESS (TESTBED-NOTES). btl/ofi
# is left out: these nodes have no OFI fabric, and Open MPI 6 closing the
# unused component sleeps 1 s in every rank's MPI_Init, so each launch and
# re-form took a second longer (doc/admin-guide.md, "Open MPI 6").
_ompi_env() {
	if [ $NET = netns ]; then
		echo "export OMPI_MCA_btl_tcp_if_include=$SUBNET PRTE_MCA_prte_if_include=$SUBNET OMPI_MCA_coll=^han OMPI_MCA_btl=^ofi"
	else
		echo "export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_coll=^han"
	fi
	echo "export OMPI_MCA_mpi_yield_when_idle=1"
	echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
}

# env [--ompi]: the cluster's environment; --ompi: Open MPI's part only
# (needs no cluster).
do_env() {
	if [ "${1:-}" = --ompi ]; then
		_ompi_env
		return
	fi
	[ $# = 0 ] || die "env: unknown argument '$1' (env [--ompi])"
	echo "export SLURM_CONF=$SLURM_CONF"
	echo "export ELASTIC_MUNGE_SOCKET=$MUNGE_SOCK"
	echo "export ELASTIC_TESTBED_DIR=$I"
	echo "export ELASTIC_TESTBED_INSTANCE=$INST"
	echo "export ELASTIC_TESTBED_ELASTICD_PORT=$P_ELASTIC"
	# where a controller of this cluster listens so that jobs on every node
	# reach it (the head namespace's bridge address in netns mode)
	echo "export ELASTIC_TESTBED_HEAD_ADDR=$HEAD_ADDR"
	echo "export ELASTIC_TESTBED_RUNTIME=$RUNTIME"
	# With device confinement on, every rank elastic-run starts checks that
	# it opens its own GPU's device file and no other (elastic-run(1)).
	if grep -qx 'ConstrainDevices=yes' "$I/etc/cgroup.conf" 2>/dev/null; then
		echo "export ELASTIC_RUN_GPU_DEVICES=$I/dev/%h/nvidia%g"
	fi
	_ompi_env
}

do_logs() {
	echo "logs of cluster '$INST': $I/log inside the root (on the host: ${ELASTIC_TESTBED_HOSTROOT:-ROOT}$I/log)"
	_log_tails 2>&1
}

do_exec() {
	local user=""
	while [ $# -gt 0 ]; do
		case "$1" in
		--user) user=$2; shift 2 ;;
		--user=*) user=${1#*=}; shift ;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	[ $# -gt 0 ] || die "exec: no command given"
	eval "$(do_env)"
	if [ -n "$user" ]; then
		id "$user" >/dev/null 2>&1 || die "exec: no user '$user' in the testbed root"
		exec runuser -u "$user" -- env SLURM_CONF="$SLURM_CONF" ELASTIC_MUNGE_SOCKET="$MUNGE_SOCK" \
			ELASTIC_TESTBED_DIR="$I" HOME="$(getent passwd "$user" | cut -d: -f6)" "$@"
	fi
	exec "$@"
}

action=$1
shift
# netns mode: everything but `env --ompi` runs in the head namespace
# (where slurmctld and elasticd listen); `up` creates it first.
[ "$action $*" = "env --ompi" ] || _enter_head "$action" "$@"
case "$action" in
up) do_up ;;
down) do_down ;;
restart) do_down && do_up ;;
status) do_status ;;
env) do_env "$@" ;;
logs) do_logs ;;
exec) do_exec "$@" ;;
node-start) do_node_start "$@" ;;
*) die "unknown action '$action'" ;;
esac
