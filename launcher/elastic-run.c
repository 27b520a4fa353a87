/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/elastic-run.c: the in-job launcher. Runs `mpirun --with-ft ulfm`
 * over every GPU the elastic job holds (its own allocation and its grant
 * jobs, daemons started with `srun --jobid=J --overlap`), one rank per GPU,
 * and re-forms the job (relaunch, resume from the last committed step) when
 * mpirun ends because a daemon or node was lost or the GPU set changed. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctlclient.h"
#include "devcheck.h"
#include "gpuset.h"
#include "orders.h"
#include "prewarm.h"
#include "report.h"
#include "runstate.h"

#define EXIT_REFORM  ELASTIC_EXIT_REFORM /* common/contract.h */
#define EXIT_USAGE   ELASTIC_EXIT_USAGE
#define EXIT_NOALLOC ELASTIC_EXIT_NOALLOC

static int verbose;
static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t usr1_pending; /* elastic-run got SIGUSR1: re-form */
static pid_t child = -1;
/* The rank wrapper's child is its own fork (a cold rank, or srun into a
 * grant's step), so in the wrapper's process group, which the daemon
 * signals whole (PRRTE's odls kills -pgid): such a child has every signal
 * of the daemon already. A warm rank, forked by the node's zygote, is not. */
static volatile sig_atomic_t child_in_group;

/* One run of the job: what the user asked, the job, the files of the run,
 * and the launch under way. main() drives it through the states below. */
struct run {
	/* options */
	const char *mpirun, *extra[32];
	int nextra, max_relaunch, max_stuck, dry;
	int grant_wait; /* s a launch waits for grants the controller is starting */
	char **prog;	/* the program and its arguments, NULL-terminated */
	/* the job */
	unsigned long jobid;
	struct elastic_request req; /* MIN, MAX, sizes (ELASTIC_* variables) */
	int have_ctl;		    /* ELASTIC_CONTROLLER given: ctl and orders in use */
	struct elastic_ctlclient ctl;
	struct elastic_orders orders;
	/* the run's files (in dir) and the ranks' reports */
	char self[PATH_MAX], dir[PATH_MAX], hostfile[PATH_MAX + 16];
	char agent[PATH_MAX + 32], progress[PATH_MAX + 32], leave[PATH_MAX + 32];
	char join[PATH_MAX + 32], mapfile[PATH_MAX + 32];
	struct elastic_report rep;
	/* launches: the GPU set launched on, and the one seen now */
	struct elastic_gpuset set, now;
	int launches, stuck, status, stop_sent, mstatus;
	int unplanned; /* relaunches no controller order asked for */
	int stop_due;  /* a re-form is due; SIGUSR1 waits until the ranks can take it */
	struct timespec t0_wall; /* when the current mpirun was started */
	int now_fresh;		 /* `now` was looked up after the last mpirun ended */
	/* the MPI runtime survives a lost daemon (Open MPI >= 6: PRRTE 5): ranks
	 * lost with a node or a cancelled grant are healed in place by the
	 * survivors, with no relaunch */
	int in_place;
	/* the MPI runtime starts ranks on a new node inside a running mpirun
	 * and merges them under fault tolerance (Open MPI 5.0.x): a grant on a
	 * node new to the launch is taken in place (libelastic's grow.c) */
	int grow_in_place;
	/* a growth in place under way: ranks to start, the world size it
	 * makes, when it was asked; the grown set */
	int joining, join_world;
	double t_join;
	struct elastic_gpuset grown;
	int world; /* ranks of the launch, less those lost and healed in place */
	/* a planned shrink in place under way: ranks asked to leave (their GPUs
	 * named in the leave file), the world size before, the step at which
	 * they left (0 until the survivors' record shows it), when it was asked */
	int leaving, leave_world;
	unsigned long long leave_step;
	double t_leave;
	/* releases seen that leave the set above the controller's lower
	 * target: since when the rest of them is awaited (0: not waiting) */
	double t_rel_wait;
	struct elastic_gpuset after; /* the set without the leaving ranks' GPUs */
	/* ranks lost and healed in place while Slurm still lists all the set's
	 * GPUs: since when (0: the set agrees with the world), last look-up */
	double t_heal, t_heal_look;
	double t0, t_end;
	struct elastic_report_summary sum;
};

static double _now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void _say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void _say(const char *fmt, ...)
{
	va_list ap;
	struct timespec now;
	struct tm tm;
	char ts[16], msg[1024];
	clock_gettime(CLOCK_REALTIME, &now);
	strftime(ts, sizeof(ts), "%H:%M:%S", localtime_r(&now.tv_sec, &tm));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one fprintf, one write(2): the ranks' output shares this stream,
	 * and a line written in pieces could take a rank's line in between */
	fprintf(stderr, "elastic-run %s.%03ld: %s\n", ts, now.tv_nsec / 1000000, msg);
}

static void _usage(FILE *f)
{
	fprintf(f,
		"usage: elastic-run [OPTIONS] [--] PROGRAM [ARGS...]\n"
		"Run PROGRAM as an elastic MPI job over every GPU this Slurm job holds\n"
		"(its allocation and its grant jobs named elastic:<jobid>), one rank per\n"
		"GPU, and re-form it from the last committed step when it loses a node\n"
		"or its GPUs change. Use it inside an sbatch script or salloc.\n"
		"\n"
		"  -v, --verbose          say more (repeat for the mpirun command line)\n"
		"  -n, --max-relaunch N   give up after N relaunches that no controller order\n"
		"                         asked for (failures, lost nodes; default 20)\n"
		"      --max-stuck N      give up after N failures in a row on an unchanged\n"
		"                         GPU set that made no progress (default 3)\n"
		"      --grant-wait S     before the first launch (and after a release the\n"
		"                         controller re-shapes), wait up to S seconds (default\n"
		"                         3; 0: do not) for the grants it is starting for\n"
		"                         this job, so that it launches on its share at once\n"
		"      --mpirun PATH      the mpirun to use (default: mpirun)\n"
		"      --runtime          say which MPI runtime mpirun is and whether a lost\n"
		"                         node heals in place with it, then exit\n"
		"      --mpirun-arg ARG   extra mpirun argument (repeatable)\n"
		"      --dry-run          print the GPU set and the mpirun command only\n"
		"  -V, --version          print the version\n"
		"  -h, --help             this text\n"
		"\n"
		"Environment: SLURM_JOB_ID (required), ELASTIC_MIN_GPUS, ELASTIC_MAX_GPUS,\n"
		"ELASTIC_SIZES (set by the --elastic-* options of sbatch).\n"
		"Exit status: the program's, 2 for usage errors, 3 outside an allocation.\n");
}

/* Run argv, capture its stdout (at most 1 MiB). Returns a malloc'd string or
 * NULL; *status gets the exit status (-1: could not run). */
