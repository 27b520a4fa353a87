/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/test/test_reconcile.c: table tests of the controller's decide step
 * (reconcile.c): slurmctld's state, the controller's memory and the policy's
 * targets in, the list of actions out. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "reconcile.h"

#define NOW_MS 1000000000000ull /* 2001-09-09, any instant does */
#define NOW_S  ((time_t)(NOW_MS / 1000))

/* The world of one case: 2 nodes of 4 GPUs; each job has its own allocation
 * (lead) on one node; lists end at id 0. */
struct tjob {
	uint32_t id;
	int running, lead_node, lead_gpus, grace;
	int connected, target, target_sent; /* target_sent 0: never told */
	uint32_t announced;		    /* one grant it was told of, 0 none */
};
struct tgrant {
	uint32_t id, job;
	int node, gpus, running;
	int64_t release_by; /* ms from now, as slurmctld keeps it; 0 none */
	uid_t uid;	    /* 0: the job's */
	int fresh;	    /* started this second (else 100 s ago) */
	int short_before;   /* pending, the last tick found no room for it */
};
struct trel {
	uint32_t grant, job;
	int64_t deadline; /* ms from now */
	int sent, acked;
};
struct ttarget {
	int place[2]; /* GPUs per node */
};
struct tcase {
	const char *name;
	struct tjob jobs[3];
	struct tgrant grants[4];
	struct trel rels[2];
	struct ttarget targets[3]; /* per job, in job order */
	int busy[2];		   /* GPUs of other jobs per node */
	const char *want;	   /* the actions */
	const char *holds;	   /* per job: held/cur, releasing, pending */
};

