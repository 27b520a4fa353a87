/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/rank.c: the rank wrapper, "elastic-run --rank PROGRAM ARGS" (and
 * --rank-in-step): one GPU per rank, the device check, the program as a
 * child, and its end reported to elastic-run. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devcheck.h"
#include "gpuset.h"
#include "warm_rank.h"
#include "process.h"
#include "rank.h"
#include "report.h"
#include "srunpipe.h"
#include "contract.h"

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
	if (map && lr && elastic__map_find(map, host, &job, gpus, sizeof(gpus)) == 0 &&
	    gpus[0] && strcmp(gpus, "-1") != 0) {
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
	struct sigaction sa = {.sa_handler = elastic__on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGCONT, &sa, NULL);
	/* The wrapper ends with the daemon (or mpirun) that started it: once
	 * that launch is over, its ranks must not run on beside the next one
	 * (Open MPI's mpirun can end on a lost daemon while its local ranks
	 * still run). SIGHUP: the program gets SIGTERM, then SIGKILL after 5 s. */
	struct sigaction hup = {.sa_handler = elastic__on_parent_death};
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
static void _rank_report_send(int ws)
{
	const char *addr = getenv("ELASTIC_RUN_REPORT");

	if (elastic__report_end(WIFSIGNALED(ws) ? ELASTIC_RANK_SIGNALED
						: ELASTIC_RANK_EXITED,
				WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws)) < 0)
		fprintf(stderr, "elastic-run --rank: cannot report to %s\n", addr);
}

/* Where the program writes its own failure (ELASTIC_ERROR_FILE: the Python
 * binding writes an uncaught exception's traceback there): a file of this
 * wrapper's in TMPDIR, sent to elastic-run if the program fails. */
static char _error_file[PATH_MAX];

static void _error_file_set(void)
{
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(_error_file, sizeof(_error_file), "%s/elastic-error.%ld",
			 tmp && *tmp ? tmp : "/tmp", (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(_error_file)) {
		_error_file[0] = '\0';
		unsetenv("ELASTIC_ERROR_FILE");
		return;
	}
	unlink(_error_file);
	setenv("ELASTIC_ERROR_FILE", _error_file, 1);
}

/* Send what the program wrote of its failure, if it failed and wrote it;
 * the file goes either way. Returns 1 if it failed and wrote it. */
static int _error_send(int ws)
{
	const char *addr, *token;
	static char text[65536], line[ELASTIC_REPORT_ERROR_LINE];
	unsigned gen;
	int rank;
	FILE *f;
	size_t n;

	if (!_error_file[0] || !(f = fopen(_error_file, "re")))
		return 0;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	unlink(_error_file);
	text[n] = '\0';
	int how = WIFSIGNALED(ws) ? ELASTIC_RANK_SIGNALED : ELASTIC_RANK_EXITED;
	if (!n || !elastic__report_end_failed(how, WIFSIGNALED(ws) ? WTERMSIG(ws)
								   : WEXITSTATUS(ws)))
		return 0;
	if (elastic__report_to(&addr, &token, &gen, &rank) < 0)
		return 1;
	elastic__report_format_error(line, sizeof(line), token, gen, rank, text);
	if (elastic__report_send(addr, line) < 0)
		fprintf(stderr, "elastic-run --rank: cannot report to %s\n", addr);
	return 1;
}

/* The report, with the signals the wrapper takes held meanwhile: the
 * program is reaped, so there is no one to pass them to, and one arriving
 * in the middle would cut the report's connect or send short (EINTR: a
 * socket with a send timeout is never restarted). The runtime sends SIGTERM
 * to a launch's other ranks as soon as one exits: at a planned re-form
 * every rank exits at once, and a report lost so made a rank that stopped
 * as asked look lost. */
static int _rank_report(int ws)
{
	int sigs[] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGCONT, SIGHUP, SIGALRM};
	sigset_t hold, old;

	sigemptyset(&hold);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&hold, sigs[i]);
	sigprocmask(SIG_BLOCK, &hold, &old);
	int raised = _error_send(ws); /* first: elastic-run has it when the end comes */
	_rank_report_send(ws);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return raised;
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

/* srun's options for a rank in another job's step: one task on the node
 * named next; then the rank is Open MPI's (no PMI of srun's), with this
 * environment, and its failure does not end the step's other tasks. */
