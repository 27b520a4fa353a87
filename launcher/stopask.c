/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/stopask.c: the ranks' stop at a step boundary (stopask.h). */
#include "config.h"

#include "stopask.h"

void elastic__stop_start(struct elastic_stop *s)
{
	*s = (struct elastic_stop){0};
}

int elastic__stop_open(const struct elastic_stop *s)
{
	return !s->due && !s->sent;
}

int elastic__stop_pending(const struct elastic_stop *s)
{
	return s->due && !s->sent;
}

void elastic__stop_set_due(struct elastic_stop *s, int due)
{
	s->due = due != 0;
}

void elastic__stop_failed(struct elastic_stop *s)
{
	s->due = s->now = 1;
}

void elastic__stop_done(struct elastic_stop *s)
{
	s->due = s->sent = 0;
}

enum elastic_stop_act elastic__stop_when(const struct elastic_stop *s, int ranks_ready,
					 int joining)
{
	if (!elastic__stop_pending(s) || !(s->now || ranks_ready))
		return ELASTIC_STOP_WAIT;
	return joining || s->now ? ELASTIC_STOP_SEND : ELASTIC_STOP_SEND_WARM;
}

void elastic__stop_sent(struct elastic_stop *s)
{
	s->sent = 1;
}
