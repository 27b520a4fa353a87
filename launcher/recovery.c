/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/recovery.c: the causes of re-forms, the recovery histogram and
 * the wait before a re-form onto GPUs whose rank failed (pure). */
#include "config.h"

#include "recovery.h"
#include "report.h"

enum elastic_reform_cause elastic__recovery_cause(const struct elastic_reform_in *in)
{
	if (!in->planned)
		return ELASTIC_REFORM_FAILURE;
	if (in->released && !in->gained)
		return ELASTIC_REFORM_SHRINK;
	if (in->gained && !in->released)
		return ELASTIC_REFORM_GROW;
	if (in->replaced && !in->released && !in->gained)
		return ELASTIC_REFORM_REPLACE;
	return ELASTIC_REFORM_OTHER;
}

int elastic__recovery_is_loss(int how, int value)
{
	return elastic__report_end_failed(how, value);
}

void elastic__recovery_observe(struct elastic_recovery_counts *n, double seconds)
{
	int b = 0;

	if (!(seconds > 0)) /* (NaN too) */
		seconds = 0;
	while (b < ELASTIC_RECOVERY_BUCKETS - 1 && seconds > elastic_recovery_le[b])
		b++;
	n->bucket[b]++;
	n->sum_ms += (uint64_t)(seconds * 1e3 + 0.5);
}

void elastic__recovery_loss(struct elastic_recovery *rc, double t)
{
	if (!rc->t_loss || rc->t_loss <= rc->t_commit)
		rc->t_loss = t;
}

double elastic__recovery_since(const struct elastic_recovery *rc, double fallback)
{
	return rc->t_loss && rc->t_loss > rc->t_commit ? rc->t_loss : fallback;
}

void elastic__recovery_open(struct elastic_recovery *rc, double t)
{
	if (!rc->t_open || t < rc->t_open)
		rc->t_open = t;
}

int elastic__recovery_close(struct elastic_recovery *rc, double now)
{
	if (!rc->t_open)
		return 0;
	elastic__recovery_observe(&rc->n, now - rc->t_open);
	rc->t_open = 0;
	return 1;
}

/* Re-forms onto GPUs whose rank failed that still count at t. */
static int _replace_streak(const struct elastic_replace *rp, double t)
{
	return rp->t_last > 0 && t - rp->t_last < ELASTIC_REPLACE_FORGET_S ? rp->streak
									   : 0;
}

double elastic__replace_wait(const struct elastic_replace *rp, double t, double first)
{
	double wait = first,
	       most = first > ELASTIC_REPLACE_MAX_S ? first : ELASTIC_REPLACE_MAX_S;

	for (int i = _replace_streak(rp, t); i > 0 && wait < most; i--)
		wait *= 2;
	return wait < most ? wait : most;
}

void elastic__replace_asked(struct elastic_replace *rp, double t)
{
	rp->streak = _replace_streak(rp, t) + 1;
	rp->t_last = t;
}

double elastic__slurm_ask_wait(int tries, double waited, int bound)
{
	double wait = ELASTIC_SLURM_ASK_AFTER_S;

	for (int i = 1; i < tries && wait < ELASTIC_SLURM_ASK_MAX_S; i++)
		wait *= 2;
	if (wait > ELASTIC_SLURM_ASK_MAX_S)
		wait = ELASTIC_SLURM_ASK_MAX_S;
	if (bound > 0 && waited + wait > bound)
		return waited < bound ? bound - waited : -1;
	return wait;
}
