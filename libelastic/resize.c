/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/resize.c: the world changing size at a step boundary without a
 * relaunch: the new world adopted, a planned shrink in place, and growth in
 * place. The step protocol (step.c) decides when; this file changes the
 * world and tells elastic-run and the program.
 *
 * Planned shrink in place (a runtime that survives a lost daemon: Open MPI
 * 6). Before its SIGUSR1, elastic-run writes the GPUs being released as
 * "HOST GPU" lines into the file ELASTIC_RUN_LEAVE names; rank 0 (on
 * elastic-run's host) reads it and tells the others. The ranks on those
 * GPUs leave after the committed step; the others go on as a smaller world
 * from it, with no relaunch and no snapshot read.
 *
 * Growth in place. Where elastic-run finds that its MPI runtime can start
 * ranks on a new node inside a running mpirun and merge them under fault
 * tolerance (Open MPI 5.0.x: MPI_Comm_spawn with PMIX_ADD_HOST, then
 * MPI_Intercomm_merge), it writes the ranks to add into the file
 * ELASTIC_RUN_JOIN names before it asks for a planned change (SIGUSR1). At
 * the step boundary the ranks agree on it, start the joiners through the
 * rank wrapper, merge with them, and hand them the committed state: the
 * ranks that ran go on, none restarts, no snapshot is read. The joiners find
 * their parents in elastic_init and take the state at their first
 * elastic_step_begin, where a relaunched rank reads a snapshot.
 *
 * The join file, one item a line:
 *   wrapper PATH        the rank wrapper (elastic-run)
 *   map MAP             ELASTIC_RUN_MAP of the grown set
 *   host HOST N         N ranks on HOST (a node new to this mpirun)
 *   arg A               the program and its arguments, in order */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ---- the world changes ---- */

/* Ranks of old that are not in cur, as ranks of old (same on every rank). */
static int _lost_ranks(MPI_Comm old, MPI_Comm cur, int **out)
{
	MPI_Group go, gc, gd;
	int n = 0;

	*out = NULL;
	MPI_Comm_group(old, &go);
	MPI_Comm_group(cur, &gc);
	MPI_Group_difference(go, gc, &gd);
	MPI_Group_size(gd, &n);
	if (n > 0 && (*out = malloc(2 * sizeof(int) * (size_t)n))) {
		int *in = *out + n;
		for (int i = 0; i < n; i++)
			in[i] = i;
		MPI_Group_translate_ranks(gd, n, in, go, *out);
	} else {
		n = 0;
	}
	MPI_Group_free(&gd);
	MPI_Group_free(&gc);
	MPI_Group_free(&go);
	return n;
}

/* The world becomes nc (the survivors of a recovery, or those that stayed
 * at a planned shrink): ranks, this rank's place on its host, and NCCL told
 * which ranks are gone. */
void elastic__adopt(elastic_ctx_t *ctx, MPI_Comm nc, int node_rank)
{
	int *lost = NULL, nlost = _lost_ranks(ctx->comm, nc, &lost);
	MPI_Comm_free(&ctx->comm);
	ctx->comm = nc;
	MPI_Comm_rank(nc, &ctx->rank);
	MPI_Comm_size(nc, &ctx->size);
	ctx->node_rank = node_rank;
	elastic__nccl_on_change(ctx, lost, nlost);
	free(lost);
}

/* Is this rank named in the leave list ("HOST GPU" lines)? */
static int _listed(const char *list, const char *host, const char *gpu)
{
	size_t hl = strlen(host);
	for (const char *l = list; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		if (n > hl && !strncmp(l, host, hl) && l[hl] == ' ' &&
		    n - hl - 1 == strlen(gpu) && !strncmp(l + hl + 1, gpu, n - hl - 1))
			return 1;
		l += n + (e ? 1 : 0);
	}
	return 0;
}

/* Tag of the planned shrink's messages on the old world: the survivors'
 * MPI_Comm_create_group, and the "go" each leaver waits for. */
#define SHRINK_TAG 0x454c

/* A leaving rank waits for the survivors' "go" asleep (0.5 ms naps), not
 * in MPI's polling: on oversubscribed cores a spinning leaver takes the
 * CPU the survivors need to build their world. An error (the sender
 * failed) ends the wait too. */
static void _await_go(MPI_Comm comm, int from)
{
	MPI_Request rq;
	int done = 0;
	if (MPI_Irecv(NULL, 0, MPI_BYTE, from, SHRINK_TAG, comm, &rq) != MPI_SUCCESS)
		return;
	while (MPI_Test(&rq, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
		struct timespec ts = {0, 500000};
		nanosleep(&ts, NULL);
	}
}

void elastic__resized(elastic_ctx_t *ctx)
{
	ctx->progress.last = 0; /* elastic-run learns the new size at once */
	elastic__progress_commit(ctx);
	/* and, for a second, every commit after: the first one elastic-run
	 * reads after the new size acknowledges the releases, and the other
	 * jobs get the GPUs (a record a second made that up to 1 s later) */
	elastic__progress_eager(ctx);
	if (ctx->cb.change_fn)
		ctx->cb.change_fn(ctx, ctx->cb.change_arg);
}

/* ---- planned shrink in place ---- */

/* Who leaves, the same on every rank once gathered, and when each part of
 * the shrink ended (for the debug line). */
struct shrink {
	int leave; /* this rank is listed */
	int *who;  /* who[i]: rank i of the old world leaves */
	int *stay; /* the ranks of the old world that stay, in order */
	int nstay, nleave;
	int old_size;
	double t0, t_list, t_agree, t_split;
};

static void _shrink_free(struct shrink *s)
{
	free(s->who);
	free(s->stay);
	s->who = s->stay = NULL;
}

/* Rank 0 reads the leave list and every rank gets it (size bytes, one
 * fixed-size broadcast: a second one for the length costs more than the
 * bytes on these small worlds). The MPI return code; list is "" on error. */
static int _leave_list(elastic_ctx_t *ctx, char *list, size_t size)
{
	int rc;

	if (ctx->rank == 0) {
		FILE *f = fopen(ctx->cfg.run_leave, "r");
		if (f) {
			size_t n = fread(list, 1, size - 1, f);
			list[n] = '\0';
			fclose(f);
		}
	}
	rc = MPI_Bcast(list, (int)size, MPI_CHAR, 0, ctx->comm);
	list[rc == MPI_SUCCESS ? size - 1 : 0] = '\0';
	return rc;
}

/* From the list to who leaves (one allgather of each rank's word; rc: the
 * list's broadcast): 1 if some ranks leave and some stay, else 0. */
static int _who_leaves(elastic_ctx_t *ctx, const char *list, int rc, struct shrink *s)
{
	char host[256] = "";

	gethostname(host, sizeof(host) - 1);
	s->leave = ctx->cfg.gpu && _listed(list, host, ctx->cfg.gpu);
	s->who = calloc((size_t)ctx->size, sizeof(int));
	s->stay = calloc((size_t)ctx->size, sizeof(int));
	if (!s->who || !s->stay)
		rc = MPI_ERR_NO_MEM;
	if (rc == MPI_SUCCESS)
		rc = MPI_Allgather(&s->leave, 1, MPI_INT, s->who, 1, MPI_INT, ctx->comm);
	if (rc == MPI_SUCCESS)
		for (int i = 0; i < ctx->size; i++) {
			if (s->who[i])
				s->nleave++;
			else
				s->stay[s->nstay++] = i;
		}
	return rc == MPI_SUCCESS && s->nleave > 0 && s->nleave < ctx->size;
}

/* The survivors alone build their world (MPI_Comm_create_group: the
 * leavers take no part), then the new world's first rank sends each leaver
 * its "go". The MPI return code; the new world in *nc. */
static int _survivors_world(elastic_ctx_t *ctx, struct shrink *s, MPI_Comm *nc)
{
	MPI_Group g_old = MPI_GROUP_NULL, g_stay = MPI_GROUP_NULL;
	int rc = MPI_Comm_group(ctx->comm, &g_old);

	if (rc == MPI_SUCCESS)
		rc = MPI_Group_incl(g_old, s->nstay, s->stay, &g_stay);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_create_group(ctx->comm, g_stay, SHRINK_TAG, nc);
	if (g_stay != MPI_GROUP_NULL)
		MPI_Group_free(&g_stay);
	if (g_old != MPI_GROUP_NULL)
		MPI_Group_free(&g_old);
	s->t_split = elastic__now_mono();
	if (ctx->rank == s->stay[0])
		for (int i = 0; i < s->old_size; i++)
			if (s->who[i]) /* zero bytes: sent at once, whatever the leaver does */
				(void)MPI_Send(NULL, 0, MPI_BYTE, i, SHRINK_TAG,
					       ctx->comm);
	return rc;
}

/* A survivor takes the new world nc, says so, and tells elastic-run and
 * the program. */
static void _shrunk(elastic_ctx_t *ctx, MPI_Comm nc, const struct shrink *s)
{
	uint64_t lo, hi;
	int node_rank = 0;

	MPI_Comm_set_errhandler(nc, MPI_ERRORS_RETURN);
	if (elastic__survey(ctx, nc, &lo, &hi, &node_rank) != MPI_SUCCESS)
		node_rank = ctx->node_rank;
	double t_survey = elastic__now_mono();
	elastic__adopt(ctx, nc, node_rank);
	elastic__log(
		ctx, ELASTIC_LOG_DEBUG,
		"planned shrink in place: list + who leaves %.3f ms, agree %.3f, new world %.3f, survey %.3f, adopt %.3f",
		(s->t_list - s->t0) * 1e3, (s->t_agree - s->t_list) * 1e3,
		(s->t_split - s->t_agree) * 1e3, (t_survey - s->t_split) * 1e3,
		(elastic__now_mono() - t_survey) * 1e3);
	elastic__stop_clear();
	ctx->stop_pending = 0;
	ctx->stats.shrinks++;
	elastic__log(
		ctx, ELASTIC_LOG_INFO,
		"planned shrink in place: size %d -> %d in %.3f ms after committed step %llu",
		s->old_size, ctx->size, (elastic__now_mono() - s->t0) * 1e3,
		(unsigned long long)ctx->committed);
	elastic__resized(ctx);
}

/* elastic-run numbers its requests: it writes the number into the file
 * ELASTIC_RUN_ASK names, then sends SIGUSR1. The runtime delivers the
 * signal to one rank after another; under load one may get it after the
 * commit whose agreement took the request, and its flag would ask again at
 * the next commit (a planned shrink in place followed by a full re-form).
 * Rank 0, on elastic-run's host, reads the number: a request already taken
 * is dropped on every rank. A number read after the agreement is at least
 * that of every signal that went into it (written before it was sent). */
int elastic__ask_taken(elastic_ctx_t *ctx)
{
	unsigned long long n = 0;

	if (!ctx->cfg.run_ask) /* the same environment on every rank */
		return 0;
	if (ctx->rank == 0) {
		FILE *f = fopen(ctx->cfg.run_ask, "r");
		if (f) {
			if (fscanf(f, "%llu", &n) != 1)
				n = 0;
			fclose(f);
		}
	}
	if (MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, ctx->comm) != MPI_SUCCESS || !n)
		return 0;
	if (n == ctx->ask_done) {
		elastic__log(
			ctx, ELASTIC_LOG_INFO,
			"planned change: elastic-run's request %llu was taken at an earlier commit (its signal reached a rank late): going on",
			n);
		return 1;
	}
	ctx->ask_done = n;
	return 0;
}

/* Cost, on the survivors' path: one broadcast (the list), one allgather
 * (who leaves), the agreement, then the survivors build their world and
 * survey it. Each leaver waits for a zero-byte "go" from the new world's
 * first rank before it returns (and its caller exits), so its end (a lost
 * process to the runtime) comes only after the survivors stopped using the
 * old world. */
enum elastic__shrink elastic__shrink_in_place(elastic_ctx_t *ctx)
{
	char list[8192] = "";
	struct shrink s = {.old_size = ctx->size, .t0 = elastic__now_mono()};
	MPI_Comm nc = MPI_COMM_NULL;
	int flag, rc;

	if (!ctx->cfg.run_leave) /* the same environment on every rank */
		return ELASTIC__SHRINK_NONE;
	rc = _leave_list(ctx, list, sizeof(list));
	flag = _who_leaves(ctx, list, rc, &s);
	s.t_list = elastic__now_mono();
	if (elastic__ft_agree(ctx->comm, &flag) != MPI_SUCCESS || !flag) {
		_shrink_free(&s);
		return ELASTIC__SHRINK_NONE;
	}
	s.t_agree = elastic__now_mono();
	if (s.leave) {
		/* its GPU goes back once the survivors have their world */
		elastic__log(
			ctx, ELASTIC_LOG_INFO,
			"planned shrink in place: leaving after committed step %llu (exit %d)",
			(unsigned long long)ctx->committed, ELASTIC_EXIT_LEFT);
		atomic_store(&ctx->wd.leaving, 1);
		_await_go(ctx->comm, s.stay[0]);
		_shrink_free(&s);
		return ELASTIC__SHRINK_LEAVE;
	}
	rc = _survivors_world(ctx, &s, &nc);
	_shrink_free(&s);
	if (rc != MPI_SUCCESS)
		return ELASTIC__SHRINK_NONE;
	_shrunk(ctx, nc, &s);
	return ELASTIC__SHRINK_STAY;
}

/* ---- growth in place ---- */

#define JOIN_MAX  16384
#define JOIN_ARGS 256

struct join {
	const char *wrapper, *map;
	char hosts[2048]; /* "HOST:N,HOST:N" */
	int n;		  /* ranks to add */
	char *argv[JOIN_ARGS + 6];
	int nargs;
};

/* Parse text (modified in place) into j: 0, or -1 with why. */
static int _parse(char *text, struct join *j, const char **why)
{
	size_t used = 0;
	memset(j, 0, sizeof(*j));
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		char *sp = strchr(l, ' ');
		if (!sp) {
			*why = "a line without a value";
			return -1;
		}
		*sp++ = '\0';
		if (!strcmp(l, "wrapper")) {
			j->wrapper = sp;
		} else if (!strcmp(l, "map")) {
			j->map = sp;
		} else if (!strcmp(l, "host")) {
			char *end, *ns = strrchr(sp, ' ');
			long n = ns ? strtol(ns + 1, &end, 10) : 0;
			if (!ns || *end || n < 1 || n > 4096 || j->n + n > 65536) {
				*why = "a bad host line";
				return -1;
			}
			*ns = '\0';
			int k = snprintf(j->hosts + used, sizeof(j->hosts) - used,
					 "%s%s:%ld", used ? "," : "", sp, n);
			if (k < 0 || (size_t)k >= sizeof(j->hosts) - used) {
				*why = "too many hosts";
				return -1;
			}
			used += (size_t)k;
			j->n += (int)n;
		} else if (!strcmp(l, "arg")) {
			if (j->nargs == JOIN_ARGS) {
				*why = "too many arguments";
				return -1;
			}
			j->argv[4 + j->nargs++] = sp;
		} else {
			*why = "an unknown item";
			return -1;
		}
	}
	if (!j->wrapper || !j->map || !j->n || !j->nargs) {
		*why = "wrapper, map, host or arg missing";
		return -1;
	}
	return 0;
}