static const struct tcase cases[] = {
	{.name = "nothing to do: a steady job that knows its target",
	 .jobs = {{1, 1, 0, 2, 30, 1, 2, 2}},
	 .targets = {{{2, 0}}},
	 .want = "",
	 .holds = "1:2/2 r0 p0"},
	{.name = "grow: 2 more GPUs on the job's node, then tell it",
	 .jobs = {{1, 1, 0, 2, 30, 1, 2, 2}},
	 .targets = {{{4, 0}}},
	 .want = "explain j1 4; target j1 4; grow j1 n0 +1 (2->4); grow j1 n0 +1 (2->4)",
	 .holds = "1:2/2 r0 p0"},
	{.name = "grow across nodes, the job not connected: no orders",
	 .jobs = {{1, 1, 0, 4, 30, 0, 4, 0}},
	 .targets = {{{4, 3}}},
	 .want = "explain j1 7; grow j1 n1 +1 (4->7); grow j1 n1 +2 (4->7)",
	 .holds = "1:4/4 r0 p0"},
	{.name = "shrink at a grant's boundary: release it with the job's grace",
	 .jobs = {{1, 1, 0, 2, 10, 1, 4, 4, 101}},
	 .grants = {{101, 1, 0, 2, 1}},
	 .targets = {{{2, 0}}},
	 .want = "explain j1 2; target j1 2; release j1 g101 n0 2 (4->2) dl+10000",
	 .holds = "1:4/4 r1 p0"},
	{.name = "shrink with no grace set: 30 s",
	 .jobs = {{1, 1, 0, 2, 0, 1, 4, 4, 101}},
	 .grants = {{101, 1, 0, 2, 1}},
	 .targets = {{{2, 0}}},
	 .want = "explain j1 2; target j1 2; release j1 g101 n0 2 (4->2) dl+30000",
	 .holds = "1:4/4 r1 p0"},
	{.name = "release ordered, deadline ahead, no ack yet: wait",
	 .jobs = {{1, 1, 0, 2, 10, 1, 2, 2, 101}},
	 .grants = {{101, 1, 0, 2, 1}},
	 .rels = {{101, 1, 5000, 1}},
	 .targets = {{{2, 0}}},
	 .want = "",
	 .holds = "1:2/4 r1 p0"},
	{.name = "a job that never acks: at the deadline the grant is cancelled",
	 .jobs = {{1, 1, 0, 2, 10, 1, 2, 2, 101}},
	 .grants = {{101, 1, 0, 2, 1}},
	 .rels = {{101, 1, 0, 1}},
	 .targets = {{{2, 0}}},
	 .want = "cancel g101 (grace deadline passed: forced)",
	 .holds = "1:2/2 r0 p0"},
	{.name = "a release the job acknowledged: the running grant ends as done, a pending one is cancelled",
	 .jobs = {{1, 1, 0, 2, 10, 1, 2, 2, 101}},
	 .grants = {{101, 1, 1, 1, 1}, {102, 1, 1, 1, 0}},
	 .rels = {{101, 1, 5000, 1, 1}, {102, 1, 5000, 1, 1}},
	 .targets = {{{2, 0}}},
	 .want = "end g101 (released by the job); cancel g102 (release of a grant not started)",
	 .holds = "1:2/2 r0 p0"},
	{.name = "a release the job was not told of (it reconnected): tell it",
	 .jobs = {{1, 1, 0, 2, 10, 1, 2, 2, 101}},
	 .grants = {{101, 1, 0, 2, 1}},
	 .rels = {{101, 1, 5000, 0}},
	 .targets = {{{2, 0}}},
	 .want = "tell-release g101",
	 .holds = "1:2/4 r1 p0"},
	{.name = "a release ordered before a restart: resume it from slurmctld's mark",
	 .jobs = {{1, 1, 0, 2, 10, 1, 2, 2, 101}},
	 .grants = {{101, 1, 0, 2, 1, 7000}},
	 .targets = {{{2, 0}}},
	 .want = "resume g101 dl+7000; tell-release g101",
	 .holds = "1:2/4 r1 p0"},
	{.name = "lost grants: gone from slurmctld, node unknown, job ended, foreign owner",
	 .jobs = {{1, 1, 0, 2, 10, 1, 2, 2}},
	 .grants = {{103, 1, -1, 2, 1}, {104, 9, 1, 2, 1}, {105, 1, 1, 1, 1, 0, 4242}},
	 .rels = {{102, 1, 5000, 1}},
	 .targets = {{{2, 0}}},
	 .want = "cancel g103 (its node is unknown); end g104 (its elastic job ended); cancel g105 (owner differs from the elastic job's); forget g102",
	 .holds = "1:2/2 r0 p0"},
	{.name = "a new job: pending, then running with a grant it was not told of",
	 .jobs = {{2, 0, 0, 0, 10, 0, 0, 0}, {3, 1, 1, 1, 10, 1, 0, 0}},
	 .grants = {{301, 3, 1, 1, 1}},
	 .targets = {{{0, 0}}, {{0, 2}}},
	 .want = "explain j3 2; target j3 2; announce j3 g301 n1 1",
	 .holds = "2:0/0 r0 p0 3:2/2 r0 p0"},
	{.name = "grow onto a 2-GPU grant: a 1 and a 1 (then 3 -> any count is exact)",
	 .jobs = {{1, 1, 0, 2, 30, 1, 4, 4, 101}},
	 .grants = {{101, 1, 1, 2, 1}},
	 .targets = {{{2, 4}}},
	 .want = "explain j1 6; target j1 6; grow j1 n1 +1 (4->6); grow j1 n1 +1 (4->6)",
	 .holds = "1:4/4 r0 p0"},
	{.name = "shrink by 1 where the grants are 1 and 2: the 1, not the 2",
	 .jobs = {{1, 1, 0, 1, 30, 1, 4, 4, 101}},
	 .grants = {{101, 1, 1, 2, 1}, {102, 1, 1, 1, 1}},
	 .targets = {{{1, 2}}},
	 .want = "explain j1 3; target j1 3; release j1 g102 n1 1 (4->3) dl+30000",
	 .holds = "1:4/4 r1 p0"},
	{.name = "shrink by 1 where the only grant is 2: release it, a 1 in its place at once",
	 .jobs = {{1, 1, 0, 1, 30, 1, 3, 3, 101}},
	 .grants = {{101, 1, 1, 2, 1}},
	 .targets = {{{1, 1}}},
	 .want = "explain j1 2; target j1 2; release j1 g101 n1 2 (3->2) dl+30000; grow j1 n1 +1 (3->2)",
	 .holds = "1:3/3 r1 p0"},
	{.name = "one grant of a grow started, one pending: not told yet (one re-form)",
	 .jobs = {{1, 1, 0, 1, 30, 1, 4, 1}},
	 .grants = {{101, 1, 1, 1, 1, 0, 0, 1}, {102, 1, 1, 2, 0}},
	 .targets = {{{1, 3}}},
	 .want = "target j1 4",
	 .holds = "1:4/2 r0 p1"},
	{.name = "... both started: told of both together",
	 .jobs = {{1, 1, 0, 1, 30, 1, 4, 4}},
	 .grants = {{101, 1, 1, 1, 1, 0, 0, 1}, {102, 1, 1, 2, 1, 0, 0, 1}},
	 .targets = {{{1, 3}}},
	 .want = "announce j1 g101 n1 1; announce j1 g102 n1 2",
	 .holds = "1:4/4 r0 p0"},
	{.name = "... the other still pending after 2 s: told of the started one",
	 .jobs = {{1, 1, 0, 1, 30, 1, 4, 4}},
	 .grants = {{101, 1, 1, 1, 1}, {102, 1, 1, 2, 0}},
	 .targets = {{{1, 3}}},
	 .want = "announce j1 g101 n1 1",
	 .holds = "1:4/2 r0 p1"},
	{.name = "a grant not started and not needed any more goes first, at once",
	 .jobs = {{1, 1, 0, 2, 10, 1, 4, 4}},
	 .grants = {{106, 1, 0, 2, 0}},
	 .targets = {{{2, 0}}},
	 .want = "explain j1 2; target j1 2; cancel g106 (not needed any more)",
	 .holds = "1:4/2 r0 p0"},
	{.name = "a grant not started whose GPUs were taken meanwhile: no room for it in one snapshot, kept for the next to confirm",
	 .jobs = {{1, 1, 0, 2, 10, 1, 4, 4}},
	 .grants = {{107, 1, 0, 2, 0}},
	 .busy = {1, 0},
	 .targets = {{{4, 0}}},
	 .want = "short g107",
	 .holds = "1:4/2 r0 p1"},
	{.name = "... the next snapshot has room: it stays, and is no longer short",
	 .jobs = {{1, 1, 0, 2, 10, 1, 4, 4}},
	 .grants = {{.id = 107, .job = 1, .node = 0, .gpus = 2, .short_before = 1}},
	 .targets = {{{4, 0}}},
	 .want = "",
	 .holds = "1:4/2 r0 p1"},
	{.name = "... the next snapshot finds no room either: it goes, and the job grows elsewhere",
	 .jobs = {{1, 1, 0, 2, 10, 1, 4, 4}},
	 .grants = {{.id = 107, .job = 1, .node = 0, .gpus = 2, .short_before = 1}},
	 .busy = {1, 0},
	 .targets = {{{4, 0}}},
	 .want = "cancel g107 (cannot start: its GPUs were taken meanwhile); grow j1 n0 +1 (2->4); grow j1 n0 +1 (2->4)",
	 .holds = "1:2/2 r0 p0"},
};

