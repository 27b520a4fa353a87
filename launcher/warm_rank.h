/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/warm_rank.h: the rank wrapper's side of the warm interpreters: the
 * zygote elastic-run keeps on its node (prewarm.h) forks the rank instead of
 * the wrapper starting python3 cold. */
#ifndef ELASTIC_LAUNCHER_WARM_RANK_H
#define ELASTIC_LAUNCHER_WARM_RANK_H

#include <signal.h>
#include <sys/types.h>

/* The rank wrapper, instead of fork + exec of argv: have this node's zygote
 * fork the rank. A zygote listed in ELASTIC_RUN_WARM_LIVE is waited for
 * (while srun starts it and while it imports) instead of starting cold.
 * Returns 0 when it ran there: *child held its pid while it ran (signals
 * to relay; *pending, when nonzero, is relayed once the pid is known), *ws
 * its wait status; also 0, with *ws "killed by" that signal, when SIGTERM
 * or SIGINT came (or the launch ended) while it waited. Returns -1 when
 * the caller must start the program itself (no zygote, or it refused:
 * said on stderr with ELASTIC_RUN_VERBOSE). Sets ELASTIC_RUN_T_RANK (now)
 * in either case. */
int elastic__warm_rank_run(char **argv, volatile pid_t *child, int *ws,
			   volatile sig_atomic_t *pending);

#endif
