/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/admin.c: administrators' pause, drain and resume of elastic
 * activity, and the bounds they put on a tick's plan. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "statefile.h"

static const char *_mode_names[] = {"none", "pause", "drain"};

static int _find(const struct ed_admin *a, const char *node)
{
	for (int i = 0; i < a->nnodes; i++)
		if (strcmp(a->nodes[i].name, node) == 0)
			return i;
	return -1;
}

int ed_admin_apply(struct ed_admin *a, const char *action, const char *node,
		   elastic_error_t *err)
{
	enum ed_admin_mode mode = ED_ADMIN_NONE;
	int i;

	for (int m = 0; m < 3; m++)
		if (m != ED_ADMIN_NONE && strcmp(action, _mode_names[m]) == 0)
			mode = (enum ed_admin_mode)m;
	if (mode == ED_ADMIN_NONE && strcmp(action, "resume") != 0)
		return elastic__fail(err, EINVAL,
				     "unknown action '%s' (pause, drain or resume)",
				     action);
	if (!node || !*node) {
		if (mode == ED_ADMIN_NONE)
			memset(a, 0, sizeof(*a));
		else
			a->cluster = mode;
		return 0;
	}
	if (strlen(node) >= sizeof(a->nodes[0].name))
		return elastic__fail(err, EINVAL, "node name '%.40s...' too long", node);
	i = _find(a, node);
	if (mode == ED_ADMIN_NONE) {
		if (i >= 0)
			a->nodes[i] = a->nodes[--a->nnodes];
		return 0;
	}
	if (i < 0) {
		if (a->nnodes >= ED_ADMIN_NODES_MAX)
			return elastic__fail(
				err, ENOSPC,
				"%d nodes paused or drained already (the most)",
				ED_ADMIN_NODES_MAX);
		i = a->nnodes++;
		snprintf(a->nodes[i].name, sizeof(a->nodes[i].name), "%s", node);
	}
	a->nodes[i].mode = mode;
	return 0;
}

enum ed_admin_mode ed_admin_node(const struct ed_admin *a, const char *node)
{
	int i = _find(a, node);

	if (a->cluster == ED_ADMIN_DRAIN)
		return ED_ADMIN_DRAIN;
	return i < 0 ? ED_ADMIN_NONE : a->nodes[i].mode;
}

/* Append "; label: n1,n2" for the nodes in mode (cut to len). */
static void _list(const struct ed_admin *a, enum ed_admin_mode mode, const char *label,
		  char *buf, size_t len)
{
	size_t n = strlen(buf);
	int count = 0;

	for (int i = 0; i < a->nnodes && n < len; i++) {
		if (a->nodes[i].mode != mode)
			continue;
		if (count++ == 0)
			n += (size_t)snprintf(buf + n, len - n, "%s%s: ", n ? "; " : "",
					      label);
		else
			n += (size_t)snprintf(buf + n, len - n, ",");
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s", a->nodes[i].name);
	}
}

void ed_admin_describe(const struct ed_admin *a, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = '\0';
	if (a->cluster == ED_ADMIN_PAUSE)
		snprintf(buf, len, "paused (no grow, no shrink)");
	else if (a->cluster == ED_ADMIN_DRAIN)
		snprintf(buf, len, "drained (every node)");
	if (a->cluster != ED_ADMIN_DRAIN)
		_list(a, ED_ADMIN_DRAIN, "drained", buf, len);
	_list(a, ED_ADMIN_PAUSE, "no new grants", buf, len);
}

void ed_admin_bound(const struct ed_admin *a, struct ed_snapshot *s,
		    const struct elastic_policy_place *const *held, const int *nheld,
		    struct elastic_policy_place *const *out, int *nout)
{
	for (int j = 0; j < s->njobs; j++) {
		nout[j] = 0;
		for (int k = 0; k < nheld[j]; k++) {
			struct elastic_policy_place p = held[j][k];
			if (ed_admin_node(a, s->nodes[p.node].name) == ED_ADMIN_DRAIN)
				p.gpus = p.pinned;
			if (p.gpus > 0)
				out[j][nout[j]++] = p;
		}
	}
	for (int n = 0; n < s->nnodes; n++) {
		enum ed_admin_mode m = ed_admin_node(a, s->nodes[n].name);
		int cap = s->nodes[n].busy;
		if (m == ED_ADMIN_NONE)
			continue;
		/* what the policy may count there: kept places only */
		for (int j = 0; j < s->njobs; j++)
			for (int k = 0; k < nout[j]; k++)
				if (out[j][k].node == n)
					cap += out[j][k].gpus;
		if (cap < s->nodes[n].gpus)
			s->nodes[n].gpus = cap;
	}
}

