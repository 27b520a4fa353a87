/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/gpuset.c: parse the GPUs of an elastic job's Slurm jobs from
 * `scontrol show job -d` text, trim them to the allowed sizes, and write the
 * hostfile of elastic-run and the map of its ranks (gpuset.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuset.h"

#define _fail elastic__fail

int elastic__parse_idx(const char *s, int *idx, int max)
{
	int n = 0;
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b;
		if (end == s || a < 0 || a > 1 << 20)
			goto bad;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b > 1 << 20)
				goto bad;
			s = end;
		}
		for (long i = a; i <= b; i++) {
			if (n >= max)
				goto bad;
			idx[n++] = (int)i;
		}
		if (*s == ',')
			s++;
		else if (*s)
			goto bad;
	}
	return n;
bad:
	errno = EINVAL;
	return -1;
}

int elastic__parse_idx_owner(const char *s, unsigned long job, int *idx,
			     unsigned long *owner, int max)
{
	int n = 0;
	while (*s) {
		size_t len = strcspn(s, ",");
		char item[48], *at, *end;
		unsigned long own = job;
		if (len == 0 || len >= sizeof(item))
			goto bad;
		memcpy(item, s, len);
		item[len] = '\0';
		if ((at = strchr(item, '@'))) {
			*at = '\0';
			own = strtoul(at + 1, &end, 10);
			if (end == at + 1 || *end || own == 0)
				goto bad;
		}
		int k = elastic__parse_idx(item, idx + n, max - n);
		if (k <= 0)
			goto bad;
		for (int i = 0; i < k; i++)
			owner[n + i] = own;
		n += k;
		s += len;
		if (*s == ',' && *++s == '\0')
			goto bad;
	}
	return n;
bad:
	errno = EINVAL;
	return -1;
}

static struct elastic_host *_host(struct elastic_gpuset *set, const char *name,
				  unsigned long job)
{
	for (int i = 0; i < set->nhosts; i++)
		if (strcmp(set->host[i].name, name) == 0)
			return &set->host[i];
	if (set->nhosts >= ELASTIC_GPUSET_MAX_HOSTS ||
	    strlen(name) >= sizeof(set->host[0].name))
		return NULL;
	struct elastic_host *h = &set->host[set->nhosts++];
	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->job = job;
	return h;
}

