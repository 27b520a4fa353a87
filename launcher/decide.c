/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/decide.c: elastic-run's pure decisions (decide.h). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "decide.h"

/* ==== After each mpirun. */

enum elastic_run_next elastic__run_ended(const struct elastic_report_summary *sum,
					 int mstatus, int sig, int healed, int *status)
{
	/* Finished: some ranks ended the program normally and none failed
	 * (ranks lost on the way were healed in place by ULFM); or every rank
	 * of the world healed in place ended it normally: the ranks that
	 * failed were healed around (a rank on a lost node whose daemon died
	 * first aborts with an exit status of its own: PMIx's lost
	 * connection, 195); not when a rank failed on an error it wrote of its
	 * own */
	if (sum->ok > 0 && sum->reform == 0 && !sum->raised &&
	    (sum->failed == 0 || (healed > 0 && sum->ok >= healed))) {
		*status = 0;
		return ELASTIC_RUN_FINISHED;
	}
	*status = sum->failed ? 1 : mstatus ? mstatus : 1;
	if (sig == SIGTERM || sig == SIGINT)
		return ELASTIC_RUN_STOPPED;
	/* the others ended the program: the training is complete, and a
	 * relaunch would resume it only to repeat the failed end */
	if (sum->raised && sum->failed > 0 && sum->ok > 0)
		return ELASTIC_RUN_FAILED;
	/* 127 is mpirun's "command not found" only when no rank ever ran: a
	 * rank started later that failed to exec (a growth in place whose new
	 * ranks never came) makes mpirun end 127 too, while the ranks that
	 * ran asked for the re-form */
	if (mstatus == 127 && !sum->ok && !sum->failed && !sum->reform &&
	    !sum->signaled && !sum->left)
		return ELASTIC_RUN_NOSTART;
	return ELASTIC_RUN_REFORM;
}

enum elastic_run_next elastic__run_retry(int progress, int planned, int *stuck,
					 int *relaunches, int max_stuck, int max_relaunch)
{
	if (progress)
		*stuck = 0;
	else if (++*stuck > max_stuck)
		return ELASTIC_RUN_STUCK;
	if (!planned && ++*relaunches > max_relaunch)
		return ELASTIC_RUN_TOO_MANY;
	return ELASTIC_RUN_REFORM;
}

enum elastic_run_next elastic__run_failures(int failed, int committed, int *failures,
					    int max_failures)
{
	if (committed)
		*failures = 0;
	if (failed && ++*failures > max_failures)
		return ELASTIC_RUN_FAILED;
	return ELASTIC_RUN_REFORM;
}

double elastic__launch_bound(double configured, double slowest)
{
	if (configured <= 0 || slowest <= 0)
		return configured > 0 ? configured : 0;
	double b = ELASTIC_LAUNCH_BOUND_FACTOR * slowest;
	if (b < ELASTIC_LAUNCH_BOUND_MIN_S)
		b = ELASTIC_LAUNCH_BOUND_MIN_S;
	return b < configured ? b : configured;
}

/* ==== The clocks of a running launch. */

void elastic__watch_clock_start(struct elastic_watch_clock *c)
{
	double slowest = c->slowest_first;

	*c = (struct elastic_watch_clock){.slowest_first = slowest};
}

int elastic__watch_clock_awaits_commit(const struct elastic_watch_clock *c)
{
	return !c->t_first && !c->t_bound;
}

enum elastic_watch_clock_act elastic__watch_clock(struct elastic_watch_clock *c,
						  const struct elastic_watch_seen *s,
						  double *bound)
{
	double took = s->now - s->t0;

	*bound = elastic__launch_bound(s->launch_timeout, c->slowest_first);
	if (c->t_bound) {
		/* ended at a bound: mpirun gets ELASTIC_BOUND_KILL_S to go */
		if (c->bound_killed || s->now - c->t_bound <= ELASTIC_BOUND_KILL_S)
			return ELASTIC_CLOCK_GO_ON;
		c->bound_killed = 1;
		return ELASTIC_CLOCK_KILL;
	}
	/* the launch bound, until rank 0's first commit */
	if (elastic__watch_clock_awaits_commit(c) && s->committed) {
		c->t_first = s->now;
		if (took > c->slowest_first)
			c->slowest_first = took;
	}
	if (!c->t_first && *bound > 0 && took >= *bound)
		return ELASTIC_CLOCK_UNTRAINED;
	/* a growth in place starts ranks as a launch does: the same bound */
	if (s->t_join && *bound > 0 && s->now - s->t_join >= *bound)
		return ELASTIC_CLOCK_JOIN_STALLED;
	/* every rank ended and mpirun runs on */
	if (!s->all_ended) {
		c->t_all_ended = 0;
		return ELASTIC_CLOCK_GO_ON;
	}
	if (!c->t_all_ended)
		c->t_all_ended = s->now;
	if (s->now - c->t_all_ended < ELASTIC_ENDED_SETTLE_S)
		return ELASTIC_CLOCK_GO_ON;
	return ELASTIC_CLOCK_LINGERING;
}