static char *_capture(char *const argv[], int *status)
{
	int fd[2];
	pid_t pid;
	char *buf = NULL;
	size_t len = 0, cap = 0;

	*status = -1;
	if (pipe(fd) < 0)
		return NULL;
	if ((pid = fork()) < 0) {
		close(fd[0]);
		close(fd[1]);
		return NULL;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(fd[1], 1);
		if (null >= 0 && !verbose)
			dup2(null, 2);
		close(fd[0]);
		close(fd[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	for (;;) {
		if (cap - len < 4096) {
			char *p = realloc(buf, cap + 65536);
			if (!p)
				break;
			buf = p;
			cap += 65536;
		}
		ssize_t n = read(fd[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || len + n > (1u << 20))
			break;
		len += n;
	}
	close(fd[0]);
	int ws;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	if (buf)
		buf[len] = '\0';
	return buf;
}

static char *_expand(const char *hostlist, void *arg)
{
	char *argv[] = {"scontrol", "show", "hostnames", (char *)hostlist, NULL};
	int st;
	char *out = _capture(argv, &st);
	if (st != 0) {
		free(out);
		return NULL;
	}
	return out;
}

static int _add_job(struct elastic_gpuset *set, unsigned long job, elastic_error_t *err)
{
	char id[32];
	snprintf(id, sizeof(id), "%lu", job);
	char *argv[] = {"scontrol", "show", "job", "-d", id, NULL};
	int st;
	char *out = _capture(argv, &st);
	if (!out || st != 0) {
		free(out);
		return elastic__errorf(err, "scontrol show job -d %lu failed (status %d)",
				       job, st);
	}
	int rc = elastic__gpuset_add_job(set, job, out, _expand, NULL, err);
	free(out);
	return rc;
}

/* The GPUs of the elastic job now: its own allocation, then its running
 * grant jobs in job id order. */
static int _discover(const struct run *r, struct elastic_gpuset *set,
		     elastic_error_t *err)
{
	unsigned long jobid = r->jobid;
	char name[64], user[64];
	int st;

	memset(set, 0, sizeof(*set));
	if (_add_job(set, jobid, err) < 0)
		return -1;
	snprintf(name, sizeof(name), "elastic:%lu", jobid);
	snprintf(user, sizeof(user), "%u", (unsigned)getuid());
	char *argv[] = {"squeue", "-h",	     "-u", user, "-n",	     name,
			"-t",	  "RUNNING", "-o", "%i", "--sort=i", NULL};
	char *out = _capture(argv, &st);
	if (!out || st != 0) {
		free(out);
		return elastic__errorf(
			err, "squeue for the grant jobs failed (status %d)", st);
	}
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		elastic_error_t e;
		unsigned long g = strtoul(line, NULL, 10);
		/* Grants ordered released stay out, even while still running. */
		if (r->have_ctl && elastic__orders_released(&r->orders, (uint32_t)g))
			continue;
		/* A grant that ended between squeue and scontrol is just gone. */
		if (g && _add_job(set, g, &e) < 0 && verbose)
			_say("grant job %lu skipped: %s", g, e.text);
	}
	free(out);
	return 0;
}

/* ELASTIC_RUN_MAP: "host=job:idx,idx;host=job:idx" for the agent and ranks;
 * a GPU of another job than the host's (whose step hosts the daemon) is
 * "idx@job": its rank runs in that job's step (_rank_in_step). */
static char *_map_env(const struct elastic_gpuset *set)
{
	size_t cap = 64 + set->nhosts * (64 + 24 + ELASTIC_GPUSET_MAX_GPUS * 32),
	       used = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (int i = 0; i < set->nhosts; i++) {
		const struct elastic_host *h = &set->host[i];
		used += snprintf(s + used, cap - used, "%s%s=%lu:", i ? ";" : "", h->name,
				 h->job);
		for (int g = 0; g < h->ngpus; g++) {
			used += snprintf(s + used, cap - used, "%s%d", g ? "," : "",
					 h->gpu[g]);
			if (h->gpu_job[g] && h->gpu_job[g] != h->job)
				used += snprintf(s + used, cap - used, "@%lu",
						 h->gpu_job[g]);
		}
	}
	return s;
}

/* From ELASTIC_RUN_MAP, host's job and GPU list. */
static int _map_find(const char *map, const char *host, unsigned long *job, char *gpus,
		     size_t len)
{
	size_t hl = strlen(host);
	for (const char *p = map; p && *p;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n > hl && strncmp(p, host, hl) == 0 && p[hl] == '=') {
			char *colon;
			*job = strtoul(p + hl + 1, &colon, 10);
			if (*colon != ':')
				return -1;
			size_t gl = n - (size_t)(colon + 1 - p);
			if (gl >= len)
				return -1;
			memcpy(gpus, colon + 1, gl);
			gpus[gl] = '\0';
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

/* Was a file last written (st) after the current mpirun was started? */
static int _since_launch(const struct run *r, const struct stat *st)
{
	return st->st_mtim.tv_sec > r->t0_wall.tv_sec ||
	       (st->st_mtim.tv_sec == r->t0_wall.tv_sec &&
		st->st_mtim.tv_nsec > r->t0_wall.tv_nsec);
}

/* Rank 0's progress record "STEP SAMPLES TIME SIZE" (libelastic rewrites it
 * in the file named by ELASTIC_RUN_PROGRESS at most once a second, at once
 * when the world size changed, and at every commit for a second after a
 * planned shrink in place), if written by the current launch:
 * 0, or -1 (none yet, or an older launch's). *size is 0 in a record of a
 * libelastic without the field. */
static int _progress_read(const struct run *r, unsigned long long *step,
			  unsigned long long *seen, double *t, int *size)
{
	char buf[96];
	struct stat st;
	int fd;
	ssize_t n;

	if ((fd = open(r->progress, O_RDONLY | O_CLOEXEC)) < 0)
		return -1; /* no record yet */
	if (fstat(fd, &st) < 0 || !_since_launch(r, &st)) {
		close(fd);
		return -1;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	*size = 0;
	return sscanf(buf, "%llu %llu %lf %d", step, seen, t, size) >= 3 ? 0 : -1;
}

/* The job's progress: when the committed step moved, tell elasticd the step
 * and the samples/s since the last record (elastic-ctl status). Read at
 * most once a second. */
static void _progress(struct run *r)
{
	static double t_read, t_last;
	static unsigned long long step_last = ~0ULL, seen_last;
	static double rate;
	unsigned long long step, seen;
	double t;
	int size;

	if (_now() - t_read < 1.0)
		return;
	t_read = _now();
	if (_progress_read(r, &step, &seen, &t, &size) < 0 || step == step_last)
		return;
	/* the rate between two records, by the writer's clock */
	if (step_last != ~0ULL && seen >= seen_last && t > t_last)
		rate = (double)(seen - seen_last) / (t - t_last);
	step_last = step, seen_last = seen, t_last = t;
	elastic__orders_status(&r->ctl, step, rate, _say);
}

/* PRRTE launch agent: "elastic-run --agent HOST CMD..." starts the daemon on
 * HOST inside the Slurm job that holds GPUs there. */
static int _agent(int argc, char **argv)
{
	const char *map = getenv("ELASTIC_RUN_MAP");
	unsigned long job;
	char gpus[512], jobopt[48], *cmd;
	size_t len = 1;

	if (argc < 2 || !map) {
		fprintf(stderr,
			"elastic-run --agent: needs HOST CMD and ELASTIC_RUN_MAP (internal mode, used by mpirun)\n");
		return EXIT_USAGE;
	}
	/* a node added to the running mpirun (growth in place) is in the
	 * map elastic-run wrote then, not in the one mpirun started with */
	char fmap[8192] = "";
	const char *mf = getenv("ELASTIC_RUN_MAP_FILE");
	FILE *f;
	int found = _map_find(map, argv[0], &job, gpus, sizeof(gpus)) == 0;
	if (!found && mf && (f = fopen(mf, "r"))) {
		if (!fgets(fmap, sizeof(fmap), f))
			fmap[0] = '\0';
		fclose(f);
		fmap[strcspn(fmap, "\n")] = '\0';
		found = _map_find(fmap, argv[0], &job, gpus, sizeof(gpus)) == 0;
	}
	if (!found) {
		fprintf(stderr,
			"elastic-run --agent: host %s is not in this job's GPU set\n",
			argv[0]);
		return 1;
	}
	for (int i = 1; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (!(cmd = malloc(len)))
		return 1;
	cmd[0] = '\0';
	for (int i = 1; i < argc; i++) {
		strcat(cmd, argv[i]);
		if (i + 1 < argc)
			strcat(cmd, " ");
	}
	/* PRRTE 5 starts a remote prted with --daemonize: it would leave the
	 * srun step at once, out of Slurm's reach (a scancelled grant would
	 * not stop it, nor its ranks). In the foreground it is the step: the
	 * step's end ends it, and PRRTE sees the daemon lost. */
	for (char *d = cmd; (d = strstr(d, " --daemonize"));) {
		if (d[12] == ' ' || d[12] == '\0')
			memmove(d, d + 12, strlen(d + 12) + 1);
		else
			d += 12;
	}
	snprintf(jobopt, sizeof(jobopt), "--jobid=%lu", job);
	char *sargv[] = {
		"srun", jobopt,	 "--overlap", "-N1", "-n1", "--kill-on-bad-exit=0",
		"-w",	argv[0], "/bin/sh",   "-c",  cmd,   NULL};
	execvp("srun", sargv);
	fprintf(stderr, "elastic-run --agent: cannot run srun: %s\n", strerror(errno));
	return 127;
}

static void _on_signal(int sig);
static void _on_parent_death(int sig);

/* The GPUs of the Slurm step this process runs in on this node: a job
 * step's SLURM_STEP_GPUS, or in the batch step (where mpirun and its local
 * ranks run) the job's SLURM_JOB_GPUS. NULL outside any step. */
static const char *_step_gpus(void)
{
	const char *s = getenv("SLURM_STEP_GPUS");
	return s ? s : getenv("SLURM_JOB_GPUS");
}

/* CUDA's number for GPU idx (Slurm's index on the node). With device
 * confinement a step sees only its own GPUs, numbered from 0: Slurm gives
 * a step SLURM_STEP_GPUS=2,3 and CUDA_VISIBLE_DEVICES=0,1, so GPU 3 is
 * CUDA's 1. Without confinement the two lists are equal. Outside any step,
 * or for a GPU the step does not hold (which the device check refuses),
 * idx itself. */
static int _cuda_ordinal(int idx)
{
	const char *sg = _step_gpus(), *cv = getenv("CUDA_VISIBLE_DEVICES");
	int step[ELASTIC_GPUSET_MAX_GPUS], cuda[ELASTIC_GPUSET_MAX_GPUS], n;

	if (!sg || !cv ||
	    (n = elastic__parse_idx(sg, step, ELASTIC_GPUSET_MAX_GPUS)) <= 0 ||
	    elastic__parse_idx(cv, cuda, ELASTIC_GPUSET_MAX_GPUS) != n)
		return idx;
	for (int i = 0; i < n; i++)
		if (step[i] == idx)
			return cuda[i];
	return idx;
}

/* The rank's GPU: by its local rank among the GPUs of its host in
 * ELASTIC_RUN_MAP, as CUDA_VISIBLE_DEVICES and ELASTIC_GPU. */
static void _rank_gpu(void)
{
	const char *map = getenv("ELASTIC_RUN_MAP");
	const char *host = getenv("SLURMD_NODENAME");
	const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	char gpus[512], hn[256];
	unsigned long job;

	if (!host) {
		gethostname(hn, sizeof(hn));
		host = hn;
	}
	if (map && lr && _map_find(map, host, &job, gpus, sizeof(gpus)) == 0 && gpus[0] &&
	    strcmp(gpus, "-1") != 0) {
		int idx[ELASTIC_GPUSET_MAX_GPUS], l = atoi(lr);
		unsigned long owner[ELASTIC_GPUSET_MAX_GPUS];
		int n = elastic__parse_idx_owner(gpus, job, idx, owner,
						 ELASTIC_GPUSET_MAX_GPUS);
		if (n > 0) {
			char v[16], c[16], o[24];
			snprintf(v, sizeof(v), "%d", idx[l % n]);
			snprintf(c, sizeof(c), "%d", _cuda_ordinal(idx[l % n]));
			snprintf(o, sizeof(o), "%lu", owner[l % n]);
			setenv("CUDA_VISIBLE_DEVICES", c, 1);
			setenv("ELASTIC_GPU", v, 1);
			setenv("ELASTIC_GPU_JOB", o, 1);
		}
	}
}

/* With ELASTIC_RUN_GPU_DEVICES (the pattern of a node's GPU device files,
 * devcheck.h), the rank must open its own GPU's file and no other: a rank
 * outside the job step that holds its GPU, or a step without device
 * confinement, would share a GPU with another job unseen. 0, or -1 after
 * saying why (the rank does not start). */
static int _rank_devcheck(void)
{
	const char *pattern = getenv("ELASTIC_RUN_GPU_DEVICES");
	const char *gpu = getenv("ELASTIC_GPU"), *host = getenv("SLURMD_NODENAME");
	elastic_error_t e;
	char hn[256] = "";

	if (!pattern || !*pattern || !gpu)
		return 0;
	if (!host) {
		gethostname(hn, sizeof(hn) - 1);
		host = hn;
	}
	if (elastic__devcheck(pattern, host, atoi(gpu), _step_gpus(), &e) == 0)
		return 0;
	fprintf(stderr, "elastic-run --rank: %s: device check failed: %s\n", host,
		e.text);
	return -1;
}

/* Signals for the program, and the wrapper's end with its launch. -1 to go
 * on, or the exit status when the launch is already over. */
static int _rank_signals(void)
{
	struct sigaction sa = {.sa_handler = _on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGCONT, &sa, NULL);
	/* The wrapper ends with the daemon (or mpirun) that started it: once
	 * that launch is over, its ranks must not run on beside the next one
	 * (Open MPI's mpirun can end on a lost daemon while its local ranks
	 * still run). SIGHUP: the program gets SIGTERM, then SIGKILL after 5 s. */
	struct sigaction hup = {.sa_handler = _on_parent_death};
	sigaction(SIGHUP, &hup, NULL);
	sigaction(SIGALRM, &hup, NULL);
	pid_t daemon = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGHUP) < 0)
		fprintf(stderr,
			"elastic-run --rank: cannot follow the daemon (pid %ld): %s: this rank may outlive its launch\n",
			(long)daemon, strerror(errno));
	else if (getppid() != daemon)
		return 128 + SIGHUP; /* the launch ended before this rank began */
	return -1;
}

/* Run the program (does not return unless exec fails, said on stderr). A
 * re-form asked for before the program is ready (a Python rank spends
 * seconds importing torch before elastic_init) must wait, not kill it:
 * SIGUSR1 stays blocked, hence pending, across exec until libelastic has
 * its handler and unblocks it. */
static void _exec_program(char **argv)
{
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	execvp(argv[0], argv);
	fprintf(stderr, "elastic-run: cannot run %s: %s\n", argv[0], strerror(errno));
}

/* In the child: become the program (parent: the wrapper's pid). */
static void _rank_exec(pid_t parent, char **argv) __attribute__((noreturn));

static void _rank_exec(pid_t parent, char **argv)
{
	/* The program dies with its wrapper (a killed daemon kills us). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
	signal(SIGCONT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	_exec_program(argv);
	_exit(127);
}

/* Tell elastic-run how the program ended (wait status ws). */
static void _rank_report(int ws)
{
	const char *addr = getenv("ELASTIC_RUN_REPORT"),
		   *token = getenv("ELASTIC_RUN_TOKEN");
	const char *gen = getenv("ELASTIC_RUN_GEN"),
		   *rank = getenv("OMPI_COMM_WORLD_RANK");
	const char *host = getenv("SLURMD_NODENAME"), *gpu = getenv("ELASTIC_GPU");
	char line[200], hn[256] = "";

	if (!addr || !token || !gen || !rank)
		return;
	if (!host) {
		gethostname(hn, sizeof(hn) - 1);
		host = hn;
	}
	/* a joiner's rank in the grown world follows the ranks that ran */
	const char *base = getenv("ELASTIC_RUN_JOIN_BASE");
	int rk = atoi(rank) + (base ? atoi(base) : 0);
	/* where it ran: elastic-run then knows that GPU has no live rank */
	elastic__report_format(
		line, sizeof(line), token, (unsigned)strtoul(gen, NULL, 10), rk,
		WIFSIGNALED(ws) ? ELASTIC_RANK_SIGNALED : ELASTIC_RANK_EXITED,
		WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws), host,
		gpu ? atoi(gpu) : -1);
	if (elastic__report_send(addr, line) < 0)
		fprintf(stderr, "elastic-run --rank: cannot report to %s\n", addr);
}

/* The Slurm job whose step must run this rank: its GPU's job when that is
 * not the job of the step the wrapper runs in (the daemon's), else 0
 * (also outside any job, where the device check refuses the rank). */
static unsigned long _rank_owner_elsewhere(void)
{
	const char *o = getenv("ELASTIC_GPU_JOB"), *j = getenv("SLURM_JOB_ID");
	unsigned long owner = o ? strtoul(o, NULL, 10) : 0;

	return owner && j && strtoul(j, NULL, 10) != owner ? owner : 0;
}

/* A rank whose GPU another Slurm job holds (a grant on a node where the
 * job already runs: the node's one daemon runs in the other job's step)
 * runs as a step of that job: `srun --jobid=OWNER --overlap` on this node,
 * where `elastic-run --rank-in-step` becomes the program. The rank then
 * lives and dies with the allocation that holds its GPU: a cancelled,
 * preempted or timed-out grant ends the step and so the rank, and its
 * daemon sees a process failure the others heal. srun passes the signals
 * on (a planned re-form's SIGUSR1 included) and exits with the program's
 * status. Costs an srun per such rank at each launch. */
static int _run_in_step(unsigned long owner, char **argv, int *ws)
{
	pid_t parent = getpid();
	char self[PATH_MAX], jobopt[48], host[256] = "";
	const char *h = getenv("SLURMD_NODENAME");
	int argc = 0;

	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0)
		return -1;
	self[sl] = '\0';
	if (h)
		snprintf(host, sizeof(host), "%s", h);
	else
		gethostname(host, sizeof(host) - 1);
	while (argv[argc])
		argc++;
	char **av = calloc((size_t)argc + 16, sizeof(*av));
	if (!av)
		return -1;
	snprintf(jobopt, sizeof(jobopt), "--jobid=%lu", owner);
	int n = 0;
	av[n++] = "srun";
	av[n++] = jobopt;
	av[n++] = "--overlap";
	av[n++] = "-N1";
	av[n++] = "-n1";
	av[n++] = "-w";
	av[n++] = host;
	av[n++] = "--mpi=none"; /* the rank is Open MPI's: no PMI of srun's */
	av[n++] = "--export=ALL";
	av[n++] = "--kill-on-bad-exit=0";
	av[n++] = "--quiet";
	av[n++] = self;
	av[n++] = "--rank-in-step";
	for (int i = 0; i < argc; i++)
		av[n++] = argv[i];
	av[n] = NULL;
	child_in_group = 1;
	if ((child = fork()) < 0) {
		fprintf(stderr, "elastic-run --rank: fork: %s\n", strerror(errno));
		free(av);
		return -1;
	}
	if (child == 0) {
		/* srun passes SIGTERM on to the step; a SIGKILLed srun would
		 * leave the program running in it */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		execvp("srun", av);
		fprintf(stderr, "elastic-run --rank: cannot run srun: %s\n",
			strerror(errno));
		_exit(127);
	}
	free(av);
	while (waitpid(child, ws, 0) < 0 && errno == EINTR)
		;
	child = -1;
	/* srun exits with the program's status (a planned re-form's 75
	 * included), and with 128 + N for a program killed by signal N, as
	 * when its grant ends (SIGTERM, then SIGKILL): that one becomes
	 * "killed by signal N" again, a process failure the others heal */
	if (WIFEXITED(*ws) && WEXITSTATUS(*ws) > 128 && WEXITSTATUS(*ws) < 128 + 65)
		*ws = WEXITSTATUS(*ws) - 128; /* a wait status "killed by signal N" */
	return 0;
}

/* "elastic-run --rank-in-step PROGRAM ARGS": the rank, started by
 * _run_in_step as a step of the job that holds its GPU: CUDA's number for
 * its GPU in this step, the device check, then the program. */
static int _rank_in_step(int argc, char **argv)
{
	const char *gpu = getenv("ELASTIC_GPU");
	char c[16];

	if (argc < 1 || !gpu) {
		fprintf(stderr,
			"elastic-run --rank-in-step: needs ELASTIC_GPU and a program (internal mode)\n");
		return EXIT_USAGE;
	}
	snprintf(c, sizeof(c), "%d", _cuda_ordinal(atoi(gpu)));
	setenv("CUDA_VISIBLE_DEVICES", c, 1);
	if (_rank_devcheck() < 0)
		return 1;
	_exec_program(argv);
	return 127;
}

/* Rank wrapper: "elastic-run --rank PROGRAM ARGS": one GPU per rank; the
 * program runs as a child so that its end can be reported: mpirun's own
 * status says nothing under --with-ft ulfm. The wrapper ends as it did. */
/* Start the program as this wrapper's child and wait for it. */
static int _run_cold(char **argv, int *ws)
{
	pid_t parent = getpid();
	sigset_t usr1, old;

	/* SIGUSR1 blocked from the fork on: one the daemon sends the group
	 * while the child is not yet the program stays pending for it (the
	 * wrapper's handler, inherited until then, would take it) */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	child_in_group = 1;
	if ((child = fork()) < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "elastic-run --rank: fork: %s\n", strerror(errno));
		return -1;
	}
	if (child == 0)
		_rank_exec(parent, argv);
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (waitpid(child, ws, 0) < 0 && errno == EINTR)
		;
	child = -1; /* reaped: its pid is free for another process (prewarm.c) */
	return 0;
}

static int _rank(int argc, char **argv)
{
	int ws, rc;

	/* "--join BASE MAP": started by a growth in place (libelastic's
	 * grow.c) as rank BASE + its rank of the new ranks, on the grown set */
	if (argc >= 1 && !strcmp(argv[0], "--join")) {
		char *end;
		long base = argc >= 3 ? strtol(argv[1], &end, 10) : -1;
		if (base < 0 || *end || !*argv[2]) {
			fprintf(stderr,
				"elastic-run --rank --join: needs BASE MAP (internal mode)\n");
			return EXIT_USAGE;
		}
		setenv("ELASTIC_RUN_JOIN_BASE", argv[1], 1);
		setenv("ELASTIC_RUN_MAP", argv[2], 1);
		argc -= 3;
		argv += 3;
	}
	if (argc < 1) {
		fprintf(stderr, "elastic-run --rank: no program (internal mode)\n");
		return EXIT_USAGE;
	}
	_rank_gpu();
	unsigned long owner = _rank_owner_elsewhere();
	if (!owner && _rank_devcheck() < 0)
		return 1;
	if ((rc = _rank_signals()) >= 0)
		return rc;
	/* In the step of the job that holds its GPU when that is not this
	 * step's job; else a warm interpreter on this node (prewarm.h) forks
	 * the rank, or it starts here. */
	if (owner) {
		if (_run_in_step(owner, argv, &ws) < 0)
			return 1;
	} else if (elastic__prewarm_run(argv, &child, &ws, &got_signal) < 0 &&
		   _run_cold(argv, &ws) < 0) {
		return 1;
	}
	_rank_report(ws);
	if (WIFSIGNALED(ws)) {
		signal(WTERMSIG(ws), SIG_DFL);
		raise(WTERMSIG(ws));
		return 128 + WTERMSIG(ws);
	}
	/* A rank that left at a planned shrink in place (reported as such
	 * above) must end as a process failure that ULFM lets the others
	 * survive. PRRTE 5 takes a non-zero exit for an error it makes fatal to
	 * the others ("An error occurred in PMIx Event Notification"), and an
	 * exit 0 without MPI_Finalize for a process still to be waited for (the
	 * others' MPI_Finalize then hangs). A process killed is a failure, as
	 * for a lost rank. */
	/* The same for a program ended from outside whose handler exits
	 * 128 + the signal (SIGTERM from Slurm ending a cancelled grant's
	 * step): the others heal in place. */
	const char *ip = getenv("ELASTIC_RUN_IN_PLACE");
	if (WEXITSTATUS(ws) == ELASTIC_EXIT_LEFT ||
	    (ip && !strcmp(ip, "1") && elastic__report_killed_status(WEXITSTATUS(ws)))) {
		fflush(NULL);
		signal(SIGKILL, SIG_DFL);
		raise(SIGKILL);
	}
	return WEXITSTATUS(ws);
}

static void _on_parent_death(int sig)
{
	if (child <= 0)
		return;
	if (sig == SIGHUP) {
		kill(child, SIGTERM);
		alarm(5);
	} else {
		kill(child, SIGKILL);
	}
}

static void _on_signal(int sig)
{
	got_signal = sig;
	/* Not twice to a child in the group: a second SIGUSR1, late under load,
	 * is a second request (a planned re-form after the shrink in place that
	 * the first one asked for). */
	if (child > 0 && !child_in_group)
		kill(child, sig);
}

/* elastic-run's own SIGUSR1 (a re-form asked from outside): passed on to
 * the ranks when they can take it (_stop_when_ready). */
static void _on_usr1(int sig)
{
	(void)sig;
	usr1_pending = 1;
}

static int _same_set(const struct elastic_gpuset *a, const struct elastic_gpuset *b)
{
	if (a->nhosts != b->nhosts || a->total != b->total)
		return 0;
	for (int i = 0; i < a->nhosts; i++)
		if (strcmp(a->host[i].name, b->host[i].name) ||
		    a->host[i].job != b->host[i].job ||
		    a->host[i].ngpus != b->host[i].ngpus)
			return 0;
	return 1;
}

/* ---- Setting up the run: options, the job, the run's files. ----
 * Each returns -1 to go on, or the exit status to end with. */

/* "-n N", "--max-stuck N": an integer in [0, 100000]. */
static int _count_opt(const char *opt, const char *v, int *out)
{
	char *end;
	long x = strtol(v, &end, 10);
	if (*end || end == v || x < 0 || x > 100000) {
		fprintf(stderr, "elastic-run: %s %s: not an integer in [0, 100000]\n",
			opt, v);
		return EXIT_USAGE;
	}
	*out = (int)x;
	return -1;
}

/* An option that takes a value: a is the option, v its value. */
static int _value_opt(struct run *r, const char *a, const char *v)
{
	if (strcmp(a, "--mpirun") == 0) {
		r->mpirun = v;
	} else if (strcmp(a, "--mpirun-arg") == 0) {
		if (r->nextra >= 32) {
			fprintf(stderr, "elastic-run: at most 32 --mpirun-arg\n");
			return EXIT_USAGE;
		}
		r->extra[r->nextra++] = v;
	} else if (strcmp(a, "--max-stuck") == 0) {
		return _count_opt(a, v, &r->max_stuck);
	} else if (strcmp(a, "--grant-wait") == 0) {
		int rc = _count_opt(a, v, &r->grant_wait);
		if (rc >= 0)
			return rc;
		if (r->grant_wait > 600) {
			fprintf(stderr,
				"elastic-run: --grant-wait takes 0 to 600 seconds, not '%s'\n",
				v);
			return EXIT_USAGE;
		}
	} else {
		return _count_opt(a, v, &r->max_relaunch);
	}
	return -1;
}

static int _runtime_in_place(const struct run *r, char *desc, size_t len, int *majorp);
static int _runtime_grows(int major);
static int _plan_leave(struct run *r);
static void _empty_file(const char *path);

static int _options(struct run *r, int argc, char **argv)
{
	int i, rc;

	r->mpirun = "mpirun";
	r->max_relaunch = 20;
	r->max_stuck = 3;
	r->grant_wait = 3;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			_usage(stdout);
			return 0;
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			printf("elastic-run %s\n", PACKAGE_VERSION);
			return 0;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			verbose++;
		} else if (strcmp(a, "--dry-run") == 0) {
			r->dry = 1;
		} else if (strcmp(a, "--runtime") == 0) {
			char rt[128];
			int major = 0, ip = _runtime_in_place(r, rt, sizeof(rt), &major);
			printf("%s: a lost node %s\n", rt,
			       ip ? "heals in place" : "ends mpirun (re-form)");
			printf("%s: a grant on a new node %s\n", rt,
			       _runtime_grows(major) ? "joins in place"
						     : "re-forms the job");
			return 0;
		} else if ((strcmp(a, "-n") == 0 || strcmp(a, "--max-relaunch") == 0 ||
			    strcmp(a, "--max-stuck") == 0 || strcmp(a, "--mpirun") == 0 ||
			    strcmp(a, "--grant-wait") == 0 ||
			    strcmp(a, "--mpirun-arg") == 0)) {
			if (i + 1 >= argc) {
				fprintf(stderr,
					"elastic-run: %s needs a value (try --help)\n",
					a);
				return EXIT_USAGE;
			}
			if ((rc = _value_opt(r, a, argv[++i])) >= 0)
				return rc;
		} else if (a[0] == '-') {
			fprintf(stderr, "elastic-run: unknown option '%s' (try --help)\n",
				a);
			return EXIT_USAGE;
		} else {
			break;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "elastic-run: no program given (try --help)\n");
		return EXIT_USAGE;
	}
	r->prog = argv + i;
	return -1;
}

/* Does the MPI runtime survive the loss of one of its daemons, so that the
 * ranks lost with a node heal in place? Open MPI 6 (PRRTE 5) does under
 * --with-ft ulfm; 5.0.x (PRRTE 3) aborts the whole mpirun. Asked once from
 * `mpirun --version` ("mpirun (Open MPI) 6.0.0rc2"); ELASTIC_RUN_IN_PLACE
 * =0/1 overrides it. */
static int _runtime_in_place(const struct run *r, char *desc, size_t len, int *majorp)
{
	const char *o = getenv("ELASTIC_RUN_IN_PLACE");
	char cmd[PATH_MAX + 32], line[256];
	int major = 0;

	snprintf(desc, len, "unknown MPI runtime");
	snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", r->mpirun);
	FILE *f = strchr(r->mpirun, '\'') ? NULL : popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *v = strstr(line, "(Open MPI) ");
		if (v && !major) {
			major = atoi(v + 11);
			line[strcspn(line, "\n")] = '\0';
			snprintf(desc, len, "Open MPI %s", v + 11);
		}
	}
	if (f)
		pclose(f);
	*majorp = major;
	if (o && (!strcmp(o, "0") || !strcmp(o, "1")))
		return *o == '1';
	return major >= 6;
}