static char *const _srun_node[] = {"--overlap", "-N1", "-n1", "-w", NULL};
static char *const _srun_rank[] = {"--mpi=none", "--export=ALL", "--kill-on-bad-exit=0",
				   "--quiet", NULL};

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
	for (char *const *o = _srun_node; *o; o++)
		av[n++] = *o;
	av[n++] = host;
	for (char *const *o = _srun_rank; *o; o++)
		av[n++] = *o;
	av[n++] = self;
	av[n++] = "--rank-in-step";
	for (int i = 0; i < argc; i++)
		av[n++] = argv[i];
	av[n] = NULL;
	elastic__child_in_group = 1;
	int rc = elastic__srun_piped(av, owner, host, ws);
	free(av);
	if (rc < 0)
		return -1;
	/* srun exits with the program's status (a planned re-form's 75
	 * included), and with 128 + N for a program killed by signal N, as
	 * when its grant ends (SIGTERM, then SIGKILL): that one becomes
	 * "killed by signal N" again, a process failure the others heal */
	if (WIFEXITED(*ws) && WEXITSTATUS(*ws) > 128 && WEXITSTATUS(*ws) < 128 + 65)
		*ws = WEXITSTATUS(*ws) - 128; /* a wait status "killed by signal N" */
	return 0;
}

static int _run_cold(char **argv, int *ws);

/* Run the program here: forked by this node's warm interpreter when one
 * serves (warm_rank.h), else as this wrapper's child. */
static int _run_here(char **argv, int *ws)
{
	if (elastic__warm_rank_run(argv, &elastic__child, ws, &elastic__got_signal) == 0)
		return 0;
	return _run_cold(argv, ws);
}

int elastic__rank_in_step_main(int argc, char **argv)
{
	const char *gpu = getenv("ELASTIC_GPU");
	char c[16];

	if (argc < 1 || !gpu) {
		fprintf(stderr,
			"elastic-run --rank-in-step: needs ELASTIC_GPU and a program (internal mode)\n");
		return ELASTIC_EXIT_USAGE;
	}
	elastic__step_started_main();
	snprintf(c, sizeof(c), "%d", _cuda_ordinal(atoi(gpu)));
	setenv("CUDA_VISIBLE_DEVICES", c, 1);
	if (_rank_devcheck() < 0)
		return 1;
	/* the zygote in this job's step on this node forks the rank, if there
	 * is one; this task then ends as the rank did (srun tells the
	 * wrapper), passing srun's signals on */
	struct sigaction sa = {.sa_handler = elastic__on_signal};
	int sigs[] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGCONT}, ws;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	elastic__child_in_group = 0;
	if (_run_here(argv, &ws) < 0)
		return 1;
	/* Said from here too, before this step ends: the srun around it may
	 * wait long for slurmctld to end the step (a restart), and elastic-run
	 * ends a launch whose every rank said how it ended. The wrapper says
	 * it again when srun returns (the same end). */
	_rank_report_send(ws);
	if (WIFSIGNALED(ws)) {
		signal(WTERMSIG(ws), SIG_DFL);
		raise(WTERMSIG(ws));
		return 128 + WTERMSIG(ws);
	}
	return WEXITSTATUS(ws);
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
	elastic__child_in_group = 1;
	if ((elastic__child = fork()) < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "elastic-run --rank: fork: %s\n", strerror(errno));
		return -1;
	}
	if (elastic__child == 0)
		_rank_exec(parent, argv);
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (waitpid(elastic__child, ws, 0) < 0 && errno == EINTR)
		;
	/* reaped: its pid is free for another process (warm_rank.c) */
	elastic__child = -1;
	return 0;
}

/* "--join BASE MAP": started by a growth in place (libelastic's resize.c) as
 * rank BASE + its rank of the new ranks, on the grown set. Takes them off
 * *argc, *argv: 0, or -1 after saying what is wrong. */
static int _rank_join_args(int *argc, char ***argv)
{
	char **av = *argv, *end;

	if (*argc < 1 || strcmp(av[0], "--join"))
		return 0;
	long base = *argc >= 3 ? strtol(av[1], &end, 10) : -1;
	if (base < 0 || *end || !*av[2]) {
		fprintf(stderr,
			"elastic-run --rank --join: needs BASE MAP (internal mode)\n");
		return -1;
	}
	setenv("ELASTIC_RUN_JOIN_BASE", av[1], 1);
	setenv("ELASTIC_RUN_MAP", av[2], 1);
	*argc -= 3;
	*argv += 3;
	return 0;
}

