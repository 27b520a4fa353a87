/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctld_gate.h: may elasticd call slurmctld now? The pure
 * decision in front of every libslurm call (slurm.c carries it out). */
#ifndef ELASTICD_CTLD_GATE_H
#define ELASTICD_CTLD_GATE_H

#include <stdint.h>

/*
 * Design note: a loop that never waits on an absent slurmctld
 * ============================================================
 * libslurm retries a connection to slurmctld once a second for
 * MessageTimeout (10 s by default) before a call fails. elasticd calls it
 * from the loop that also takes jobs' messages, elastic-ctl and scrapes, so
 * one call made while slurmctld restarts would hold all of them.
 *
 * So a call is made only when slurmctld answered a moment ago
 * (ED_GATE_FRESH_MS). Otherwise slurmctld is pinged first (REQUEST_PING:
 * one connection, no retry, nothing logged by slurmctld), by a thread of
 * its own, for the answer at most ED_GATE_WAIT_MS: sent ahead when a tick
 * or a look is due (ed_slurm_ready), the loop serving meanwhile, or, for a
 * call made at any other time, waited for by the caller. No
 * answer by then (refused, or a slurmctld that accepts and does not
 * answer): the call is refused at once with "slurmctld does not answer",
 * and so is every call while that ping is out, or within ED_GATE_RETRY_MS
 * of a ping that failed. A call that fails makes the next one ping first.
 */

#define ED_GATE_FRESH_MS 20
#define ED_GATE_WAIT_MS	 300
#define ED_GATE_RETRY_MS 1000

struct ed_gate {
	int down;		/* the last ping failed, or is still out past the wait */
	int pinging;		/* a ping is out */
	uint64_t answered_ms;	/* when slurmctld last answered (0: ping first) */
	uint64_t pinged_ms;	/* when the last ping went out */
	uint64_t down_since_ms; /* when it stopped answering (while down) */
};

enum ed_gate_do {
	ED_GATE_CALL,	/* call slurmctld */
	ED_GATE_PING,	/* ping it first (ed_gate_pinged), then decide again */
	ED_GATE_REFUSE, /* fail the call at once */
};

enum ed_gate_do ed_gate_decide(const struct ed_gate *g, uint64_t now_ms);
/* A ping went out at now_ms. */
void ed_gate_pinged(struct ed_gate *g, uint64_t now_ms);
/* The ping came back at now_ms: slurmctld answered (1) or not (0). */
void ed_gate_ping_back(struct ed_gate *g, int answered, uint64_t now_ms);
/* ED_GATE_WAIT_MS passed with the ping still out. */
void ed_gate_wait_over(struct ed_gate *g, uint64_t now_ms);
/* A call made at ED_GATE_CALL succeeded (1) or failed (0). */
void ed_gate_call_back(struct ed_gate *g, int ok, uint64_t now_ms);

#endif