static const char *_kind(enum ed_rc_kind k)
{
	static const char *names[] = {"cancel", "resume",  "tell-release",
				      "forget", "explain", "release",
				      "grow",	"target",  "announce"};
	return names[k];
}

static void _fmt(char *out, size_t size, const struct ed_rc_action *a)
{
	long long dl = (long long)a->deadline_ms - (long long)NOW_MS;
	switch (a->kind) {
	case ED_RC_CANCEL: /* done: it may end as done (sacct: COMPLETED) */
		snprintf(out, size, "%s g%u (%s)", a->done ? "end" : "cancel", a->grant,
			 a->why);
		break;
	case ED_RC_RESUME:
		snprintf(out, size, "resume g%u dl%+lld", a->grant, dl);
		break;
	case ED_RC_SEND_RELEASE:
	case ED_RC_FORGET:
		snprintf(out, size, "%s g%u", _kind(a->kind), a->grant);
		break;
	case ED_RC_EXPLAIN:
	case ED_RC_TARGET:
		snprintf(out, size, "%s j%u %d", _kind(a->kind), a->job, a->gpus);
		break;
	case ED_RC_RELEASE:
		snprintf(out, size, "release j%u g%u n%d %d (%d->%d) dl%+lld", a->job,
			 a->grant, a->node, a->gpus, a->from, a->to, dl);
		break;
	case ED_RC_GROW:
		snprintf(out, size, "grow j%u n%d +%d (%d->%d)", a->job, a->node, a->gpus,
			 a->from, a->to);
		break;
	case ED_RC_ANNOUNCE:
		snprintf(out, size, "announce j%u g%u n%d %d", a->job, a->grant, a->node,
			 a->gpus);
		break;
	}
}

