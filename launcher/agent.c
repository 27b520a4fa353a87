/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/agent.c: "elastic-run --agent HOST CMD", the launch agent PRRTE
 * runs to start a daemon on HOST inside the Slurm job holding GPUs there. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "ldpath.h"
#include "contract.h"
#include "process.h"
#include "gpuset.h"
#include "srunpipe.h"

int elastic__agent_main(int argc, char **argv)
{
	const char *map = getenv("ELASTIC_RUN_MAP");
	unsigned long job;
	char gpus[512], jobopt[48], *cmd;
	size_t len = 1;

	if (argc < 2 || !map) {
		fprintf(stderr,
			"elastic-run --agent: needs HOST CMD and ELASTIC_RUN_MAP (internal mode, used by mpirun)\n");
		return ELASTIC_EXIT_USAGE;
	}
	/* a node added to the running mpirun (growth in place) is in the
	 * map elastic-run wrote then, not in the one mpirun started with */
	char fmap[8192] = "";
	const char *mf = getenv("ELASTIC_RUN_MAP_FILE");
	FILE *f;
	int found = elastic__map_find(map, argv[0], &job, gpus, sizeof(gpus)) == 0;
	if (!found && mf && (f = fopen(mf, "r"))) {
		if (!fgets(fmap, sizeof(fmap), f))
			fmap[0] = '\0';
		fclose(f);
		fmap[strcspn(fmap, "\n")] = '\0';
		found = elastic__map_find(fmap, argv[0], &job, gpus, sizeof(gpus)) == 0;
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
	/* the ranks there hand a warm interpreter their environment without
	 * what the runtime adds to LD_LIBRARY_PATH for its daemon (ldpath.h) */
	char added[1024], *named = NULL;
	if (elastic__ld_added(cmd, added, sizeof(added)) == 0 &&
	    asprintf(&named, "ELASTIC_RUN_LD_ADDED=%s;export ELASTIC_RUN_LD_ADDED;%s",
		     added, cmd) > 0) {
		free(cmd);
		cmd = named;
	}
	/* the step says when it began (srunpipe.h): an srun whose step cannot
	 * be created waits without a word */
	char self[PATH_MAX], *told = NULL;
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl > 0 && (self[sl] = '\0', !strchr(self, '\'')) &&
	    asprintf(&told, "'%s' --step-started;%s", self, cmd) > 0) {
		free(cmd);
		cmd = told;
	}
	snprintf(jobopt, sizeof(jobopt), "--jobid=%lu", job);
	char *sargv[] = {
		"srun", jobopt,	 "--overlap", "-N1", "-n1", "--kill-on-bad-exit=0",
		"-w",	argv[0], "/bin/sh",   "-c",  cmd,   NULL};
	/* srun is this agent's child, so that its words reach elastic-run:
	 * the signals PRRTE or elastic-run send the agent are passed on */
	struct sigaction sa = {.sa_handler = elastic__on_signal};
	int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}, ws;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	elastic__child_in_group = 0;
	if (elastic__srun_piped(sargv, job, argv[0], &ws) < 0)
		return 127;
	if (WIFSIGNALED(ws)) {
		signal(WTERMSIG(ws), SIG_DFL);
		raise(WTERMSIG(ws));
		return 128 + WTERMSIG(ws);
	}
	return WEXITSTATUS(ws);
}
