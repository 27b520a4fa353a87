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

#include "gpuset.h"
#include "ctlclient.h"
#include "report.h"
#include "prewarm.h"

#define EXIT_REFORM  ELASTIC_EXIT_REFORM /* common/contract.h */
#define EXIT_USAGE   ELASTIC_EXIT_USAGE
#define EXIT_NOALLOC ELASTIC_EXIT_NOALLOC

static int verbose;
static volatile sig_atomic_t got_signal;
static pid_t child = -1;
static struct elastic_ctlclient ctl;
static int have_ctl;

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
	time_t t = time(NULL);
	char ts[16];
	strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&t));
	fprintf(stderr, "elastic-run %s: ", ts);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
		"  -n, --max-relaunch N   give up after N relaunches (default 20)\n"
		"      --max-stuck N      give up after N failures in a row on an unchanged\n"
		"                         GPU set that made no progress (default 3)\n"
		"      --mpirun PATH      the mpirun to use (default: mpirun)\n"
		"      --mpirun-arg ARG   extra mpirun argument (repeatable)\n"
		"      --dry-run          print the GPU set and the mpirun command only\n"
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
static int _discover(struct elastic_gpuset *set, unsigned long jobid,
		     elastic_error_t *err)
{
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
		if (have_ctl && elastic__ctl_released(&ctl, (uint32_t)g))
			continue;
		/* A grant that ended between squeue and scontrol is just gone. */
		if (g && _add_job(set, g, &e) < 0 && verbose)
			_say("grant job %lu skipped: %s", g, e.text);
	}
	free(out);
	return 0;
}

