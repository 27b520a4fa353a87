/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctld_gate.c: may elasticd call slurmctld now (design note
 * in ctld_gate.h). Pure: no clock, no libslurm. */
#include "config.h"

#include "ctld_gate.h"

enum ed_gate_do ed_gate_decide(const struct ed_gate *g, uint64_t now_ms)
{
	if (g->pinging)
		return ED_GATE_REFUSE;
	if (g->down && now_ms - g->pinged_ms < ED_GATE_RETRY_MS)
		return ED_GATE_REFUSE;
	if (!g->down && g->answered_ms && now_ms - g->answered_ms < ED_GATE_FRESH_MS)
		return ED_GATE_CALL;
	return ED_GATE_PING;
}

void ed_gate_pinged(struct ed_gate *g, uint64_t now_ms)
{
	g->pinging = 1;
	g->pinged_ms = now_ms;
}

static void _down(struct ed_gate *g, uint64_t now_ms)
{
	if (!g->down)
		g->down_since_ms = now_ms;
	g->down = 1;
}

void ed_gate_ping_back(struct ed_gate *g, int answered, uint64_t now_ms)
{
	g->pinging = 0;
	if (answered) {
		g->down = 0;
		g->answered_ms = now_ms;
	} else {
		_down(g, now_ms);
	}
}

void ed_gate_wait_over(struct ed_gate *g, uint64_t now_ms)
{
	_down(g, now_ms);
}

void ed_gate_call_back(struct ed_gate *g, int ok, uint64_t now_ms)
{
	/* A failed call may be slurmctld gone: the next call pings first. */
	g->answered_ms = ok ? now_ms : 0;
}