int elastic__grow_planned(elastic_ctx_t *ctx)
{
	const char *path = ctx->cfg.run_join, *why = "";
	char text[JOIN_MAX], copy[JOIN_MAX];
	struct join j;
	int ok = 0, rc;

	if (!path) /* the same environment on every rank */
		return 0;
	text[0] = '\0';
	if (ctx->rank == 0) {
		FILE *f = fopen(path, "r");
		if (f) {
			size_t n = fread(text, 1, JOIN_MAX - 1, f);
			text[n] = '\0';
			fclose(f);
		}
	}
	/* one fixed-size broadcast, as for the leave list */
	rc = MPI_Bcast(text, JOIN_MAX, MPI_CHAR, 0, ctx->comm);
	text[rc == MPI_SUCCESS ? JOIN_MAX - 1 : 0] = '\0';
	memcpy(copy, text, JOIN_MAX);
	ok = text[0] && _parse(copy, &j, &why) == 0;
	if (text[0] && !ok && ctx->rank == 0)
		elastic__log(ctx, ELASTIC_LOG_WARN,
			     "grow in place: %s in %s: re-form instead", why, path);
	char *dup = ok ? strdup(text) : NULL; /* each rank keeps the list */
	ok = dup != NULL;
	if (elastic__ft_agree(ctx->comm, &ok) != MPI_SUCCESS || !ok) {
		free(dup);
		return 0;
	}
	free(ctx->join);
	ctx->join = dup;
	return 1;
}

