/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/options.c: setting up a run: the options, the job (its controller,
 * what its MPI runtime can do in place) and the run's files. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "prewarm.h"
#include "process.h"

static int _runtime_in_place(const char *mpirun, char *desc, size_t len, int *majorp);
static int _runtime_grows(int major);

/* Setting up ends the program with code. */
static enum run_setup _exit_with(int *code, int c)
{
	*code = c;
	return RUN_SETUP_EXIT;
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
		"      --max-failures N   end the job when a launch fails on an error of the\n"
		"                         program's own (an exit status, a Python exception)\n"
		"                         N+1 times with no step committed in between\n"
		"                         (default 1: one retry)\n"
		"      --launch-timeout S a launch that commits no step in S seconds (default\n"
		"                         600; 0: no bound) is ended and launched again;\n"
		"                         once a launch committed, the bound is 3 times the\n"
		"                         slowest first commit so far, at least 30 s\n"
		"      --replace-after S  re-form onto GPUs whose rank failed while the others\n"
		"                         healed in place after S seconds (1 to 100000,\n"
		"                         default 2; twice as long for each repeat within\n"
		"                         10 minutes)\n"
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

/* A count or a number of seconds: an integer in [0, 100000]: 0, or -1 (said). */
static int _count_opt(const char *opt, const char *v, int *out)
{
	char *end;
	long x = strtol(v, &end, 10);
	if (*end || end == v || x < 0 || x > 100000) {
		fprintf(stderr, "elastic-run: %s %s: not an integer in [0, 100000]\n",
			opt, v);
		return -1;
	}
	*out = (int)x;
	return 0;
}

/* A number of seconds from lo to hi (within _count_opt's range): 0, or -1
 * (said). */
static int _seconds_opt(const char *opt, const char *v, int lo, int hi, int *out)
{
	int x;

	if (_count_opt(opt, v, &x) < 0)
		return -1;
	if (x < lo || x > hi) {
		fprintf(stderr, "elastic-run: %s takes %d to %d seconds, not '%s'\n", opt,
			lo, hi, v);
		return -1;
	}
	*out = x;
	return 0;
}

/* An option that takes a value: a is the option, v its value: 0, or -1
 * (a usage error, said). */
static int _value_opt(struct run_opts *o, const char *a, const char *v)
{
	if (strcmp(a, "--mpirun") == 0) {
		o->mpirun = v;
	} else if (strcmp(a, "--mpirun-arg") == 0) {
		if (o->nextra >= 32) {
			fprintf(stderr, "elastic-run: at most 32 --mpirun-arg\n");
			return -1;
		}
		o->extra[o->nextra++] = v;
	} else if (strcmp(a, "--max-stuck") == 0) {
		return _count_opt(a, v, &o->max_stuck);
	} else if (strcmp(a, "--max-failures") == 0) {
		return _count_opt(a, v, &o->max_failures);
	} else if (strcmp(a, "--launch-timeout") == 0) {
		return _count_opt(a, v, &o->launch_timeout);
	} else if (strcmp(a, "--replace-after") == 0) {
		return _seconds_opt(a, v, 1, 100000, &o->replace_after);
	} else if (strcmp(a, "--grant-wait") == 0) {
		return _seconds_opt(a, v, 0, 600, &o->grant_wait);
	} else {
		return _count_opt(a, v, &o->max_relaunch);
	}
	return 0;
}

enum run_setup elastic__options(struct run_opts *o, int argc, char **argv, int *code)
{
	int i;