/* Everything one case needs, built from its table row. */
struct world {
	struct ed_node nodes[2];
	struct ed_job jobs[3];
	struct elastic_policy_place lead[3];
	struct ed_grant grants[4];
	struct ed_snapshot s;
	struct ed_rc_job rj[3];
	uint32_t announced[3];
	struct ed_rc_release rels[2];
	uint32_t shorts[4];
	struct ed_target targets[3];
	struct elastic_policy_place place[3][2];
	struct ed_plan plan;
	struct ed_rc_in in;
};

static void _build(const struct tcase *c, struct world *w)
{
	memset(w, 0, sizeof(*w));
	for (int k = 0; k < 2; k++) {
		snprintf(w->nodes[k].name, sizeof(w->nodes[k].name), "n%d", k);
		w->nodes[k].gpus = 4;
		w->nodes[k].busy = c->busy[k];
	}
	w->s.nodes = w->nodes;
	w->s.nnodes = 2;
	w->s.jobs = w->jobs;
	w->s.grants = w->grants;
	for (int i = 0; i < 3 && c->jobs[i].id; i++) {
		const struct tjob *t = &c->jobs[i];
		struct ed_job *j = &w->jobs[w->s.njobs];
		j->id = t->id;
		j->uid = 1000;
		j->running = t->running;
		j->grace = t->grace;
		j->min = 1;
		j->max = 8;
		j->lead = &w->lead[i];
		if (t->lead_gpus) {
			w->lead[i] = (struct elastic_policy_place){
				t->lead_node, t->lead_gpus, t->lead_gpus};
			j->nlead = 1;
		}
		w->announced[i] = t->announced;
		w->rj[i] = (struct ed_rc_job){.connected = t->connected,
					      .target = t->target,
					      .target_valid = t->target_sent > 0,
					      .target_sent = t->target_sent,
					      .announced = &w->announced[i],
					      .nannounced = t->announced ? 1 : 0};
		w->targets[i].job = t->id;
		w->targets[i].place = w->place[i];
		for (int k = 0; k < 2; k++)
			if (c->targets[i].place[k]) {
				w->place[i][w->targets[i].nplace++] =
					(struct elastic_policy_place){
						k, c->targets[i].place[k], 0};
				w->targets[i].gpus += c->targets[i].place[k];
			}
		snprintf(w->targets[i].explain, sizeof(w->targets[i].explain),
			 "job %u: target %d", t->id, w->targets[i].gpus);
		w->s.njobs++;
	}
	for (int g = 0; g < 4 && c->grants[g].id; g++) {
		const struct tgrant *t = &c->grants[g];
		w->grants[g] = (struct ed_grant){
			.id = t->id,
			.job = t->job,
			.uid = t->uid ? t->uid : 1000,
			.gpus = t->gpus,
			.node = t->node,
			.state = t->running ? ED_GRANT_RUNNING : ED_GRANT_PENDING,
			.start = t->running ? NOW_S - (t->fresh ? 0 : 100) : 0,
			.release_by_ms =
				t->release_by ? NOW_MS + (uint64_t)t->release_by : 0};
		if (t->short_before)
			w->shorts[w->in.nshorts++] = t->id;
		w->s.ngrants++;
	}
	for (int r = 0; r < 2 && c->rels[r].grant; r++) {
		const struct trel *t = &c->rels[r];
		w->rels[r] = (struct ed_rc_release){t->grant, t->job,
						    NOW_MS + (uint64_t)t->deadline,
						    t->sent, t->acked};
		w->in.nrels++;
	}
	w->plan.targets = w->targets;
	w->plan.ntargets = w->s.njobs;
	w->in.s = &w->s;
	w->in.jobs = w->rj;
	w->in.rels = w->rels;
	w->in.shorts = w->shorts;
	w->in.now_ms = NOW_MS;
}