/* Send (root) or take the registered state, region by region, in pieces
 * an int count can hold. The MPI return code. */
static int _bcast_state(elastic_ctx_t *ctx)
{
	for (int i = 0; i < ctx->nregions; i++) {
		unsigned char *p = ctx->regions[i].ptr;
		size_t left = ctx->regions[i].bytes;
		while (left > 0) {
			int n = left > (size_t)INT_MAX / 2 ? INT_MAX / 2 : (int)left;
			int rc = MPI_Bcast(p, n, MPI_BYTE, 0, ctx->comm);
			if (rc != MPI_SUCCESS)
				return rc;
			p += n;
			left -= (size_t)n;
		}
	}
	return MPI_SUCCESS;
}

/* Rank 0 (a rank that ran) gives every rank the committed step and the
 * state; collective over the grown world: a grower calls it from
 * elastic__grow_in_place, a joiner from its first elastic_step_begin. */
int elastic__grow_handoff(elastic_ctx_t *ctx, elastic_error_t *err)
{
	uint64_t hdr[2] = {ctx->committed, ctx->state_bytes};
	int rc = MPI_Bcast(hdr, 2, MPI_UINT64_T, 0, ctx->comm);
	if (rc != MPI_SUCCESS)
		return _fail(
			err, EIO,
			"grow in place: the state header did not arrive (MPI error %d)",
			rc);
	if (hdr[1] != ctx->state_bytes) /* the layout check before makes it equal */
		return _fail(
			err, EINVAL,
			"grow in place: the state is %llu bytes here, %llu on rank 0",
			(unsigned long long)ctx->state_bytes, (unsigned long long)hdr[1]);
	if ((rc = _bcast_state(ctx)) != MPI_SUCCESS)
		return _fail(err, EIO,
			     "grow in place: sending the state failed (MPI error %d)",
			     rc);
	if (ctx->joining) {
		ctx->committed = hdr[0];
		ctx->resumed = 1;
		ctx->stats.resumed_step = hdr[0];
		ctx->joining = 0;
		/* this node is new to the launch: its snapshots are ours */
		if (ctx->shm_prefix[0] && ctx->node_rank == 0 &&
		    elastic__snap_owner_claim(ctx->shm_prefix, ctx->launch_id) < 0)
			elastic__log(ctx, ELASTIC_LOG_WARN, "cannot claim %sowner: %s",
				     ctx->shm_prefix, strerror(errno));
		elastic__log(ctx, ELASTIC_LOG_INFO,
			     "joined in place at committed step %llu: rank %d of %d",
			     (unsigned long long)hdr[0], ctx->rank, ctx->size);
	}
	return 0;
}