void elastic__watch_clock_ended(struct elastic_watch_clock *c, double now)
{
	c->t_bound = now;
}

enum elastic_wait elastic__wait(double *since, double now, double limit)
{
	if (!*since) {
		*since = now;
		return limit > 0 ? ELASTIC_WAIT_BEGUN : ELASTIC_WAIT_OVER;
	}
	return now - *since < limit ? ELASTIC_WAIT_ON : ELASTIC_WAIT_OVER;
}

/* ==== The ranks' stop at a step boundary. */

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

/* ==== The resizes in place. */

static const struct elastic_host *_host_named(const struct elastic_gpuset *set,
					      const char *name)
{
	for (int h = 0; h < set->nhosts; h++)
		if (!strcmp(set->host[h].name, name))
			return &set->host[h];
	return NULL;
}

int elastic__inplace_host_known(const struct elastic_gpuset *launched, const char *name)
{
	return _host_named(launched, name) != NULL;
}

/* Every host of launched in seen with the same GPUs of the same jobs? */
static int _hosts_kept(const struct elastic_gpuset *launched,
		       const struct elastic_gpuset *seen)
{
	for (int h = 0; h < launched->nhosts; h++) {
		const struct elastic_host *a = &launched->host[h],
					  *b = _host_named(seen, a->name);
		if (!b || b->ngpus != a->ngpus ||
		    memcmp(a->gpu, b->gpu, sizeof(int) * (size_t)a->ngpus) ||
		    memcmp(a->gpu_job, b->gpu_job,
			   sizeof(a->gpu_job[0]) * (size_t)a->ngpus))
			return 0;
	}
	return 1;
}

struct elastic_grow_plan elastic__inplace_plan_grow(const struct elastic_grow_in *in)
{
	struct elastic_grow_plan p = {ELASTIC_GROW_NONE, 0, NULL};
	const struct elastic_gpuset *launched = in->launched, *seen = in->seen;

	if (!in->grow_in_place || in->state == ELASTIC_INPLACE_JOINING ||
	    in->state == ELASTIC_INPLACE_LEAVING || in->released ||
	    in->world != launched->total)
		return p;
	if (!_hosts_kept(launched, seen))
		p.why = "the new GPUs are on a node the job runs on";
	for (int h = 0; h < seen->nhosts; h++)
		if (!_host_named(launched, seen->host[h].name))
			p.add += seen->host[h].ngpus;
	if (!p.why && (p.add == 0 || seen->total != launched->total + p.add))
		p.why = "the set does not only grow";
	for (char *const *a = in->prog; *a && !p.why; a++)
		if (strchr(*a, '\n'))
			p.why = "an argument of the program has a newline";
	p.what = p.why ? ELASTIC_GROW_REFORM : ELASTIC_GROW_JOIN;
	if (p.why)
		p.add = 0;
	return p;
}

/* The controller starts a grant in place of a larger one it had to release
 * (re-shape): one re-form onto both is better than a shrink now. A target
 * not below the set is an older grow's, not this shrink's. */
static int _reshape_coming(const struct elastic_leave_in *in, int n)
{
	return in->target && (int)in->target < in->total &&
	       in->total - n < (int)in->target;
}

struct elastic_leave_plan elastic__inplace_plan_leave(const struct elastic_leave_in *in)
{
	struct elastic_leave_plan p = {ELASTIC_LEAVE_REFORM, 0};
	int n = in->released;
	int leaving = in->state == ELASTIC_INPLACE_LEAVING;