/* Can the runtime grow a running mpirun onto a new node under fault
 * tolerance (MPI_Comm_spawn with PMIX_ADD_HOST, MPI_Intercomm_merge)?
 * Measured (TESTBED-NOTES): Open MPI 5.0.7 does (spawn 0.25-0.31 s, merge
 * 0.01-0.02 s, ULFM agreement fine on the merged world); 6.0.0rc2 does not
 * (no intercommunicator under --with-ft ulfm; spawn after a failure
 * crashes its daemons). ELASTIC_RUN_GROW_IN_PLACE=0/1 overrides it. */
static int _runtime_grows(int major)
{
	const char *o = getenv("ELASTIC_RUN_GROW_IN_PLACE");
	if (o && (!strcmp(o, "0") || !strcmp(o, "1")))
		return *o == '1';
	return major == 5;
}

/* The Slurm job and the elastic settings from the environment. */
static int _job(struct run *r)
{
	const char *jid = getenv("SLURM_JOB_ID");
	char *end;
	elastic_error_t err;

	if (!jid || !*jid) {
		fprintf(stderr,
			"elastic-run: not inside a Slurm allocation (SLURM_JOB_ID is unset): run it from an sbatch script or an salloc shell\n");
		return EXIT_NOALLOC;
	}
	r->jobid = strtoul(jid, &end, 10);
	if (*end || !r->jobid) {
		fprintf(stderr, "elastic-run: SLURM_JOB_ID=%s is not a job id\n", jid);
		return EXIT_NOALLOC;
	}
	if (elastic_request_from_env(&r->req, NULL, &err) < 0) {
		fprintf(stderr, "elastic-run: %s\n", err.text);
		return EXIT_USAGE;
	}
	if (!getenv("ELASTIC_JOB_ID"))
		setenv("ELASTIC_JOB_ID", jid, 1);
	/* this run of the job: a job id that Slurm hands out again (state lost,
	 * id space wrapped) never resumes an older job's node snapshots */
	const char *start = getenv("SLURM_JOB_START_TIME");
	if (!getenv("ELASTIC_JOB_STAMP") && start && *start &&
	    strspn(start, "0123456789") == strlen(start) && strlen(start) < 32)
		setenv("ELASTIC_JOB_STAMP", start, 1);
	const char *ctlspec = getenv("ELASTIC_CONTROLLER");
	if (ctlspec && *ctlspec) {
		if (elastic__ctl_init(&r->ctl, ctlspec, (uint32_t)r->jobid, &err) < 0) {
			fprintf(stderr, "elastic-run: %s\n", err.text);
			return EXIT_USAGE;
		}
		elastic__orders_init(&r->orders, (uint32_t)r->jobid);
		r->have_ctl = 1;
	}
	/* warm interpreters for a Python program's relaunches (prewarm.h) */
	elastic__prewarm_setup(r->prog, r->jobid, verbose, _say);
	char rt[128];
	int major = 0;
	r->in_place = _runtime_in_place(r, rt, sizeof(rt), &major);
	r->grow_in_place = _runtime_grows(major);
	/* the ranks' libelastic follows the same word (its snapshot default) */
	setenv("ELASTIC_RUN_IN_PLACE", r->in_place ? "1" : "0", 1);
	if (verbose)
		_say("MPI runtime: %s: a lost node %s", rt,
		     r->in_place ? "heals in place (the survivors go on)"
				 : "ends mpirun (re-form from the snapshot)");
	if (verbose)
		_say("MPI runtime: a grant on a new node %s",
		     r->grow_in_place
			     ? "joins in place (new ranks started, none restarted)"
			     : "re-forms the job (every rank restarts)");
	return -1;
}