/* The check every rank makes at its first step: same registration. */
int elastic__layout_agree(elastic_ctx_t *ctx, elastic_error_t *err)
{
	uint64_t mine[2] = {elastic__snap_layout(ctx), ~elastic__snap_layout(ctx)},
		 all[2];
	int rc = MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_MAX, ctx->comm);
	if (rc != MPI_SUCCESS)
		return _fail(err, EIO,
			     "elastic_step_begin: MPI_Allreduce failed (MPI error %d)",
			     rc);
	if (all[0] != mine[0] || all[1] != mine[1])
		return _fail(
			err, EINVAL,
			"elastic_step_begin: the ranks registered different state (names, sizes or order differ): every rank must register the same buffers");
	return 0;
}

int elastic__join_parent(elastic_ctx_t *ctx, MPI_Comm *out)
{
	MPI_Comm parent = MPI_COMM_NULL;
	int rc;

	*out = MPI_COMM_NULL;
	if (!ctx->cfg.join_base || MPI_Comm_get_parent(&parent) != MPI_SUCCESS ||
	    parent == MPI_COMM_NULL)
		return 0;
	MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
	rc = MPI_Intercomm_merge(parent, 1, out); /* after the ranks that ran */
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_free(&parent); /* see elastic__grow_in_place */
	if (rc != MPI_SUCCESS)
		return rc;
	ctx->joining = 1;
	return 0;
}

