/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/recovery_run.c: the run's re-forms, resizes in place and
 * recoveries, fed to recovery.c's counts from the run's events; elasticd
 * hears them with the next progress (common/ctlclient). */
#include "config.h"

#include "recovery_run.h"
#include "runlog.h"

/* The counts go with the next status. */
static void _tell(const struct elastic_recovery *rc, struct elastic_ctlclient *ctl)
{
	ctl->rec = rc->n;
}

void elastic__recovery_reform(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			      const struct elastic_reform_in *in, double t_end)
{
	enum elastic_reform_cause cause = elastic__recovery_cause(in);
	double since = in->planned && rc->t_stop ? rc->t_stop
						 : elastic__recovery_since(rc, t_end);

	rc->n.reforms[cause]++;
	elastic__recovery_open(rc, since);
	rc->t_stop = rc->t_loss = 0;
	if (elastic__verbose)
		elastic__say("re-form cause: %s (%.0f ms before mpirun ended)",
			     elastic_reform_cause_name(cause), (t_end - since) * 1e3);
	_tell(rc, ctl);
}

void elastic__recovery_stopping(struct elastic_recovery *rc)
{
	rc->t_stop = elastic__now();
}

void elastic__recovery_rank_end(struct elastic_recovery *rc,
				const struct elastic_rank_end *e)
{
	if (elastic__recovery_is_loss(e->how, e->value))
		elastic__recovery_loss(rc, elastic__now());
}

double elastic__recovery_heal_since(const struct elastic_recovery *rc)
{
	return elastic__recovery_since(rc, rc->t_commit);
}

void elastic__recovery_resized(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			       enum elastic_resize_kind kind, double since)
{
	double now = elastic__now();

	rc->n.in_place[kind]++;
	elastic__recovery_observe(&rc->n, since ? now - since : 0);
	rc->t_stop = 0;
	if (kind == ELASTIC_RESIZE_HEAL)
		rc->t_loss = 0;
	/* (the world changed: its commits are seen from now) */
	rc->t_commit = now;
	_tell(rc, ctl);
}

void elastic__recovery_watch(struct elastic_recovery *rc, struct elastic_ctlclient *ctl,
			     struct elastic_progress *pr, int world)
{
	unsigned long long step, seen;
	double t, now = elastic__now();
	int size;

	if (now - rc->t_read < 0.1)
		return;
	rc->t_read = now;
	if (elastic__progress_read(pr, &step, &seen, &t, &size) < 0)
		return;
	if (elastic__recovery_close(rc, now)) {
		rc->step_seen = step, rc->t_commit = now;
		_tell(rc, ctl);
		return;
	}
	/* a record of another world is a resize's (inplace_run.c's) */
	if (step != rc->step_seen && (size == 0 || size == world))
		rc->step_seen = step, rc->t_commit = now;
}