/* The run's directory: the hostfile, the launch agent (this binary, as
 * PRRTE runs it: "AGENT HOST CMD"), the progress record; and the socket
 * the ranks report their end to. */
static int _files(struct run *r)
{
	elastic_error_t err;
	ssize_t sl = readlink("/proc/self/exe", r->self, sizeof(r->self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "elastic-run: cannot find its own path: %s\n",
			strerror(errno));
		return 1;
	}
	r->self[sl] = '\0';
	snprintf(r->dir, sizeof(r->dir), "%s/elastic-run.%lu.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", r->jobid);
	if (!mkdtemp(r->dir)) {
		fprintf(stderr, "elastic-run: mkdtemp %s: %s\n", r->dir, strerror(errno));
		return 1;
	}
	snprintf(r->hostfile, sizeof(r->hostfile), "%s/hostfile", r->dir);
	snprintf(r->agent, sizeof(r->agent), "%s/agent", r->dir);
	snprintf(r->progress, sizeof(r->progress), "%s/progress", r->dir);
	setenv("ELASTIC_RUN_PROGRESS", r->progress, 1);
	snprintf(r->leave, sizeof(r->leave), "%s/leave", r->dir);
	snprintf(r->join, sizeof(r->join), "%s/join", r->dir);
	snprintf(r->mapfile, sizeof(r->mapfile), "%s/map", r->dir);
	/* the agent finds a node added to a running mpirun there */
	setenv("ELASTIC_RUN_MAP_FILE", r->mapfile, 1);
	FILE *af = fopen(r->agent, "w");
	if (!af || fprintf(af, "#!/bin/sh\nexec '%s' --agent \"$@\"\n", r->self) < 0 ||
	    fclose(af) != 0 || chmod(r->agent, 0755) < 0) {
		fprintf(stderr, "elastic-run: cannot write %s: %s\n", r->agent,
			strerror(errno));
		return 1;
	}
	if (elastic__report_open(&r->rep, &err) < 0) {
		fprintf(stderr, "elastic-run: %s\n", err.text);
		return 1;
	}
	setenv("ELASTIC_RUN_REPORT", r->rep.addr, 1);
	setenv("ELASTIC_RUN_TOKEN", r->rep.token, 1);
	return -1;
}