static void table(void **state)
{
	(void)state;
	for (size_t n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
		const struct tcase *c = &cases[n];
		struct world w;
		struct ed_rc rc = {0};
		char got[1024] = "", holds[256] = "";
		_build(c, &w);
		assert_int_equal(ed_rc_grants(&w.in, &rc), 0);
		assert_int_equal(ed_rc_moves(&w.in, &w.plan, &rc), 0);
		/* Holdings; releasing and pending as the moves left them. */
		for (int i = 0; i < w.s.njobs; i++) {
			const struct ed_rc_hold *h = &rc.jobs[i];
			int held = 0;
			for (int k = 0; k < h->nheld; k++)
				held += h->held[k].gpus;
			snprintf(holds + strlen(holds), sizeof(holds) - strlen(holds),
				 "%s%u:%d/%d r%d p%d", i ? " " : "", w.jobs[i].id, held,
				 h->cur_gpus, h->releasing, h->pending);
		}
		for (int k = 0; k < rc.nacts; k++) {
			char one[256];
			_fmt(one, sizeof(one), &rc.acts[k]);
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
				 k ? "; " : "", one);
		}
		for (int k = 0; k < rc.nshorts; k++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
				 "%sshort g%u", got[0] ? "; " : "", rc.shorts[k]);
		if (strcmp(got, c->want) != 0 || strcmp(holds, c->holds) != 0)
			print_error("case '%s':\n  actions want: %s\n  actions got:  %s\n"
				    "  holdings want: %s\n  holdings got:  %s\n",
				    c->name, c->want, got, c->holds, holds);
		assert_string_equal(got, c->want);
		assert_string_equal(holds, c->holds);
		ed_rc_free(&rc);
	}
}

/* A shrink observed but not ordered by us (a grant ended by someone else)
 * is dated now; a release finished this tick dates the job too. */
static void resize_dates(void **state)
{
	(void)state;
	struct tcase c = {.jobs = {{1, 1, 0, 2, 10, 1, 2, 2, 0}}, .targets = {{{2, 0}}}};
	struct world w;
	struct ed_rc rc = {0};
	_build(&c, &w);
	w.jobs[0].start = NOW_S - 100;
	assert_int_equal(ed_rc_grants(&w.in, &rc), 0);
	assert_int_equal(rc.jobs[0].last_resize, NOW_S - 100);
	/* moves date nothing of their own: GPUs lost without an order of
	 * ours (a lost node) start no cool-down */
	assert_int_equal(ed_rc_moves(&w.in, &w.plan, &rc), 0);
	assert_int_equal(rc.jobs[0].last_resize, NOW_S - 100);
	ed_rc_free(&rc);

	struct tcase d = {.jobs = {{1, 1, 0, 2, 10, 1, 2, 2, 101}},
			  .grants = {{101, 1, 0, 2, 1}},
			  .rels = {{101, 1, -1, 1}},
			  .targets = {{{2, 0}}}};
	_build(&d, &w);
	w.jobs[0].start = NOW_S - 100;
	assert_int_equal(ed_rc_grants(&w.in, &rc), 0);
	assert_int_equal(rc.jobs[0].last_resize, NOW_S);
	ed_rc_free(&rc);
}

static void states(void **state)
{
	(void)state;
	assert_int_equal(ed_rc_state(0, 0, 0, 4, 0), ELASTIC_STATE_PENDING);
	assert_int_equal(ed_rc_state(1, 1, 0, 4, 4), ELASTIC_STATE_SHRINKING);
	assert_int_equal(ed_rc_state(1, 0, 0, 2, 4), ELASTIC_STATE_SHRINKING);
	assert_int_equal(ed_rc_state(1, 0, 1, 4, 4), ELASTIC_STATE_GROWING);
	assert_int_equal(ed_rc_state(1, 0, 0, 6, 4), ELASTIC_STATE_GROWING);
	assert_int_equal(ed_rc_state(1, 0, 0, 4, 4), ELASTIC_STATE_STEADY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),
		cmocka_unit_test(resize_dates),
		cmocka_unit_test(states),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