int elastic__grow_in_place(elastic_ctx_t *ctx, elastic_error_t *err)
{
	struct join j;
	const char *why = "";
	char base[16];
	MPI_Comm inter = MPI_COMM_NULL, nc = MPI_COMM_NULL;
	MPI_Info info;
	int rc, old = ctx->size, node_rank = ctx->node_rank, *codes;
	uint64_t lo, hi;
	double t0 = elastic__now_mono(), t_spawn, t_merge;

	if (!ctx->join || _parse(ctx->join, &j, &why) < 0)
		return _fail(err, EINVAL, "grow in place: %s", why);
	snprintf(base, sizeof(base), "%d", ctx->size);
	j.argv[0] = "--rank";
	j.argv[1] = "--join";
	j.argv[2] = base;
	j.argv[3] = (char *)j.map;
	j.argv[4 + j.nargs] = NULL;
	if (!(codes = calloc((size_t)j.n, sizeof(int))))
		return _fail(err, ENOMEM, "grow in place: out of memory");
	MPI_Info_create(&info);
	MPI_Info_set(info, "PMIX_ADD_HOST", j.hosts);
	elastic__log(ctx, ELASTIC_LOG_INFO,
		     "grow in place: starting %d rank%s on %s after committed step %llu",
		     j.n, j.n == 1 ? "" : "s", j.hosts,
		     (unsigned long long)ctx->committed);
	/* joiners that never come (their wrapper or program failed to start)
	 * leave MPI_Comm_spawn waiting: the recovery watchdog (ELASTIC_WATCHDOG)
	 * bounds the growth, then every rank re-forms */
	elastic__watchdog_arm(ctx, ELASTIC__WATCH_RECOVERY);
	rc = MPI_Comm_spawn(j.wrapper, j.argv, j.n, info, 0, ctx->comm, &inter, codes);
	MPI_Info_free(&info);
	free(codes);
	free(ctx->join);
	ctx->join = NULL;
	t_spawn = elastic__now_mono();
	if (rc != MPI_SUCCESS)
		return _fail(err, EIO,
			     "grow in place: MPI_Comm_spawn failed (MPI error %d)", rc);
	MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
	rc = MPI_Intercomm_merge(inter, 0, &nc);
	/* freed, not disconnected: after MPI_Comm_disconnect Open MPI 5.0.7
	 * could not reach the other side's ranks on the merged world ("Unable
	 * to find reachable pairing", "on host: unknown") */
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_free(&inter);
	t_merge = elastic__now_mono();
	if (rc != MPI_SUCCESS)
		return _fail(
			err, EIO,
			"grow in place: merging with the new ranks failed (MPI error %d)",
			rc);
	MPI_Comm_set_errhandler(nc, MPI_ERRORS_RETURN);
	/* the joiners' elastic_init, step for step: survey, launch id */
	if ((rc = elastic__survey(ctx, nc, &lo, &hi, &node_rank)) == MPI_SUCCESS)
		rc = MPI_Bcast(&ctx->launch_id, 1, MPI_UINT64_T, 0, nc);
	if (rc != MPI_SUCCESS) {
		MPI_Comm_free(&nc);
		return _fail(err, EIO,
			     "grow in place: the grown world failed (MPI error %d)", rc);
	}
	elastic__adopt(ctx, nc, node_rank);
	/* and their first step_begin: registration check, then the state */
	if (elastic__layout_agree(ctx, err) < 0 || elastic__grow_handoff(ctx, err) < 0)
		return -1;
	elastic__watchdog_arm(ctx, ELASTIC__WATCH_OFF);
	ctx->stats.grows++;
	elastic__log(
		ctx, ELASTIC_LOG_INFO,
		"grow in place: size %d -> %d in %.3f ms (spawn %.3f, merge %.3f) after committed step %llu",
		old, ctx->size, (elastic__now_mono() - t0) * 1e3, (t_spawn - t0) * 1e3,
		(t_merge - t_spawn) * 1e3, (unsigned long long)ctx->committed);
	return 0;
}