/* ---- The state machine: launch, watch, re-form, finish. ---- */

enum run_state { RUN_LAUNCH, RUN_WATCH, RUN_REFORM, RUN_FINISH };

/* The job's GPUs now, cut to what it may use (--elastic-gpus MAX, sizes). */
static int _look(const struct run *r, struct elastic_gpuset *set, elastic_error_t *err)
{
	if (_discover(r, set, err) < 0)
		return -1;
	elastic__gpuset_trim(set, &r->req);
	return 0;
}

static int _in_set(uint32_t grant, const void *set)
{
	return elastic__gpuset_has_job(set, grant);
}

/* When the controller's target for the job is above the GPUs it holds, it
 * is starting grants for it: before the first launch (a job that has just
 * started gets its share at once), and after a release that had to free a
 * larger grant (elasticd starts a smaller one in its place). Waiting up to
 * --grant-wait seconds for them spares the job a launch and a re-form a
 * moment later. 1 if grants were announced (look again), else 0. */
static int _await_grants(struct run *r)
{
	double t0 = _now(), until = t0 + r->grant_wait;
	int add = 0;

	/* The target follows the registration within a tick. A job that
	 * started before elasticd saw it pending may be refused once and
	 * register on the next attempt (0.5 s later): keep polling for it. */
	while (r->grant_wait > 0 && _now() < until) {
		elastic__orders_poll(&r->orders, &r->ctl, 50, _say);
		add = elastic__orders_new_gpus(&r->orders, _in_set, &r->set);
		if (r->orders.target && (int)r->orders.target <= r->set.raw + add)
			break;
		/* no controller to hear from (elasticd down): do not hold the job */
		if (!r->orders.target && !elastic__ctl_connected(&r->ctl) &&
		    _now() - t0 > 1.5)
			break;
	}
	if (add > 0)
		_say("waited %.0f ms for %d GPU%s of grants before launching",
		     (_now() - t0) * 1e3, add, add == 1 ? "" : "s");
	else if (r->grant_wait > 0 && !r->orders.target)
		_say("no target from the controller within %d s: launching on %d",
		     r->grant_wait, r->set.total);
	else if (r->orders.target > (uint32_t)r->set.raw)
		_say("target %u GPUs but no grant started within %d s: launching on %d",
		     r->orders.target, r->grant_wait, r->set.total);
	return add > 0;
}

/* r->set from Slurm now; -1 (logged, r->status set) when it cannot be read. */
static int _look_launch_set(struct run *r)
{
	elastic_error_t err;
	if (_look(r, &r->set, &err) == 0)
		return 0;
	_say("cannot find this job's GPUs: %s", err.text);
	r->status = 1;
	return -1;
}

static int _uses_released(const struct run *r);
static int _released_job(unsigned long job, const void *arg);

/* Choose the launch set (r->set) and write what the agent and the ranks
 * read: the hostfile and ELASTIC_RUN_MAP. 0, or -1 (logged; r->status is
 * the run's exit status). */
static int _choose(struct run *r)
{
	elastic_error_t err;

	/* a planned re-form that gave grants back (acknowledged below) */
	int released = r->launches > 0 && _uses_released(r) && !r->sum.failed &&
		       !r->sum.signaled && !r->sum.missing;

	if (r->now_fresh) {
		/* _reform looked just now, after the previous mpirun ended */
		r->now_fresh = 0;
		memcpy(&r->set, &r->now, sizeof(r->set));
	} else if (_look_launch_set(r) < 0) {
		return -1;
	}
	if (r->have_ctl) {
		/* acknowledges the releases: elasticd cancels those grants */
		elastic__orders_releases_done(&r->orders);
		r->ctl.gpus = r->set.total;
		elastic__orders_poll(&r->orders, &r->ctl, 0, _say);
		if ((r->launches == 0 || released) && _await_grants(r)) {
			if (_look_launch_set(r) < 0)
				return -1;
			r->ctl.gpus = r->set.total;
		}
	}
	if (r->set.total < r->req.min_gpus) {
		_say("only %d GPU%s usable, below the job's minimum of %ld: giving up",
		     r->set.total, r->set.total == 1 ? "" : "s", r->req.min_gpus);
		r->status = 1;
		return -1;
	}
	if (elastic__gpuset_write_hostfile(&r->set, r->hostfile, &err) < 0) {
		_say("%s", err.text);
		return -1;
	}
	char *map = _map_env(&r->set);
	if (!map) {
		_say("out of memory");
		return -1;
	}
	setenv("ELASTIC_RUN_MAP", map, 1);
	free(map);
	return 0;
}

#define MPIRUN_ARGV_MAX (64 + 32)

/* The mpirun command line of a launch on r->set (np: its rank count). */
static void _mpirun_argv(const struct run *r, const char *np, const char **av)
{
	int n = 0;
	av[n++] = r->mpirun;
	av[n++] = "--with-ft";
	av[n++] = "ulfm";
	av[n++] = "--bind-to";
	av[n++] = "none";
	av[n++] = "--hostfile";
	av[n++] = r->hostfile;
	av[n++] = "--prtemca";
	av[n++] = "plm";
	av[n++] = "ssh";
	av[n++] = "--prtemca";
	av[n++] = "plm_ssh_agent";
	av[n++] = r->agent;
	av[n++] = "--prtemca";
	av[n++] = "ras";
	av[n++] = "^slurm";
	if (r->in_place) {
		/* a node gone silent (its link down, power lost) is noticed by
		 * TCP keepalive on the daemons' connections: probes after 2 s
		 * idle, every 1 s, 3 unanswered = lost (defaults: hours) */
		static const char *ka[] = {"prte_keepalive_time",   "2",
					   "prte_keepalive_intvl",  "1",
					   "prte_keepalive_probes", "3"};
		for (int k = 0; k < 6; k += 2) {
			av[n++] = "--prtemca";
			av[n++] = ka[k];
			av[n++] = ka[k + 1];
		}
	}
	av[n++] = "-np";
	av[n++] = np;
	for (int e = 0; e < r->nextra; e++)
		av[n++] = r->extra[e];
	av[n++] = r->self;
	av[n++] = "--rank";
	for (char **a = r->prog; *a && n < MPIRUN_ARGV_MAX - 2; a++)
		av[n++] = *a;
	av[n] = NULL;
}