/* ELASTIC_RUN_MAP: "host=job:idx,idx;host=job:idx" for the agent and ranks. */
static char *_map_env(const struct elastic_gpuset *set)
{
	size_t cap = 64 + set->nhosts * (64 + 24 + ELASTIC_GPUSET_MAX_GPUS * 8), used = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (int i = 0; i < set->nhosts; i++) {
		const struct elastic_host *h = &set->host[i];
		used += snprintf(s + used, cap - used, "%s%s=%lu:", i ? ";" : "", h->name,
				 h->job);
		for (int g = 0; g < h->ngpus; g++)
			used += snprintf(s + used, cap - used, "%s%d", g ? "," : "",
					 h->gpu[g]);
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

/* The job's progress: rank 0's libelastic rewrites "STEP SAMPLES TIME" in the
 * file named by ELASTIC_RUN_PROGRESS at most once a second; when the step
 * moved, tell elasticd the step and the samples/s since the last record
 * (elastic-ctl status). Read at most once a second too. */
static void _progress(const char *path)
{
	static double t_read, t_last;
	static unsigned long long step_last = ~0ULL, seen_last;
	static double rate;
	unsigned long long step, seen;
	double t;
	char buf[80];
	int fd;
	ssize_t n;

	if (_now() - t_read < 1.0)
		return;
	t_read = _now();
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return; /* no record yet */
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu %lf", &step, &seen, &t) != 3 || step == step_last)
		return;
	/* the rate between two records, by the writer's clock */
	if (step_last != ~0ULL && seen >= seen_last && t > t_last)
		rate = (double)(seen - seen_last) / (t - t_last);
	step_last = step, seen_last = seen, t_last = t;
	elastic__ctl_status(&ctl, step, rate, _say);
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
	if (_map_find(map, argv[0], &job, gpus, sizeof(gpus)) < 0) {
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

/* Start the program as this wrapper's child and wait for it. */
static int _run_cold(char **argv, int *ws)
{
	pid_t parent = getpid();
	if ((child = fork()) < 0) {
		fprintf(stderr, "elastic-run --rank: fork: %s\n", strerror(errno));
		return -1;
	}
	if (child == 0) {
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
		/* A re-form asked for before the program is ready (a Python rank
		 * spends seconds importing torch before elastic_init) must wait,
		 * not kill it: SIGUSR1 stays blocked, hence pending, across exec
		 * until libelastic has its handler and unblocks it. */
		sigset_t usr1;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		execvp(argv[0], argv);
		fprintf(stderr, "elastic-run: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	while (waitpid(child, ws, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* Rank wrapper: "elastic-run --rank PROGRAM ARGS": one GPU per rank, by the
 * rank's local rank among the GPUs of its host. */
static int _rank(int argc, char **argv)
{
	const char *map = getenv("ELASTIC_RUN_MAP");
	const char *host = getenv("SLURMD_NODENAME");
	const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	char gpus[512], hn[256];
	unsigned long job;

	if (argc < 1) {
		fprintf(stderr, "elastic-run --rank: no program (internal mode)\n");
		return EXIT_USAGE;
	}
	if (!host) {
		gethostname(hn, sizeof(hn));
		host = hn;
	}
	if (map && lr && _map_find(map, host, &job, gpus, sizeof(gpus)) == 0 && gpus[0] &&
	    strcmp(gpus, "-1") != 0) {
		int idx[ELASTIC_GPUSET_MAX_GPUS], n = elastic__parse_idx(gpus, idx, 64);
		int l = atoi(lr);
		if (n > 0) {
			char v[16];
			snprintf(v, sizeof(v), "%d", idx[l % n]);
			setenv("CUDA_VISIBLE_DEVICES", v, 1);
			setenv("ELASTIC_GPU", v, 1);
		}
	}
	/* Run the program as a child so that its end can be reported: mpirun's
	 * own status says nothing under --with-ft ulfm. */
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
	/* A warm interpreter on this node (prewarm.h) forks the rank, or it
	 * starts here. */
	int ws;
	if (elastic__prewarm_run(argv, &child, &ws, &got_signal) < 0 &&
	    _run_cold(argv, &ws) < 0)
		return 1;
	const char *addr = getenv("ELASTIC_RUN_REPORT"),
		   *token = getenv("ELASTIC_RUN_TOKEN");
	const char *gen = getenv("ELASTIC_RUN_GEN"),
		   *rank = getenv("OMPI_COMM_WORLD_RANK");
	if (addr && token && gen && rank) {
		char line[200];
		elastic__report_format(line, sizeof(line), token,
				       (unsigned)strtoul(gen, NULL, 10), atoi(rank),
				       WIFSIGNALED(ws) ? ELASTIC_RANK_SIGNALED
						       : ELASTIC_RANK_EXITED,
				       WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
		if (elastic__report_send(addr, line) < 0)
			fprintf(stderr, "elastic-run --rank: cannot report to %s\n",
				addr);
	}
	if (WIFSIGNALED(ws)) {
		signal(WTERMSIG(ws), SIG_DFL);
		raise(WTERMSIG(ws));
		return 128 + WTERMSIG(ws);
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
	if (child > 0)
		kill(child, sig);
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

int main(int argc, char **argv)
{
	static struct elastic_gpuset set, now;
	struct elastic_request req;
	char self[PATH_MAX], dir[PATH_MAX], hostfile[PATH_MAX + 16], agent[PATH_MAX + 32];
	char progress[PATH_MAX + 32];
	const char *mpirun = "mpirun", *extra[32];
	int nextra = 0, max_relaunch = 20, max_stuck = 3, dry = 0;
	unsigned long jobid;
	elastic_error_t err;
	int i;

	if (argc > 1 && strcmp(argv[1], "--agent") == 0)
		return _agent(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "--rank") == 0)
		return _rank(argc - 2, argv + 2);

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			_usage(stdout);
			return 0;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			verbose++;
		} else if (strcmp(a, "--dry-run") == 0) {
			dry = 1;
		} else if ((strcmp(a, "-n") == 0 || strcmp(a, "--max-relaunch") == 0 ||
			    strcmp(a, "--max-stuck") == 0 || strcmp(a, "--mpirun") == 0 ||
			    strcmp(a, "--mpirun-arg") == 0)) {
			if (i + 1 >= argc) {
				fprintf(stderr,
					"elastic-run: %s needs a value (try --help)\n",
					a);
				return EXIT_USAGE;
			}
			const char *v = argv[++i];
			if (strcmp(a, "--mpirun") == 0) {
				mpirun = v;
			} else if (strcmp(a, "--mpirun-arg") == 0) {
				if (nextra >= 32) {
					fprintf(stderr,
						"elastic-run: at most 32 --mpirun-arg\n");
					return EXIT_USAGE;
				}
				extra[nextra++] = v;
			} else {
				char *end;
				long x = strtol(v, &end, 10);
				if (*end || end == v || x < 0 || x > 100000) {
					fprintf(stderr,
						"elastic-run: %s %s: not an integer in [0, 100000]\n",
						a, v);
					return EXIT_USAGE;
				}
				if (strcmp(a, "--max-stuck") == 0)
					max_stuck = (int)x;
				else
					max_relaunch = (int)x;
			}
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
	const char *jid = getenv("SLURM_JOB_ID");
	char *end;
	if (!jid || !*jid) {
		fprintf(stderr,
			"elastic-run: not inside a Slurm allocation (SLURM_JOB_ID is unset): run it from an sbatch script or an salloc shell\n");
		return EXIT_NOALLOC;
	}
	jobid = strtoul(jid, &end, 10);
	if (*end || !jobid) {
		fprintf(stderr, "elastic-run: SLURM_JOB_ID=%s is not a job id\n", jid);
		return EXIT_NOALLOC;
	}
	if (elastic_request_from_env(&req, NULL, &err) < 0) {
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
		if (elastic__ctl_init(&ctl, ctlspec, (uint32_t)jobid, &err) < 0) {
			fprintf(stderr, "elastic-run: %s\n", err.text);
			return EXIT_USAGE;
		}
		have_ctl = 1;
	}
	/* warm interpreters for a Python program's relaunches (prewarm.h) */
	elastic__prewarm_setup(argv + i, jobid, verbose, _say);

	/* The agent and the rank wrapper are this binary. */
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "elastic-run: cannot find its own path: %s\n",
			strerror(errno));
		return 1;
	}
	self[sl] = '\0';
	snprintf(dir, sizeof(dir), "%s/elastic-run.%lu.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", jobid);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "elastic-run: mkdtemp %s: %s\n", dir, strerror(errno));
		return 1;
	}
	snprintf(hostfile, sizeof(hostfile), "%s/hostfile", dir);
	snprintf(agent, sizeof(agent), "%s/agent", dir);
	snprintf(progress, sizeof(progress), "%s/progress", dir);
	setenv("ELASTIC_RUN_PROGRESS", progress, 1);
	/* PRRTE runs the agent as "AGENT HOST CMD": a script naming our mode. */
	FILE *af = fopen(agent, "w");
	if (!af || fprintf(af, "#!/bin/sh\nexec '%s' --agent \"$@\"\n", self) < 0 ||
	    fclose(af) != 0 || chmod(agent, 0755) < 0) {
		fprintf(stderr, "elastic-run: cannot write %s: %s\n", agent,
			strerror(errno));
		return 1;
	}

	static struct elastic_report rep;
	if (elastic__report_open(&rep, &err) < 0) {
		fprintf(stderr, "elastic-run: %s\n", err.text);
		return 1;
	}
	setenv("ELASTIC_RUN_REPORT", rep.addr, 1);
	setenv("ELASTIC_RUN_TOKEN", rep.token, 1);

	struct sigaction sa = {.sa_handler = _on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);

	int launches = 0, stuck = 0, status = 1;
	double t_end = 0;
	for (;;) {
		char desc[2048], np[16];
		if (_discover(&set, jobid, &err) < 0) {
			_say("cannot find this job's GPUs: %s", err.text);
			status = 1;
			break;
		}
		elastic__gpuset_trim(&set, &req);
		if (have_ctl) {
			elastic__ctl_releases_done(&ctl);
			ctl.gpus = set.total;
			elastic__ctl_poll(&ctl, 0, _say);
		}
		if (set.total < req.min_gpus) {
			_say("only %d GPU%s usable, below the job's minimum of %ld: giving up",
			     set.total, set.total == 1 ? "" : "s", req.min_gpus);
			status = 1;
			break;
		}
		elastic__gpuset_describe(&set, desc, sizeof(desc));
		if (elastic__gpuset_write_hostfile(&set, hostfile, &err) < 0) {
			_say("%s", err.text);
			break;
		}
		char *map = _map_env(&set);
		if (!map) {
			_say("out of memory");
			break;
		}
		setenv("ELASTIC_RUN_MAP", map, 1);
		free(map);
		snprintf(np, sizeof(np), "%d", set.total);

		const char *av[64 + 32];
		int n = 0;
		av[n++] = mpirun;
		av[n++] = "--with-ft";
		av[n++] = "ulfm";
		av[n++] = "--bind-to";
		av[n++] = "none";
		av[n++] = "--hostfile";
		av[n++] = hostfile;
		av[n++] = "--prtemca";
		av[n++] = "plm";
		av[n++] = "ssh";
		av[n++] = "--prtemca";
		av[n++] = "plm_ssh_agent";
		av[n++] = agent;
		av[n++] = "--prtemca";
		av[n++] = "ras";
		av[n++] = "^slurm";
		av[n++] = "-np";
		av[n++] = np;
		for (int e = 0; e < nextra; e++)
			av[n++] = extra[e];
		av[n++] = self;
		av[n++] = "--rank";
		for (int a = i; a < argc && n < 64 + 30; a++)
			av[n++] = argv[a];
		av[n] = NULL;

		if (launches == 0)
			_say("job %lu: %d rank%s on %s", jobid, set.total,
			     set.total == 1 ? "" : "s", desc);
		else
			_say("re-form %d: %d rank%s on %s (%.0f ms after the previous mpirun ended)",
			     launches, set.total, set.total == 1 ? "" : "s", desc,
			     (_now() - t_end) * 1e3);
		if (dry || verbose > 1) {
			fprintf(stderr, "elastic-run: ");
			for (int a = 0; av[a]; a++)
				fprintf(stderr, "%s ", av[a]);
			fprintf(stderr, "\n");
			if (dry) {
				status = 0;
				break;
			}
		}
		char gen[16];
		if (elastic__report_begin(&rep, set.total) < 0) {
			_say("out of memory");
			break;
		}
		snprintf(gen, sizeof(gen), "%u", rep.gen);
		setenv("ELASTIC_RUN_GEN", gen, 1);
		elastic__prewarm_launch(&set, t_end); /* zygotes ahead of need */
		double t0 = _now();
		child = fork();
		if (child < 0) {
			_say("fork: %s", strerror(errno));
			break;
		}
		if (child == 0) {
			execvp(av[0], (char **)av);
			fprintf(stderr, "elastic-run: cannot run %s: %s\n", av[0],
				strerror(errno));
			_exit(127);
		}
		/* Wait for mpirun while taking the ranks' reports. */
		int ws, stop_sent = 0;
		for (;;) {
			elastic__report_poll(&rep, have_ctl ? 50 : 200);
			pid_t w = waitpid(child, &ws, WNOHANG);
			if (w == child || (w < 0 && errno != EINTR))
				break;
			/* An order that changes the job's GPUs: the ranks stop at
			 * their next committed step (libelastic acts on SIGUSR1)
			 * and the job re-forms on the new set. */
			if (have_ctl)
				_progress(progress);
			if (have_ctl && elastic__ctl_poll(&ctl, 50, _say) && !stop_sent &&
			    _discover(&now, jobid, &err) == 0) {
				elastic__gpuset_trim(&now, &req);
				if (!_same_set(&set, &now)) {
					_say("asking the %d ranks to re-form at the next step boundary (SIGUSR1)",
					     set.total);
					kill(child, SIGUSR1);
					stop_sent = 1;
				}
			}
		}
		child = -1;
		t_end = _now();
		/* Reports sent just before the ranks ended may still be in flight. */
		for (double until = _now() + 0.5; _now() < until;) {
			struct elastic_report_summary q;
			elastic__report_summary(&rep, EXIT_REFORM, &q);
			if (!q.missing || elastic__report_poll(&rep, 100) == 0)
				break;
		}
		int mstatus = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
		struct elastic_report_summary sum;
		elastic__report_summary(&rep, EXIT_REFORM, &sum);
		launches++;
		if (verbose)
			_say("mpirun status %d; ranks: %d ok, %d failed, %d re-form, %d signalled, %d silent",
			     mstatus, sum.ok, sum.failed, sum.reform, sum.signaled,
			     sum.missing);
		/* Finished: some ranks ended the program normally and none failed
		 * (ranks lost on the way were healed in place by ULFM). */
		if (sum.ok > 0 && sum.failed == 0 && sum.reform == 0) {
			status = 0;
			_say("job %lu: finished (%d launch%s, %d of %d ranks at the end)",
			     jobid, launches, launches == 1 ? "" : "es", sum.ok,
			     set.total);
			break;
		}
		status = sum.failed ? 1 : mstatus ? mstatus : 1;
		if (got_signal == SIGTERM || got_signal == SIGINT) {
			_say("stopped by signal %d; not re-forming", (int)got_signal);
			break;
		}
		if (mstatus == 127) {
			_say("%s could not be started (status 127)", mpirun);
			break;
		}
		if (_discover(&now, jobid, &err) == 0)
			elastic__gpuset_trim(&now, &req);
		int changed = !_same_set(&set, &now);
		_say("mpirun ended after %.1f s: %d rank%s ok, %d failed, %d asked to re-form, %d killed, %d lost%s",
		     t_end - t0, sum.ok, sum.ok == 1 ? "" : "s", sum.failed, sum.reform,
		     sum.signaled, sum.missing,
		     changed ? "; the job's GPUs changed" : "");
		if (sum.reform > 0 || changed || stop_sent)
			stuck = 0;
		else if (++stuck > max_stuck) {
			_say("%d failures in a row on the same GPUs: giving up", stuck);
			break;
		}
		if (launches > max_relaunch) {
			_say("relaunched %d times: giving up (--max-relaunch)",
			     launches - 1);
			break;
		}
	}
	elastic__prewarm_stop();
	elastic__report_close(&rep);
	if (have_ctl)
		elastic__ctl_fini(&ctl);
	unlink(hostfile);
	unlink(agent);
	unlink(progress);
	rmdir(dir);
	return status;
}