/* End as the program did (wait status ws). A rank that left at a planned
 * shrink in place (reported as such) must end as a process failure that
 * ULFM lets the others survive. PRRTE 5 takes a non-zero exit for an error
 * it makes fatal to the others ("An error occurred in PMIx Event
 * Notification"), and an exit 0 without MPI_Finalize for a process still
 * to be waited for (the others' MPI_Finalize then hangs). A process killed
 * is a failure, as for a lost rank. The same for a program ended from
 * outside whose handler exits 128 + the signal (SIGTERM from Slurm ending
 * a cancelled grant's step): the others heal in place. And for a program
 * that failed on an error it wrote (raised: reported to elastic-run with
 * its status): the others learn of it as of a lost rank, and those that
 * finished the training (in elastic_complete) complete it, where a runtime
 * that ends them all on a non-zero exit (Open MPI 5) would kill them. */
static int _end_as(int ws, int raised)
{
	const char *ip = getenv("ELASTIC_RUN_IN_PLACE");

	if (WIFSIGNALED(ws)) {
		signal(WTERMSIG(ws), SIG_DFL);
		raise(WTERMSIG(ws));
		return 128 + WTERMSIG(ws);
	}
	if (raised || WEXITSTATUS(ws) == ELASTIC_EXIT_LEFT ||
	    (ip && !strcmp(ip, "1") && elastic__report_killed_status(WEXITSTATUS(ws)))) {
		fflush(NULL);
		signal(SIGKILL, SIG_DFL);
		raise(SIGKILL);
	}
	return WEXITSTATUS(ws);
}

/* torchrun's variables, from mpirun's, for a script that reads them before
 * anything of the project's runs (LOCAL_RANK for torch.cuda.set_device,
 * RANK for its logging): a rank joining a growth in place is rank BASE +
 * its rank among the joiners. MASTER_ADDR (the launch's first host) and
 * MASTER_PORT (torchrun's default) only where the user set none: nothing
 * connects there, the world is MPI's. */
static void _torchrun_env(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK"),
		   *n = getenv("OMPI_COMM_WORLD_SIZE");
	const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	const char *ln = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
	const char *base = getenv("ELASTIC_RUN_JOIN_BASE"),
		   *map = getenv("ELASTIC_RUN_MAP");
	long b = base ? atol(base) : 0;
	char v[256];

	if (r) {
		snprintf(v, sizeof(v), "%ld", b + atol(r));
		setenv("RANK", v, 1);
	}
	if (n) {
		snprintf(v, sizeof(v), "%ld", b + atol(n));
		setenv("WORLD_SIZE", v, 1);
	}
	if (lr)
		setenv("LOCAL_RANK", lr, 1);
	if (ln)
		setenv("LOCAL_WORLD_SIZE", ln, 1);
	if (map && *map) {
		snprintf(v, sizeof(v), "%.*s", (int)strcspn(map, "="), map);
		setenv("MASTER_ADDR", v, 0);
	}
	setenv("MASTER_PORT", "29500", 0);
}

int elastic__rank_main(int argc, char **argv)
{
	int ws, rc;

	if (_rank_join_args(&argc, &argv) < 0)
		return ELASTIC_EXIT_USAGE;
	if (argc < 1) {
		fprintf(stderr, "elastic-run --rank: no program (internal mode)\n");
		return ELASTIC_EXIT_USAGE;
	}
	_rank_gpu();
	_torchrun_env();
	unsigned long owner = _rank_owner_elsewhere();
	if (!owner && _rank_devcheck() < 0)
		return 1;
	if ((rc = _rank_signals()) >= 0)
		return rc;
	_error_file_set();
	/* In the step of the job that holds its GPU when that is not this
	 * step's job; else a warm interpreter on this node (warm_rank.h) forks
	 * the rank, or it starts here. */
	if (owner) {
		if (_run_in_step(owner, argv, &ws) < 0)
			return 1;
	} else if (_run_here(argv, &ws) < 0) {
		return 1;
	}
	return _end_as(ws, _rank_report(ws));
}