/* Start mpirun (av) for a new launch of the report socket: 0 or -1. */
static int _spawn(struct run *r, const char **av)
{
	char gen[16];

	if (elastic__report_begin(&r->rep, r->set.total) < 0) {
		_say("out of memory");
		return -1;
	}
	snprintf(gen, sizeof(gen), "%u", r->rep.gen);
	setenv("ELASTIC_RUN_GEN", gen, 1);
	elastic__prewarm_launch(&r->set, r->t_end); /* zygotes ahead of need */
	r->t0 = _now();
	clock_gettime(CLOCK_REALTIME, &r->t0_wall);
	r->world = r->set.total;
	r->leaving = 0;
	r->t_heal = 0;
	if (r->in_place) {
		_empty_file(r->leave);
		setenv("ELASTIC_RUN_LEAVE", r->leave, 1);
	}
	r->joining = 0;
	if (r->grow_in_place) {
		_empty_file(r->join);
		setenv("ELASTIC_RUN_JOIN", r->join, 1);
	}
	child = fork();
	if (child < 0) {
		_say("fork: %s", strerror(errno));
		return -1;
	}
	if (child == 0) {
		execvp(av[0], (char **)av);
		fprintf(stderr, "elastic-run: cannot run %s: %s\n", av[0],
			strerror(errno));
		_exit(127);
	}
	return 0;
}

/* LAUNCH: mpirun over every GPU the job holds now. */
static enum run_state _launch(struct run *r)
{
	const char *av[MPIRUN_ARGV_MAX];
	char desc[2048], np[16];

	if (_choose(r) < 0)
		return RUN_FINISH;
	elastic__gpuset_describe(&r->set, desc, sizeof(desc));
	snprintf(np, sizeof(np), "%d", r->set.total);
	_mpirun_argv(r, np, av);
	if (r->launches == 0)
		_say("job %lu: %d rank%s on %s", r->jobid, r->set.total,
		     r->set.total == 1 ? "" : "s", desc);
	else
		_say("re-form %d: %d rank%s on %s (%.0f ms after the previous mpirun ended)",
		     r->launches, r->set.total, r->set.total == 1 ? "" : "s", desc,
		     (_now() - r->t_end) * 1e3);
	if (r->dry || verbose > 1) {
		fprintf(stderr, "elastic-run: ");
		for (int a = 0; av[a]; a++)
			fprintf(stderr, "%s ", av[a]);
		fprintf(stderr, "\n");
		if (r->dry) {
			r->status = 0;
			return RUN_FINISH;
		}
	}
	return _spawn(r, av) < 0 ? RUN_FINISH : RUN_WATCH;
}

/* GPUs of the running set that belong to grants ordered released. */
static int _released_gpus(const struct run *r)
{
	int n = 0;
	for (int h = 0; h < r->set.nhosts; h++)
		for (int g = 0; g < r->set.host[h].ngpus; g++)
			n += elastic__orders_released(
				&r->orders, (uint32_t)r->set.host[h].gpu_job[g]);
	return n;
}

/* 1 if a GPU of the running set belongs to a grant ordered released: the
 * set changes for sure, no need to ask Slurm first. */
static int _uses_released(const struct run *r)
{
	return _released_gpus(r) > 0;
}

/* GPUs of the running set that hold no live rank: their rank ended (its
 * wrapper said where it ran) and the others healed in place around it.
 * released: only those of grants ordered released. */
static int _idle_gpus(const struct run *r, int released)
{
	int n = 0;
	for (int h = 0; h < r->set.nhosts; h++) {
		const struct elastic_host *x = &r->set.host[h];
		for (int g = 0; g < x->ngpus; g++)
			n += elastic__report_ended_on(&r->rep, x->name, x->gpu[g]) &&
			     (!released || elastic__orders_released(
						   &r->orders, (uint32_t)x->gpu_job[g]));
	}
	return n;
}

/* GPUs of the running set that hold a live rank. */
static int _live_gpus(const struct run *r)
{
	return r->set.total - _idle_gpus(r, 0);
}

/* How long the releases of one shrink are awaited once the first came. */
#define RELEASE_SETTLE_S 0.5

/* How long after a heal in place a release waits for the lost ranks'
 * wrappers to say where they ran (their reports may come after rank 0's
 * record of the smaller world; a lost node's never come). */
#define HEAL_SETTLE_S 1.0

/* 1 while a release should wait for that (see HEAL_SETTLE_S). */
static int _heal_unsettled(struct run *r)
{
	if (!r->t_heal || _now() - r->t_heal >= HEAL_SETTLE_S ||
	    r->world >= _live_gpus(r))
		return 0;
	if (!r->t_rel_wait) {
		r->t_rel_wait = _now();
		_say("controller: a release %.0f ms after ranks were lost: waiting up to %.1f s for where they ran",
		     (_now() - r->t_heal) * 1e3, HEAL_SETTLE_S);
	}
	return 1;
}

/* 1 while the releases seen leave the set above the controller's target
 * (sent before them): the others of the same shrink are on their way
 * (elasticd orders them one grant at a time, a slurmctld call apart). Acting
 * on the first alone re-formed twice, or, in place, let a node's ranks
 * leave while the grant hosting its daemon was released next (its end
 * killed the ranks that stayed). Waits RELEASE_SETTLE_S at most. */
static int _releases_to_come(struct run *r, int released)
{
	int target = (int)r->orders.target;
	if (!target || target >= r->set.total || r->set.total - released <= target)
		return 0;
	if (!r->t_rel_wait) {
		r->t_rel_wait = _now();
		_say("controller: target %d GPUs, %d of %d released so far: waiting up to %.1f s for the other releases",
		     target, released, r->set.total - target, RELEASE_SETTLE_S);
	}
	return _now() - r->t_rel_wait < RELEASE_SETTLE_S;
}

/* 1 if grants announced as started add GPUs the job's sizes let it use (by
 * the controller's word: its GRANT message names the grant's GPUs): the set
 * changes for sure, no need to ask Slurm first (a look-up costs 0.1-0.6 s of
 * scontrol/squeue on a busy node, all of it on the grow's critical path). */
static int _grants_add(const struct run *r)
{
	int add = elastic__orders_new_gpus(&r->orders, _in_set, &r->set);
	return add > 0 &&
	       (int)elastic_sizes_fit(&r->req.sizes, r->req.min_gpus, r->req.max_gpus,
				      r->set.raw + add) != r->set.total;
}

/* Can the ranks of the current launch take SIGUSR1? Only once libelastic
 * installed its handler in every rank: before, the signal's default action
 * ends them (a grant announced 0.2 s after the one that started a re-form
 * killed all 7 ranks of the launch it started). A step committed since the
 * launch (rank 0's progress record is newer) shows it; after 10 s without
 * one the ranks get it anyway (a launch stuck in its start-up). */
static int _ranks_ready(const struct run *r)
{
	struct stat st;
	if (_now() - r->t0 > 10.0)
		return 1;
	return stat(r->progress, &st) == 0 && _since_launch(r, &st);
}

/* The host of set named name, or NULL. */
static const struct elastic_host *_host_named(const struct elastic_gpuset *set,
					      const char *name)
{
	for (int h = 0; h < set->nhosts; h++)
		if (!strcmp(set->host[h].name, name))
			return &set->host[h];
	return NULL;
}

/* A larger set (now) on a runtime that grows in place: when it keeps every
 * host of the running set as it is and adds whole nodes new to the launch
 * (a daemon there would serve one grant's Slurm job), write the join list
 * (libelastic's grow.c) and the grown map (for the launch agent): at the
 * next step boundary the ranks start the new ones and merge with them, no
 * rank restarts. 1 if planned; 0: the ranks re-form as before. */
static int _plan_grow(struct run *r, const struct elastic_gpuset *now)
{
	int add = 0;
	const char *why = NULL;

	if (!r->grow_in_place || r->joining || r->leaving || _released_gpus(r) ||
	    r->world != r->set.total)
		return 0;
	for (int h = 0; h < r->set.nhosts && !why; h++) {
		const struct elastic_host *a = &r->set.host[h],
					  *b = _host_named(now, a->name);
		if (!b || b->ngpus != a->ngpus ||
		    memcmp(a->gpu, b->gpu, sizeof(int) * (size_t)a->ngpus) ||
		    memcmp(a->gpu_job, b->gpu_job,
			   sizeof(a->gpu_job[0]) * (size_t)a->ngpus))
			why = "the new GPUs are on a node the job runs on";
	}
	for (int h = 0; h < now->nhosts; h++)
		if (!_host_named(&r->set, now->host[h].name))
			add += now->host[h].ngpus;
	if (!why && (add == 0 || now->total != r->set.total + add))
		why = "the set does not only grow";
	for (char **a = r->prog; *a && !why; a++)
		if (strchr(*a, '\n'))
			why = "an argument of the program has a newline";
	if (why) {
		if (verbose)
			_say("grow: %s: every rank re-forms", why);
		return 0;
	}
	char *map = _map_env(now);
	FILE *mf = map ? fopen(r->mapfile, "w") : NULL;
	int ok = mf && fprintf(mf, "%s\n", map) > 0;
	if (mf && fclose(mf) != 0)
		ok = 0;
	FILE *f = ok ? fopen(r->join, "w") : NULL;
	ok = f && fprintf(f, "wrapper %s\nmap %s\n", r->self, map) > 0;
	for (int h = 0; ok && h < now->nhosts; h++)
		if (!_host_named(&r->set, now->host[h].name))
			ok = fprintf(f, "host %s %d\n", now->host[h].name,
				     now->host[h].ngpus) > 0;
	for (char **a = r->prog; ok && *a; a++)
		ok = fprintf(f, "arg %s\n", *a) > 0;
	if (f && fclose(f) != 0)
		ok = 0;
	free(map);
	if (!ok) {
		_say("cannot write %s: %s: every rank re-forms instead", r->join,
		     strerror(errno));
		_empty_file(r->join);
		return 0;
	}
	char desc[2048];
	r->joining = add, r->join_world = r->world + add, r->t_join = _now();
	memcpy(&r->grown, now, sizeof(r->grown));
	elastic__gpuset_describe(now, desc, sizeof(desc));
	_say("grow in place: %d new rank%s join the %d running at the next step boundary (none restarts), on %s",
	     add, add == 1 ? "" : "s", r->world, desc);
	return 1;
}