/* Value of "Key=" in text starting at p (up to whitespace) into out. */
static int _field(const char *text, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);
	for (const char *p = text; (p = strstr(p, key)); p += kl) {
		if (p != text && !isspace((unsigned char)p[-1]))
			continue;
		p += kl;
		size_t n = strcspn(p, " \t\n");
		if (n >= len)
			return -1;
		memcpy(out, p, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

static int _add_gpus(struct elastic_gpuset *set, unsigned long job, const char *names,
		     const int *idx, int nidx, elastic_error_t *err)
{
	int added = 0;
	const char *p = names;
	while (*p) {
		char name[64];
		size_t n = strcspn(p, "\n");
		if (n && n < sizeof(name)) {
			memcpy(name, p, n);
			name[n] = '\0';
			struct elastic_host *h = _host(set, name, job);
			if (!h)
				return _fail(err, E2BIG,
					     "too many hosts or host name too long: %s",
					     name);
			for (int i = 0; i < nidx; i++) {
				if (h->ngpus >= ELASTIC_GPUSET_MAX_GPUS)
					return _fail(err, E2BIG,
						     "more than %d GPUs on %s",
						     ELASTIC_GPUSET_MAX_GPUS, name);
				h->gpu_job[h->ngpus] = job;
				h->gpu[h->ngpus++] = idx[i];
				set->total++;
				added++;
			}
		}
		p += n;
		if (*p)
			p++;
	}
	return added;
}

int elastic__slurm_job_unknown(const char *text)
{
	/* Slurm's words for ESLURM_INVALID_JOB_ID (slurm_strerror) */
	return text && strstr(text, "Invalid job id specified") != NULL;
}

int elastic__gpuset_add_job(struct elastic_gpuset *set, unsigned long job,
			    const char *text,
			    char *(*expand)(const char *hostlist, void *arg), void *arg,
			    elastic_error_t *err)
{
	char state[32], nodes[4096];
	int added = 0, lines = 0;

	if (_field(text, "JobState=", state, sizeof(state)) < 0)
		return _fail(err, EINVAL, "job %lu: no JobState in scontrol's output",
			     job);
	if (strcmp(state, "RUNNING") != 0)
		return _fail(err, EAGAIN, "job %lu is %s, not RUNNING", job, state);
	/* Detail lines: "Nodes=node[1-2] CPU_IDs=0 Mem=0 GRES=gpu:3(IDX:0-2)". */
	for (const char *p = text; (p = strstr(p, "Nodes=")); p++) {
		if (p == text || !isspace((unsigned char)p[-1]))
			continue;
		char gres[512] = "", *names;
		int idx[ELASTIC_GPUSET_MAX_GPUS], nidx = 1, rc;
		const char *eol = strchr(p, '\n');
		size_t linelen = eol ? (size_t)(eol - p) : strlen(p);
		char line[8192];
		if (linelen >= sizeof(line))
			return _fail(err, EINVAL, "job %lu: detail line too long", job);
		memcpy(line, p, linelen);
		line[linelen] = '\0';
		if (_field(line, "Nodes=", nodes, sizeof(nodes)) < 0)
			return _fail(err, EINVAL, "job %lu: bad Nodes= detail", job);
		idx[0] = -1;
		if (_field(line, "GRES=", gres, sizeof(gres)) == 0 &&
		    strncmp(gres, "gpu", 3) == 0) {
			/* gpu:3(IDX:0-2) or gpu:a100:2(IDX:0,2) */
			char *open = strstr(gres, "(IDX:"), *close;
			if (!open || !(close = strchr(open, ')')))
				return _fail(err, EINVAL,
					     "job %lu: cannot read GPU indices in '%s'",
					     job, gres);
			*close = '\0';
			nidx = elastic__parse_idx(open + 5, idx, ELASTIC_GPUSET_MAX_GPUS);
			if (nidx < 0)
				return _fail(err, EINVAL,
					     "job %lu: bad GPU index list in '%s'", job,
					     gres);
		}
		if (!(names = expand(nodes, arg)))
			return _fail(err, EINVAL, "job %lu: cannot expand host list '%s'",
				     job, nodes);
		rc = _add_gpus(set, job, names, idx, nidx, err);
		free(names);
		if (rc < 0)
			return -1;
		added += rc;
		lines++;
	}
	if (!lines)
		return _fail(err, EINVAL,
			     "job %lu: no node detail (run scontrol with -d)", job);
	if (set->njobs < ELASTIC_GPUSET_MAX_JOBS && !elastic__gpuset_has_job(set, job))
		set->jobs[set->njobs++] = job;
	set->raw = set->total;
	return added;
}

int elastic__gpuset_has_job(const struct elastic_gpuset *set, unsigned long job)
{
	for (int i = 0; i < set->njobs; i++)
		if (set->jobs[i] == job)
			return 1;
	return 0;
}

int elastic__gpuset_trim(struct elastic_gpuset *set, const struct elastic_request *req)
{
	int want = (int)elastic_sizes_fit(&req->sizes, req->min_gpus, req->max_gpus,
					  set->total);
	set->raw = set->total;
	while (set->total > want && set->nhosts > 0) {
		struct elastic_host *h = &set->host[set->nhosts - 1];
		h->ngpus--;
		set->total--;
		if (h->ngpus == 0)
			set->nhosts--;
	}
	return set->total;
}

int elastic__gpuset_leave(const struct elastic_gpuset *set,
			  int (*gone)(unsigned long job, const void *arg),
			  const void *arg, char *buf, size_t len)
{
	int n = 0;
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (int h = 0; h < set->nhosts; h++)
		for (int g = 0; g < set->host[h].ngpus; g++) {
			if (!gone(set->host[h].gpu_job[g], arg))
				continue;
			int w = snprintf(buf + off, off < len ? len - off : 0, "%s %d\n",
					 set->host[h].name, set->host[h].gpu[g]);
			if (w < 0 || off + (size_t)w >= len)
				return -1;
			off += (size_t)w;
			n++;
		}
	return n;
}

int elastic__gpuset_drop(struct elastic_gpuset *set,
			 int (*gone)(unsigned long job, const void *arg), const void *arg)
{
	int dropped = 0, nh = 0;

	for (int h = 0; h < set->nhosts; h++) {
		struct elastic_host *x = &set->host[h];
		int k = 0;
		for (int g = 0; g < x->ngpus; g++) {
			if (gone(x->gpu_job[g], arg)) {
				dropped++;
				continue;
			}
			x->gpu[k] = x->gpu[g];
			x->gpu_job[k++] = x->gpu_job[g];
		}
		x->ngpus = k;
		if (k > 0) {
			if (nh != h)
				set->host[nh] = *x;
			nh++;
		}
	}
	set->nhosts = nh;
	set->total -= dropped;
	set->raw -= dropped;
	return dropped;
}

static int _write(const char *path, elastic_error_t *err,
		  int (*emit)(FILE *, const struct elastic_gpuset *),
		  const struct elastic_gpuset *set)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return _fail(err, errno, "%s: %s", path, strerror(errno));
	int rc = emit(f, set);
	if (fclose(f) != 0 || rc < 0)
		return _fail(err, EIO, "%s: write failed", path);
	return 0;
}

static int _emit_hostfile(FILE *f, const struct elastic_gpuset *set)
{
	for (int i = 0; i < set->nhosts; i++)
		if (fprintf(f, "%s slots=%d\n", set->host[i].name, set->host[i].ngpus) <
		    0)
			return -1;
	return 0;
}

int elastic__gpuset_write_hostfile(const struct elastic_gpuset *set, const char *path,
				   elastic_error_t *err)
{
	return _write(path, err, _emit_hostfile, set);
}

void elastic__gpuset_describe(const struct elastic_gpuset *set, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < set->nhosts && used < len; i++) {
		const struct elastic_host *h = &set->host[i];
		used += snprintf(buf + used, len - used, "%s%s:%d GPU%s (job %lu)",
				 i ? ", " : "", h->name, h->ngpus,
				 h->ngpus == 1 ? "" : "s", h->job);
	}
}