	o->mpirun = "mpirun";
	o->max_relaunch = 20;
	o->max_stuck = 3;
	o->max_failures = 1;
	o->launch_timeout = 600;
	o->grant_wait = 3;
	o->replace_after = ELASTIC_REPLACE_AFTER_S;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			_usage(stdout);
			return _exit_with(code, 0);
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			printf("elastic-run %s\n", PACKAGE_VERSION);
			return _exit_with(code, 0);
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			elastic__verbose++;
		} else if (strcmp(a, "--dry-run") == 0) {
			o->dry = 1;
		} else if (strcmp(a, "--runtime") == 0) {
			char rt[128];
			int major = 0,
			    ip = _runtime_in_place(o->mpirun, rt, sizeof(rt), &major);
			printf("%s: a lost node %s\n", rt,
			       ip ? "heals in place" : "ends mpirun (re-form)");
			printf("%s: a grant on a new node %s\n", rt,
			       _runtime_grows(major) ? "joins in place"
						     : "re-forms the job");
			return _exit_with(code, 0);
		} else if ((strcmp(a, "-n") == 0 || strcmp(a, "--max-relaunch") == 0 ||
			    strcmp(a, "--max-stuck") == 0 ||
			    strcmp(a, "--max-failures") == 0 ||
			    strcmp(a, "--launch-timeout") == 0 ||
			    strcmp(a, "--mpirun") == 0 ||
			    strcmp(a, "--grant-wait") == 0 ||
			    strcmp(a, "--replace-after") == 0 ||
			    strcmp(a, "--mpirun-arg") == 0)) {
			if (i + 1 >= argc) {
				fprintf(stderr,
					"elastic-run: %s needs a value (try --help)\n",
					a);
				return _exit_with(code, EXIT_USAGE);
			}
			if (_value_opt(o, a, argv[++i]) < 0)
				return _exit_with(code, EXIT_USAGE);
		} else if (a[0] == '-') {
			fprintf(stderr, "elastic-run: unknown option '%s' (try --help)\n",
				a);
			return _exit_with(code, EXIT_USAGE);
		} else {
			break;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "elastic-run: no program given (try --help)\n");
		return _exit_with(code, EXIT_USAGE);
	}
	o->prog = argv + i;
	return RUN_SETUP_GO_ON;
}

/* Does the MPI runtime survive the loss of one of its daemons, so that the
 * ranks lost with a node heal in place? Open MPI 6 (PRRTE 5) does under
 * --with-ft ulfm; 5.0.x (PRRTE 3) aborts the whole mpirun. Asked once from
 * `mpirun --version` ("mpirun (Open MPI) 6.0.0rc2"); ELASTIC_RUN_IN_PLACE
 * =0/1 overrides it. */
