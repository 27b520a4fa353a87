/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/grow.c: growth in place. Where elastic-run finds that its MPI
 * runtime can start ranks on a new node inside a running mpirun and merge
 * them under fault tolerance (Open MPI 5.0.x: MPI_Comm_spawn with
 * PMIX_ADD_HOST, then MPI_Intercomm_merge), it writes the ranks to add into
 * the file ELASTIC_RUN_JOIN names before it asks for a planned change
 * (SIGUSR1). At the step boundary the ranks agree on it, start the joiners
 * through the rank wrapper, merge with them, and hand them the committed
 * state: the ranks that ran go on, none restarts, no snapshot is read. The
 * joiners find their parents in elastic_init and take the state at their
 * first elastic_step_begin, where a relaunched rank reads a snapshot.
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

#include "internal.h"

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
