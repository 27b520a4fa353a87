/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/procsig.c: the signals of an elastic-run process (launcher or rank
 * wrapper): what it got, and the child it passes them on to. */
#include "config.h"

#include <signal.h>
#include <unistd.h>

#include "procsig.h"

volatile sig_atomic_t elastic__got_signal;
volatile sig_atomic_t elastic__usr1_pending;
pid_t elastic__child = -1;
volatile sig_atomic_t elastic__child_in_group;

void elastic__on_parent_death(int sig)
{
	if (elastic__child <= 0)
		return;
	if (sig == SIGHUP) {
		kill(elastic__child, SIGTERM);
		alarm(5);
	} else {
		kill(elastic__child, SIGKILL);
	}
}

void elastic__on_signal(int sig)
{
	elastic__got_signal = sig;
	/* Not twice to a child in the group: a second SIGUSR1, late under load,
	 * is a second request (a planned re-form after the shrink in place that
	 * the first one asked for). */
	if (elastic__child > 0 && !elastic__child_in_group)
		kill(elastic__child, sig);
}

void elastic__on_usr1(int sig)
{
	(void)sig;
	elastic__usr1_pending = 1;
}