static int _runtime_in_place(const char *mpirun, char *desc, size_t len, int *majorp)
{
	const char *o = getenv("ELASTIC_RUN_IN_PLACE");
	char cmd[PATH_MAX + 32], line[256];
	int major = 0;

	snprintf(desc, len, "unknown MPI runtime");
	snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", mpirun);
	FILE *f = strchr(mpirun, '\'') ? NULL : popen(cmd, "r");
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
enum run_setup elastic__job_setup(struct run_job *j, const struct run_opts *o, int *code)
{
	const char *jid = getenv("SLURM_JOB_ID");
	char *end;
	elastic_error_t err;

	if (!jid || !*jid) {
		fprintf(stderr,
			"elastic-run: not inside a Slurm allocation (SLURM_JOB_ID is unset): run it from an sbatch script or an salloc shell\n");
		return _exit_with(code, EXIT_NOALLOC);
	}
	j->jobid = strtoul(jid, &end, 10);
	if (*end || !j->jobid) {
		fprintf(stderr, "elastic-run: SLURM_JOB_ID=%s is not a job id\n", jid);
		return _exit_with(code, EXIT_NOALLOC);
	}
	if (elastic_request_from_env(&j->req, NULL, &err) < 0) {
		fprintf(stderr, "elastic-run: %s\n", err.text);
		return _exit_with(code, EXIT_USAGE);
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
		if (elastic__ctl_init(&j->ctl, ctlspec, (uint32_t)j->jobid, &err) < 0) {
			fprintf(stderr, "elastic-run: %s\n", err.text);
			return _exit_with(code, EXIT_USAGE);
		}
		elastic__orders_init(&j->orders, (uint32_t)j->jobid);
		j->have_ctl = 1;
	}
	/* warm interpreters for a Python program's relaunches (prewarm.h) */
	elastic__prewarm_setup(o->prog, j->jobid, elastic__verbose, elastic__say);
	char rt[128];
	int major = 0;
	j->in_place = _runtime_in_place(o->mpirun, rt, sizeof(rt), &major);
	j->grow_in_place = _runtime_grows(major);
	/* the ranks' libelastic follows the same word (its snapshot default) */
	setenv("ELASTIC_RUN_IN_PLACE", j->in_place ? "1" : "0", 1);
	if (elastic__verbose)
		elastic__say("MPI runtime: %s: a lost node %s", rt,
			     j->in_place ? "heals in place (the survivors go on)"
					 : "ends mpirun (re-form from the snapshot)");
	if (elastic__verbose)
		elastic__say(
			"MPI runtime: a grant on a new node %s",
			j->grow_in_place
				? "joins in place (new ranks started, none restarted)"
				: "re-forms the job (every rank restarts)");
	return RUN_SETUP_GO_ON;
}

/* The run's directory: the hostfile, the launch agent (this binary, as
 * PRRTE runs it: "AGENT HOST CMD"), the progress record; and the socket
 * the ranks report their end to. */
enum run_setup elastic__files_setup(struct run_files *f, unsigned long jobid,
				    struct elastic_progress *progress,
				    struct elastic_report *rep, int *code)
{
	elastic_error_t err;
	ssize_t sl = readlink("/proc/self/exe", f->self, sizeof(f->self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "elastic-run: cannot find its own path: %s\n",
			strerror(errno));
		return _exit_with(code, 1);
	}
	f->self[sl] = '\0';
	snprintf(f->dir, sizeof(f->dir), "%s/elastic-run.%lu.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", jobid);
	if (!mkdtemp(f->dir)) {
		fprintf(stderr, "elastic-run: mkdtemp %s: %s\n", f->dir, strerror(errno));
		return _exit_with(code, 1);
	}
	snprintf(f->hostfile, sizeof(f->hostfile), "%s/hostfile", f->dir);
	snprintf(f->agent, sizeof(f->agent), "%s/agent", f->dir);
	snprintf(f->progress, sizeof(f->progress), "%s/progress", f->dir);
	progress->path = f->progress;
	setenv("ELASTIC_RUN_PROGRESS", f->progress, 1);
	snprintf(f->leave, sizeof(f->leave), "%s/leave", f->dir);
	snprintf(f->join, sizeof(f->join), "%s/join", f->dir);
	snprintf(f->mapfile, sizeof(f->mapfile), "%s/map", f->dir);
	/* the number of the last request (SIGUSR1) to the ranks: libelastic
	 * drops a late copy of one it took (elastic__ask_taken) */
	snprintf(f->ask, sizeof(f->ask), "%s/ask", f->dir);
	setenv("ELASTIC_RUN_ASK", f->ask, 1);
	/* the agent finds a node added to a running mpirun there */
	setenv("ELASTIC_RUN_MAP_FILE", f->mapfile, 1);
	FILE *af = fopen(f->agent, "w");
	if (!af || fprintf(af, "#!/bin/sh\nexec '%s' --agent \"$@\"\n", f->self) < 0 ||
	    fclose(af) != 0 || chmod(f->agent, 0755) < 0) {
		fprintf(stderr, "elastic-run: cannot write %s: %s\n", f->agent,
			strerror(errno));
		return _exit_with(code, 1);
	}
	if (elastic__report_open(rep, &err) < 0) {
		fprintf(stderr, "elastic-run: %s\n", err.text);
		return _exit_with(code, 1);
	}
	rep->on_said = elastic__say_srun;
	setenv("ELASTIC_RUN_REPORT", rep->addr, 1);
	setenv("ELASTIC_RUN_TOKEN", rep->token, 1);
	return RUN_SETUP_GO_ON;
}