	if (in->in_place && !leaving && in->daemon_host >= 0) {
		p.what = ELASTIC_LEAVE_REFORM_DAEMON;
		return p;
	}
	if (!in->in_place || leaving || in->world != in->live || in->grants_add ||
	    n <= 0 || n >= in->total || _reshape_coming(in, n) ||
	    (int)elastic_sizes_fit(&in->req->sizes, in->req->min_gpus, in->req->max_gpus,
				   in->total - n) != in->total - n)
		return p;
	if (in->idle_released == n) {
		p.what = ELASTIC_LEAVE_ACK;
		return p;
	}
	/* an idle GPU named in the leave file has no rank to leave */
	p.what = ELASTIC_LEAVE_IN_PLACE;
	p.leaving = n - in->idle_released;
	return p;
}

enum elastic_inplace_state elastic__inplace_next(enum elastic_inplace_state state,
						 enum elastic_inplace_event event,
						 int heal_open)
{
	switch (event) {
	case ELASTIC_INPLACE_LAUNCHED:
		return ELASTIC_INPLACE_IDLE;
	case ELASTIC_INPLACE_JOIN_PLANNED:
		return ELASTIC_INPLACE_JOINING;
	case ELASTIC_INPLACE_LEAVE_PLANNED:
		return ELASTIC_INPLACE_LEAVING;
	case ELASTIC_INPLACE_JOINED:
	case ELASTIC_INPLACE_RELEASED:
		return heal_open ? ELASTIC_INPLACE_HEALING : ELASTIC_INPLACE_IDLE;
	case ELASTIC_INPLACE_HEALED:
		return state == ELASTIC_INPLACE_IDLE ? ELASTIC_INPLACE_HEALING : state;
	case ELASTIC_INPLACE_HEAL_OVER:
		return state == ELASTIC_INPLACE_HEALING ? ELASTIC_INPLACE_IDLE : state;
	}
	return state;
}

enum elastic_record_what elastic__inplace_on_record(const struct elastic_record_in *in)
{
	if (in->size <= 0)
		return ELASTIC_RECORD_NONE;
	if (in->state == ELASTIC_INPLACE_LEAVING && in->size == in->leave_end)
		return ELASTIC_RECORD_LEFT;
	if (in->state == ELASTIC_INPLACE_JOINING && in->size == in->join_end)
		return ELASTIC_RECORD_JOINED;
	if (!in->in_place)
		return ELASTIC_RECORD_NONE;
	if (in->size >= in->world)
		return in->heal_open ? ELASTIC_RECORD_HEAL_LOOK : ELASTIC_RECORD_NONE;
	return ELASTIC_RECORD_HEALED;
}

enum elastic_heal_what elastic__inplace_heal_look(const struct elastic_heal_in *in)
{
	if (in->world >= in->total || in->now - in->t_heal > ELASTIC_HEAL_LOOK_FOR_S)
		return ELASTIC_HEAL_END;
	if (in->now - in->t_heal_look < ELASTIC_HEAL_LOOK_EVERY_S || in->released > 0)
		return ELASTIC_HEAL_WAIT;
	return ELASTIC_HEAL_LOOK;
}

/* ==== The causes of re-forms, the recovery histogram and the wait before a
 * re-form onto GPUs whose rank failed. */

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

/* ==== The nodes lost under a launch. */

static int _has_job(const struct elastic_lost_node *n, unsigned long job)
{
	for (int j = 0; j < n->njobs; j++)
		if (n->job[j] == job)
			return 1;
	return 0;
}

/* 1 if host x of a set has a GPU of a job node n held. */
static int _holds(const struct elastic_lost_node *n, const struct elastic_host *x)
{
	if (strcmp(n->host, x->name))
		return 0;
	for (int g = 0; g < x->ngpus; g++)
		if (_has_job(n, x->gpu_job[g]))
			return 1;
	return 0;
}

/* 1 if host x still has a GPU of n's daemon's job (or none was known). */
static int _daemon_listed(const struct elastic_lost_node *n, const struct elastic_host *x)
{
	if (!n->daemon)
		return 1;
	for (int g = 0; g < x->ngpus; g++)
		if (x->gpu_job[g] == n->daemon)
			return 1;
	return 0;
}

