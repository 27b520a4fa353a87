/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/ldpath.h: the library path the MPI runtime adds for its remote
 * daemons (pure). PRRTE starts a daemon on another node with
 * "LD_LIBRARY_PATH=<its prefix's lib dirs>:$LD_LIBRARY_PATH" (Debian's Open
 * MPI always does), so the ranks there see a longer LD_LIBRARY_PATH than
 * the job's environment: a warm interpreter started from the job's
 * environment would refuse them. The launch agent names what was added
 * (ELASTIC_RUN_LD_ADDED in the daemon's environment) and the rank wrapper
 * hands the zygote its environment without it. */
#ifndef ELASTIC_LAUNCHER_LDPATH_H
#define ELASTIC_LAUNCHER_LDPATH_H

#include <stddef.h>

/* What the daemon command cmd (a shell command line) prepends to
 * LD_LIBRARY_PATH ("X" of "LD_LIBRARY_PATH=X:$LD_LIBRARY_PATH"), into out:
 * 0, or -1 when it prepends nothing, out is too small, or X holds a
 * character other than letters, digits and "/._:+-". */
int elastic__ld_added(const char *cmd, char *out, size_t len);

/* value (an LD_LIBRARY_PATH) without added and its ':' at its front: a
 * pointer into value, or value itself when it does not start so. */
const char *elastic__ld_strip(const char *value, const char *added);

#endif