/* Slurm's word on where the job's GPUs are now, for a growth in place
 * (_plan_grow); nothing on a runtime that cannot grow in place. */
static void _look_and_plan_grow(struct run *r)
{
	elastic_error_t err;
	if (r->grow_in_place && _look(r, &r->now, &err) == 0)
		_plan_grow(r, &r->now);
}

/* The ranks started by a growth in place joined (rank 0's record shows the
 * grown world): the set is the grown one, elasticd hears it. */
static void _grow_done(struct run *r, unsigned long long step, int size)
{
	char desc[2048];
	memcpy(&r->set, &r->grown, sizeof(r->set));
	if (elastic__report_grow(&r->rep, size) < 0)
		_say("out of memory: the joined ranks' ends are not followed");
	elastic__gpuset_describe(&r->set, desc, sizeof(desc));
	_say("grew in place: %d rank%s joined, %d at step %llu, no relaunch (%.0f ms after the order); GPUs now: %s",
	     size - r->world, size - r->world == 1 ? "" : "s", size, step,
	     (_now() - r->t_join) * 1e3, desc);
	r->world = size;
	r->joining = 0;
	r->stop_sent = r->stop_due = 0;
	_empty_file(r->join);
	if (r->have_ctl) {
		r->ctl.gpus = r->set.total;
		elastic__orders_status(&r->ctl, step, -1, _say);
		/* orders that came while the ranks grew (_follow_orders waits
		 * for a change under way): a release gets its shrink, grants
		 * still outside the set another change */
		if (_uses_released(r)) {
			r->stop_due = _plan_leave(r);
		} else if (_grants_add(r)) {
			r->stop_due = 1;
			_look_and_plan_grow(r);
		}
	}
}

/* While mpirun runs: an order that changes the job's GPUs makes a re-form
 * due (_stop_when_ready tells the ranks). A release of GPUs in use, or
 * started grants that add usable GPUs, settle it at once; otherwise Slurm
 * is asked (a grant may add no usable GPU, e.g. under --elastic-sizes). */
static void _follow_orders(struct run *r)
{
	elastic_error_t err;

	_progress(r);
	int act = elastic__orders_poll(&r->orders, &r->ctl, 50, _say);
	if (r->stop_sent || r->stop_due || (!act && !r->t_rel_wait))
		return;
	int released = _released_gpus(r);
	if (released) {
		/* The ranks of a planned shrink in place left and the others
		 * have not committed a step yet: _shrink_done plans this
		 * release as a shrink of its own then (planning it now finds
		 * the shrink under way and stops every rank: a relaunch). A
		 * heal since (a smaller world) ends that wait. */
		if (r->leaving && r->world == r->leave_world - r->leaving)
			return;
		if (_heal_unsettled(r) || _releases_to_come(r, released))
			return;
		r->t_rel_wait = 0;
		r->stop_due = _plan_leave(r);
		return;
	}
	r->t_rel_wait = 0;
	if (!act)
		return;
	if (_grants_add(r)) {
		r->stop_due = 1;
		_look_and_plan_grow(r);
		return;
	}
	/* Slurm shows a grant ordered released until elasticd cancels it,
	 * after the job acknowledged the release: such GPUs are no change */
	if (_look(r, &r->now, &err) == 0) {
		elastic__gpuset_drop(&r->now, _released_job, &r->orders);
		r->stop_due = !_same_set(&r->set, &r->now);
		if (r->stop_due)
			_plan_grow(r, &r->now);
	}
}

/* A re-form that is due (an order, or SIGUSR1 to elastic-run) reaches the
 * ranks as SIGUSR1 once they can take it. */
static void _stop_when_ready(struct run *r)
{
	/* (one asked while the ranks grow is taken once they have) */
	if (usr1_pending && !r->joining) {
		usr1_pending = 0;
		r->stop_due = 1;
		/* (a set that only grew onto new nodes: in place, where the
		 * runtime can) */
		if (!r->stop_sent)
			_look_and_plan_grow(r);
	}
	if (r->stop_due && !r->stop_sent && _ranks_ready(r)) {
		_say("asking the %d ranks to %s at the next step boundary (SIGUSR1)",
		     r->world, r->joining ? "grow" : "re-form");
		kill(child, SIGUSR1);
		r->stop_sent = 1;
	}
}

/* The leave file empty: at a planned stop every rank stops (libelastic). */
/* The leave and join files say "nothing" when empty. */
static void _empty_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

/* Does the set have GPUs of grant? */
static int _grant_in_set(uint32_t grant, const void *set)
{
	const struct elastic_gpuset *g = set;
	for (int h = 0; h < g->nhosts; h++)
		for (int i = 0; i < g->host[h].ngpus; i++)
			if (g->host[h].gpu_job[i] == grant)
				return 1;
	return 0;
}

/* The grants ordered released (their GPUs' ranks leave). */
static int _released_job(unsigned long job, const void *arg)
{
	return elastic__orders_released(arg, (uint32_t)job);
}

/* A host whose daemon runs in a released grant's job step while live ranks
 * on GPUs not released stay there (the grant's end would end them too), or
 * -1. */
static int _daemon_released(const struct run *r)
{
	for (int h = 0; h < r->set.nhosts; h++) {
		const struct elastic_host *x = &r->set.host[h];
		if (!elastic__orders_released(&r->orders, (uint32_t)x->job))
			continue;
		for (int g = 0; g < x->ngpus; g++)
			if (!elastic__orders_released(&r->orders,
						      (uint32_t)x->gpu_job[g]) &&
			    !elastic__report_ended_on(&r->rep, x->name, x->gpu[g]))
				return h;
	}
	return -1;
}

/* A release of GPUs the ranks use, on a runtime that survives a lost
 * daemon: name those GPUs in the leave file, so that their ranks leave at
 * the next step boundary and the others go on (libelastic's planned shrink
 * in place), when what is left is a size the job allows. Otherwise the
 * file stays empty: every rank stops and the job re-forms. GPUs whose rank
 * was lost and healed around count as no rank. Returns 1 when the ranks
 * must be asked to stop, 0 when the released GPUs hold no live rank (the
 * release is acknowledged at once). */
static int _plan_leave(struct run *r)
{
	char list[8192];
	int n, h, idle_rel;

	if (r->in_place && !r->leaving && (h = _daemon_released(r)) >= 0) {
		_say("planned shrink: grant %lu, released, hosts the daemon of %s where ranks stay: all ranks re-form",
		     r->set.host[h].job, r->set.host[h].name);
		return 1;
	}
	if (!r->in_place || r->leaving || r->world != _live_gpus(r) || _grants_add(r) ||
	    (n = elastic__gpuset_leave(&r->set, _released_job, &r->orders, list,
				       sizeof(list))) <= 0 ||
	    n >= r->set.total ||
	    /* the controller starts a grant in place of a larger one it had
	     * to release (re-shape): one re-form onto both is better (a target
	     * not below the set is an older grow's, not this shrink's) */
	    (r->orders.target && (int)r->orders.target < r->set.total &&
	     r->set.total - n < (int)r->orders.target) ||
	    (int)elastic_sizes_fit(&r->req.sizes, r->req.min_gpus, r->req.max_gpus,
				   r->set.total - n) != r->set.total - n)
		return 1;
	idle_rel = _idle_gpus(r, 1);
	if (idle_rel == n) {
		char desc[2048];
		elastic__gpuset_drop(&r->set, _released_job, &r->orders);
		elastic__gpuset_describe(&r->set, desc, sizeof(desc));
		_say("released GPU%s with no live rank (lost and healed around): no stop, acknowledged at once; GPUs now: %s",
		     n == 1 ? "" : "s", desc);
		if (r->have_ctl) {
			r->ctl.gpus = r->set.total < r->world ? r->set.total : r->world;
			elastic__orders_releases_done_unless(&r->orders, _grant_in_set,
							     &r->set);
			elastic__orders_poll(&r->orders, &r->ctl, 0, _say);
		}
		return 0;
	}
	FILE *f = fopen(r->leave, "w");
	if (!f || fputs(list, f) < 0 || fclose(f) != 0) {
		_say("cannot write %s: %s: the job re-forms instead", r->leave,
		     strerror(errno));
		return 1;
	}
	/* (an idle GPU named there has no rank to leave) */
	r->leaving = n - idle_rel, r->leave_world = r->world, r->leave_step = 0;
	r->t_leave = _now();
	memcpy(&r->after, &r->set, sizeof(r->after));
	elastic__gpuset_drop(&r->after, _released_job, &r->orders);
	_say("planned shrink in place: the %d rank%s on released GPUs leave at the next step boundary",
	     r->leaving, r->leaving == 1 ? "" : "s");
	return 1;
}

/* The ranks on released GPUs left and the others went on at size (rank 0's
 * record); once they committed a step after it, the releases are done and
 * acknowledged: elasticd cancels the grants (their daemons' end is
 * survived). */
static void _shrink_done(struct run *r, unsigned long long step, int size)
{
	if (!r->leave_step) {
		char desc[2048];
		r->leave_step = step;
		r->world = size;
		/* the GPUs named when the shrink was planned (a grant released
		 * since has its ranks still running) */
		memcpy(&r->set, &r->after, sizeof(r->set));
		elastic__gpuset_describe(&r->set, desc, sizeof(desc));
		_say("planned shrink in place: %d rank%s left after step %llu, %d go on (%.0f ms after the order); GPUs now: %s",
		     r->leaving, r->leaving == 1 ? "" : "s", step, size,
		     (_now() - r->t_leave) * 1e3, desc);
		r->stop_sent = r->stop_due = 0;
		_empty_file(r->leave);
	}
	if (step <= r->leave_step)
		return;
	_say("planned shrink in place: step %llu committed at %d rank%s: releasing", step,
	     size, size == 1 ? "" : "s");
	r->leaving = 0;
	if (r->have_ctl) {
		r->ctl.gpus = r->set.total;
		/* only the grants no rank runs on any more; one released while
		 * this shrink was under way gets a shrink of its own */
		elastic__orders_releases_done_unless(&r->orders, _grant_in_set, &r->set);
		elastic__orders_poll(&r->orders, &r->ctl, 0, _say);
		if (_uses_released(r))
			r->stop_due = _plan_leave(r);
	}
}