int ed_admin_hold_plan(const struct ed_snapshot *s,
		       const struct elastic_policy_place *const *held, const int *nheld,
		       struct ed_plan *out)
{
	memset(out, 0, sizeof(*out));
	out->targets = calloc((size_t)s->njobs + 1, sizeof(*out->targets));
	if (!out->targets)
		goto nomem;
	for (int j = 0; j < s->njobs; j++) {
		struct ed_target *t = &out->targets[j];
		t->job = s->jobs[j].id;
		t->place = calloc((size_t)nheld[j] + 1, sizeof(*t->place));
		if (!t->place)
			goto nomem;
		out->ntargets = j + 1;
		for (int k = 0; k < nheld[j]; k++) {
			t->place[k] = held[j][k];
			t->cur += held[j][k].gpus;
		}
		t->nplace = nheld[j];
		t->gpus = t->cur;
		snprintf(t->explain, sizeof(t->explain),
			 "kept at %d GPUs: elastic activity paused by an administrator",
			 t->gpus);
	}
	out->ntargets = s->njobs;
	return 0;
nomem:
	ed_plan_free(out);
	errno = ENOMEM;
	return -1;
}

static void _write_admin(FILE *f, const void *arg)
{
	const struct ed_admin *a = arg;

	fprintf(f, "# elasticd: what administrators paused or drained (elastic-ctl)\n");
	if (a->cluster != ED_ADMIN_NONE)
		fprintf(f, "cluster %s\n", _mode_names[a->cluster]);
	for (int i = 0; i < a->nnodes; i++)
		fprintf(f, "node %s %s\n", a->nodes[i].name,
			_mode_names[a->nodes[i].mode]);
}

int ed_admin_save(const struct ed_admin *a, const char *path, elastic_error_t *err)
{
	return ed_state_replace(path, "state file", _write_admin, a, err);
}

int ed_admin_load(struct ed_admin *a, const char *path, elastic_error_t *err)
{
	char line[512], copy[512];
	FILE *f;
	int no = 0, rc = 0;

	memset(a, 0, sizeof(*a));
	if (!(f = fopen(path, "r"))) {
		if (errno == ENOENT)
			return 0;
		return elastic__fail(err, errno, "state file %s: %s", path,
				     strerror(errno));
	}
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		char *t[4], *save = NULL;
		int nt = 0;

		no++;
		snprintf(copy, sizeof(copy), "%s", line);
		copy[strcspn(copy, "\r\n")] = '\0';
		if (!strchr(line, '\n') && !feof(f)) {
			rc = elastic__fail(err, EINVAL,
					   "state file %s, line %d: too long", path, no);
			break;
		}
		for (char *w = strtok_r(line, " \t\r\n", &save); w && nt < 4;
		     w = strtok_r(NULL, " \t\r\n", &save))
			t[nt++] = w;
		if (nt == 0 || t[0][0] == '#')
			continue;
		if (nt == 2 && !strcmp(t[0], "cluster") && strcmp(t[1], "resume"))
			rc = ed_admin_apply(a, t[1], NULL, err);
		else if (nt == 3 && !strcmp(t[0], "node") && strcmp(t[2], "resume"))
			rc = ed_admin_apply(a, t[2], t[1], err);
		else
			rc = -1;
		if (rc < 0)
			rc = elastic__fail(
				err, EINVAL,
				"state file %s, line %d: '%.60s' is not 'cluster MODE' or 'node NAME MODE' (MODE: pause or drain)",
				path, no, copy);
	}
	if (rc == 0 && ferror(f))
		rc = elastic__fail(err, EIO, "state file %s: read error", path);
	fclose(f);
	if (rc < 0)
		memset(a, 0, sizeof(*a));
	return rc;
}