static int _seen_times(const struct elastic_lost *l, const char *host)
{
	for (int i = 0; i < l->nseen; i++)
		if (!strcmp(l->seen[i].host, host))
			return l->seen[i].times;
	return 0;
}

static void _remember(struct elastic_lost *l, const struct elastic_lost_node *n)
{
	int i = 0;
	while (i < l->nseen && strcmp(l->seen[i].host, n->host))
		i++;
	if (i == ELASTIC_LOST_MAX) { /* forget the oldest */
		memmove(l->seen, l->seen + 1,
			sizeof(l->seen[0]) * (ELASTIC_LOST_MAX - 1));
		i = ELASTIC_LOST_MAX - 1;
	} else if (i == l->nseen) {
		l->nseen++;
	}
	snprintf(l->seen[i].host, sizeof(l->seen[i].host), "%s", n->host);
	l->seen[i].times = n->times;
}

static struct elastic_lost_node *_find(struct elastic_lost *l, const char *host)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->node[i].host, host))
			return &l->node[i];
	return NULL;
}

int elastic__lost_mark(struct elastic_lost *l, const struct elastic_gpuset *launched,
		       const char *self,
		       int (*reports)(const char *host, const void *arg), const void *arg,
		       double now)
{
	int added = 0;

	for (int h = 0; h < launched->nhosts; h++) {
		const struct elastic_host *x = &launched->host[h];
		if ((self && !strcmp(x->name, self)) || reports(x->name, arg) >= x->ngpus)
			continue;
		struct elastic_lost_node *n = _find(l, x->name);
		if (!n) {
			if (l->n == ELASTIC_LOST_MAX)
				continue; /* hold out what fits; the rest fail again */
			n = &l->node[l->n++];
			memset(n, 0, sizeof(*n));
			snprintf(n->host, sizeof(n->host), "%s", x->name);
			n->times = _seen_times(l, x->name);
		}
		n->times++;
		n->since = now;
		n->daemon = x->job;
		for (int g = 0; g < x->ngpus; g++)
			if (!_has_job(n, x->gpu_job[g]) && n->njobs < ELASTIC_LOST_JOBS)
				n->job[n->njobs++] = x->gpu_job[g];
		double hold = ELASTIC_LOST_HOLD_S;
		for (int t = 1; t < n->times && hold < ELASTIC_LOST_HOLD_MAX; t++)
			hold *= 2;
		n->until = now +
			   (hold < ELASTIC_LOST_HOLD_MAX ? hold : ELASTIC_LOST_HOLD_MAX);
		added++;
	}
	return added;
}

int elastic__lost_hold_out(const struct elastic_lost *l, struct elastic_gpuset *set)
{
	int dropped = 0, nh = 0;

	for (int h = 0; h < set->nhosts; h++) {
		int out = 0;
		for (int i = 0; i < l->n && !out; i++)
			out = _holds(&l->node[i], &set->host[h]) &&
			      _daemon_listed(&l->node[i], &set->host[h]);
		if (out) {
			dropped += set->host[h].ngpus;
			continue;
		}
		if (nh != h)
			set->host[nh] = set->host[h];
		nh++;
	}
	set->nhosts = nh;
	set->total -= dropped;
	set->raw -= dropped;
	return dropped;
}

struct elastic_lost_look elastic__lost_look(struct elastic_lost *l,
					    const struct elastic_gpuset *all, double now)
{
	struct elastic_lost_look r = {0};
	int k = 0;

	for (int i = 0; i < l->n; i++) {
		const struct elastic_lost_node *n = &l->node[i];
		int listed = 0, daemon = 1;
		for (int h = 0; h < all->nhosts && !listed; h++)
			if ((listed = _holds(n, &all->host[h])))
				daemon = _daemon_listed(n, &all->host[h]);
		if (listed && daemon && now < n->until) {
			l->node[k++] = *n;
			continue;
		}
		if (listed) {
			r.released++;
			r.daemon_gone += !daemon;
		} else {
			r.gone++;
		}
		_remember(l, n);
		snprintf(r.host, sizeof(r.host), "%s", n->host);
		r.held_for = now - n->since;
	}
	l->n = k;
	return r;
}