/* After a heal in place: the set becomes what Slurm says the job holds now
 * (a cancelled grant, a node gone) once that is smaller. Slurm may list a
 * lost node's grant for a while after the heal (elasticd cancels it when it
 * hears): looked up again every 0.5 s for up to 10 s while the set has more
 * GPUs than ranks (a GPU whose rank alone was lost stays held). Whether the
 * lost ranks' wrappers said where they ran does not matter: those of a
 * cancelled grant often do (SIGTERM) before its GPUs leave Slurm's list. */
static void _heal_look(struct run *r)
{
	elastic_error_t err;
	char desc[2048];

	if (r->world >= r->set.total || _now() - r->t_heal > 10.0) {
		r->t_heal = 0;
		return;
	}
	if (_now() - r->t_heal_look < 0.5 || _released_gpus(r) > 0)
		return; /* (a release under way drops its GPUs and acknowledges them) */
	r->t_heal_look = _now();
	if (_look(r, &r->now, &err) < 0 || r->now.total >= r->set.total)
		return;
	r->set = r->now;
	elastic__gpuset_describe(&r->set, desc, sizeof(desc));
	_say("GPUs now: %s", desc);
	/* (elasticd hears it with the next progress) */
	r->ctl.gpus = r->set.total < r->world ? r->set.total : r->world;
}

/* With a runtime that survives a lost daemon: rank 0's record of a smaller
 * world says ranks were lost and the survivors healed in place. The launch
 * goes on; its GPU set becomes what Slurm says the job holds now (a
 * cancelled grant, a node gone: _heal_look), and elasticd hears the smaller
 * count. */
static void _watch_heals(struct run *r)
{
	static double t_read;
	unsigned long long step, seen;
	double t;
	int size;

	if ((!r->in_place && !r->joining) || _now() - t_read < 0.1)
		return;
	t_read = _now();
	if (_progress_read(r, &step, &seen, &t, &size) < 0 || size <= 0)
		return;
	if (r->leaving && size == r->leave_world - r->leaving) {
		_shrink_done(r, step, size);
		return;
	}
	if (r->joining && size == r->join_world) {
		_grow_done(r, step, size);
		return;
	}
	if (!r->in_place)
		return;
	if (size >= r->world) {
		if (r->t_heal)
			_heal_look(r);
		return;
	}
	_say("%d rank%s lost; the survivors healed in place at %d rank%s from step %llu (no relaunch)",
	     r->world - size, r->world - size == 1 ? "" : "s", size, size == 1 ? "" : "s",
	     step);
	r->world = size;
	r->t_heal = _now();
	r->t_heal_look = 0;
	_heal_look(r);
	if (r->have_ctl) {
		r->ctl.gpus = r->set.total < size ? r->set.total : size;
		elastic__orders_status(&r->ctl, step, -1, _say);
	}
}

/* With a runtime that heals in place, a rank that ends while mpirun runs
 * is news: say where it ran (-v). */
static void _say_ends(struct run *r)
{
	for (int i = 0; i < r->rep.nranks; i++) {
		struct elastic_rank_end *e = &r->rep.end[i];
		if (e->how == ELASTIC_RANK_UNKNOWN || e->told)
			continue;
		e->told = 1;
		if (verbose && r->in_place && e->value != 0)
			_say("rank %d ended (%s %d) on %s GPU %d", i,
			     e->how == ELASTIC_RANK_SIGNALED ? "signal" : "exit status",
			     e->value, e->host[0] ? e->host : "?", e->gpu);
	}
}

/* WATCH: wait for mpirun while taking the ranks' reports and the
 * controller's orders; then sum up how the launch ended. */
static enum run_state _watch(struct run *r)
{
	int ws;

	r->stop_sent = r->stop_due = 0;
	for (;;) {
		if (elastic__report_poll(&r->rep, r->have_ctl ? 50 : 200) > 0)
			_say_ends(r);
		pid_t w = waitpid(child, &ws, WNOHANG);
		if (w == child || (w < 0 && errno != EINTR))
			break;
		_watch_heals(r);
		if (r->have_ctl)
			_follow_orders(r);
		_stop_when_ready(r);
	}
	child = -1;
	r->t_end = _now();
	/* Reports sent just before the ranks ended may still be in flight. */
	for (double until = _now() + 0.5; _now() < until;) {
		struct elastic_report_summary q;
		elastic__report_summary(&r->rep, EXIT_REFORM, &q);
		if (!q.missing || elastic__report_poll(&r->rep, 100) == 0)
			break;
	}
	r->mstatus = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	elastic__report_summary(&r->rep, EXIT_REFORM, &r->sum);
	r->launches++;
	if (verbose) {
		_say("mpirun status %d; ranks: %d ok, %d failed, %d re-form, %d signalled, %d silent, %d left",
		     r->mstatus, r->sum.ok, r->sum.failed, r->sum.reform, r->sum.signaled,
		     r->sum.missing, r->sum.left);
		for (int i = 0; i < r->rep.nranks; i++) {
			const struct elastic_rank_end *e = &r->rep.end[i];
			if (e->how == ELASTIC_RANK_SIGNALED ||
			    (e->how != ELASTIC_RANK_UNKNOWN && e->value != 0 &&
			     e->value != EXIT_REFORM))
				_say("rank %d: %s %d", i,
				     e->how == ELASTIC_RANK_SIGNALED ? "signal"
								     : "exit status",
				     e->value);
		}
	}
	return RUN_REFORM;
}

/* REFORM: finished, or launch again, or give up (elastic__run_* decide). */
static enum run_state _reform(struct run *r)
{
	const struct elastic_report_summary *sum = &r->sum;
	elastic_error_t err;

	/* the world the survivors healed to, if they did: rank 0's last
	 * record (the survivors may have finished before it was read) */
	unsigned long long step, seen;
	double t;
	int size = 0, healed = 0;
	if (r->in_place && _progress_read(r, &step, &seen, &t, &size) == 0 && size > 0 &&
	    size < r->world)
		r->world = size;
	if (r->in_place && r->world < r->rep.nranks)
		healed = r->world;
	switch (elastic__run_ended(sum, r->mstatus, got_signal, healed, &r->status)) {
	case ELASTIC_RUN_FINISHED:
		_say("job %lu: finished (%d launch%s, %d of %d ranks at the end)",
		     r->jobid, r->launches, r->launches == 1 ? "" : "es", sum->ok,
		     r->set.total);
		return RUN_FINISH;
	case ELASTIC_RUN_STOPPED:
		_say("stopped by signal %d; not re-forming", (int)got_signal);
		return RUN_FINISH;
	case ELASTIC_RUN_NOSTART:
		_say("%s could not be started (status 127)", r->mpirun);
		return RUN_FINISH;
	default:
		break;
	}
	r->now_fresh = _look(r, &r->now, &err) == 0;
	int changed = !_same_set(&r->set, &r->now);
	_say("mpirun ended after %.1f s: %d rank%s ok, %d failed, %d asked to re-form, %d killed, %d lost%s",
	     r->t_end - r->t0, sum->ok, sum->ok == 1 ? "" : "s", sum->failed, sum->reform,
	     sum->signaled, sum->missing, changed ? "; the job's GPUs changed" : "");
	switch (elastic__run_retry(sum->reform > 0 || changed || r->stop_sent,
				   r->stop_sent, &r->stuck, &r->unplanned, r->max_stuck,
				   r->max_relaunch)) {
	case ELASTIC_RUN_STUCK: {
		char cause[200];
		if (elastic__report_cause(&r->rep, EXIT_REFORM, cause, sizeof(cause)) < 0)
			snprintf(
				cause, sizeof(cause),
				"no rank reported an error of its own (mpirun status %d)",
				r->mstatus);
		_say("%d failures in a row on the same GPUs: giving up; the last: %s (its error lines are above)",
		     r->stuck, cause);
		return RUN_FINISH;
	}
	case ELASTIC_RUN_TOO_MANY:
		_say("relaunched %d times without an order (failures): giving up (--max-relaunch)",
		     r->unplanned - 1);
		return RUN_FINISH;
	default:
		return RUN_LAUNCH;
	}
}

/* FINISH: close the channel and remove the run's files. */
static int _finish(struct run *r)
{
	elastic__prewarm_stop();
	elastic__report_close(&r->rep);
	if (r->have_ctl)
		elastic__ctl_fini(&r->ctl);
	unlink(r->hostfile);
	unlink(r->agent);
	unlink(r->progress);
	unlink(r->leave);
	unlink(r->join);
	unlink(r->mapfile);
	rmdir(r->dir);
	return r->status;
}

int main(int argc, char **argv)
{
	/* zero-filled (bss), not initialised data: its GPU sets are 14 MB,
	 * which an initialiser would write into the executable */
	static struct run r;
	enum run_state s = RUN_LAUNCH;
	int rc;

	if (argc > 1 && strcmp(argv[1], "--agent") == 0)
		return _agent(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "--rank-in-step") == 0)
		return _rank_in_step(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "--rank") == 0)
		return _rank(argc - 2, argv + 2);
	r.status = 1;
	if ((rc = _options(&r, argc, argv)) >= 0 || (rc = _job(&r)) >= 0 ||
	    (rc = _files(&r)) >= 0)
		return rc;

	struct sigaction sa = {.sa_handler = _on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	struct sigaction su = {.sa_handler = _on_usr1};
	sigaction(SIGUSR1, &su, NULL);
	while (s != RUN_FINISH) {
		switch (s) {
		case RUN_LAUNCH:
			s = _launch(&r);
			break;
		case RUN_WATCH:
			s = _watch(&r);
			break;
		default:
			s = _reform(&r);
		}
	}
	return _finish(&r);
}