/* ---- ELASTIC_RUN_MAP (gpuset.h). */

char *elastic__map_env(const struct elastic_gpuset *set)
{
	size_t cap = 64 + set->nhosts * (64 + 24 + ELASTIC_GPUSET_MAX_GPUS * 32),
	       used = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (int i = 0; i < set->nhosts; i++) {
		const struct elastic_host *h = &set->host[i];
		used += snprintf(s + used, cap - used, "%s%s=%lu:", i ? ";" : "", h->name,
				 h->job);
		for (int g = 0; g < h->ngpus; g++) {
			used += snprintf(s + used, cap - used, "%s%d", g ? "," : "",
					 h->gpu[g]);
			if (h->gpu_job[g] && h->gpu_job[g] != h->job)
				used += snprintf(s + used, cap - used, "@%lu",
						 h->gpu_job[g]);
		}
	}
	return s;
}

int elastic__map_find(const char *map, const char *host, unsigned long *job, char *gpus,
		      size_t len)
{
	size_t hl = strlen(host);
	for (const char *p = map; p && *p;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n > hl && strncmp(p, host, hl) == 0 && p[hl] == '=') {
			char *colon;
			*job = strtoul(p + hl + 1, &colon, 10);
			if (*colon != ':')
				return -1;
			size_t gl = n - (size_t)(colon + 1 - p);
			if (gl >= len)
				return -1;
			memcpy(gpus, colon + 1, gl);
			gpus[gl] = '\0';
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}
