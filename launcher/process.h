/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/process.h: elastic-run's process: its clocks and messages, its
 * signals, and the process trees it ends. */
#ifndef ELASTIC_LAUNCHER_PROCESS_H
#define ELASTIC_LAUNCHER_PROCESS_H

#include <signal.h>
#include <sys/types.h>

/* ==== elastic-run's clock and its log lines on stderr. */

/* -v given this many times: say more. */
extern int elastic__verbose;

/* Seconds on the monotonic clock. */
double elastic__now(void);

/* Seconds on the wall clock (the ranks' timings, compared across nodes). */
double elastic__wall(void);

/* Set the environment variable name to the time t, in seconds ("%.6f"). */
void elastic__setenv_time(const char *name, double t);

/* "elastic-run HH:MM:SS.mmm: MESSAGE" on stderr, in one write. */
void elastic__say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line an srun of the launch said of its own, as it comes
 * (elastic_report's on_said). */
struct elastic_srun;
void elastic__say_srun(const struct elastic_srun *s, const char *text);

/* ==== the signals of an elastic-run process (launcher or
 * rank wrapper): what it got, and the child it passes them on to. */

/* The last signal the handlers below took (0: none). */
extern volatile sig_atomic_t elastic__got_signal;
/* elastic-run got SIGUSR1: a re-form is asked for from outside. */
extern volatile sig_atomic_t elastic__usr1_pending;
/* The child (mpirun, or the rank's program) signals are passed on to; -1
 * when none runs. */
extern pid_t elastic__child;
/* The rank wrapper's child is its own fork (a cold rank, or srun into a
 * grant's step), so in the wrapper's process group, which the daemon
 * signals whole (PRRTE's odls kills -pgid): such a child has every signal
 * of the daemon already. A warm rank, forked by the node's zygote, is not. */
extern volatile sig_atomic_t elastic__child_in_group;

/* Record sig and pass it on to a child outside the process group. */
void elastic__on_signal(int sig);

/* SIGHUP (the launch that started the wrapper is over): SIGTERM to the
 * child, then (SIGALRM, 5 s later) SIGKILL. */
void elastic__on_parent_death(int sig);

/* elastic-run's own SIGUSR1: passed on to the ranks when they can take it. */
void elastic__on_usr1(int sig);

/* Send sig to root and every process descended from it (found in /proc, so
 * also those that left root's process group: mpirun's launch agents and
 * their sruns). Returns how many were signalled. */
int elastic__kill_tree(pid_t root, int sig);

/* The same for root's descendants whose command name is comm only ("srun"),
 * root not included. */
int elastic__kill_tree_only(pid_t root, int sig, const char *comm);

#endif
