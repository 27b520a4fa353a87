/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/statefile.c: elasticd's state files (statefile.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "statefile.h"

int ed_state_replace(const char *path, const char *what,
		     void (*writer)(FILE *f, const void *arg), const void *arg,
		     elastic_error_t *err)
{
	char tmp[4200];
	FILE *f;
	int bad, e;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return elastic__fail(err, ENAMETOOLONG, "%s %s: name too long", what,
				     path);
	if (!(f = fopen(tmp, "w")))
		return elastic__fail(err, errno, "%s %s: %s", what, tmp, strerror(errno));
	writer(f, arg);
	bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
	e = errno;
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	if (bad || rename(tmp, path) != 0) {
		if (!bad)
			e = errno;
		unlink(tmp);
		return elastic__fail(err, e, "%s %s: %s", what, bad ? tmp : path,
				     strerror(e));
	}
	return 0;
}

struct _models {
	int n;
	const uint32_t *jobs;
	const struct elastic_scaling *const *models;
};

static void _write_models(FILE *f, const void *arg)
{
	const struct _models *m = arg;
	char line[2048];

	fprintf(f, "# elasticd: each job's measured scaling: job ID "
		   "GPUS:SAMPLES_PER_S:WEIGHT:WHEN,...\n");
	for (int i = 0; i < m->n; i++) {
		if (!m->models[i] || !m->models[i]->nobs ||
		    elastic_scaling_format(m->models[i], line, sizeof(line)) >=
			    (int)sizeof(line))
			continue;
		fprintf(f, "job %" PRIu32 " %s\n", m->jobs[i], line);
	}
}

int ed_scaling_save(const char *path, int n, const uint32_t *jobs,
		    const struct elastic_scaling *const *models, elastic_error_t *err)
{
	struct _models m = {n, jobs, models};
	return ed_state_replace(path, "scaling file", _write_models, &m, err);
}

int ed_scaling_load(const char *path,
		    void (*take)(void *arg, uint32_t job,
				 const struct elastic_scaling *m),
		    void *arg, elastic_error_t *err)
{
	char line[2200], obs[2100];
	FILE *f;
	int no = 0, rc = 0;

	if (!(f = fopen(path, "r"))) {
		if (errno == ENOENT)
			return 0;
		return elastic__fail(err, errno, "scaling file %s: %s", path,
				     strerror(errno));
	}
	while (fgets(line, sizeof(line), f)) {
		struct elastic_scaling m = {0};
		unsigned long job;
		char *end;

		no++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = elastic__fail(err, EINVAL,
					   "scaling file %s, line %d: too long", path,
					   no);
			break;
		}
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (strncmp(line, "job ", 4) != 0 ||
		    (job = strtoul(line + 4, &end, 10)) == 0 || job > UINT32_MAX ||
		    *end != ' ' || snprintf(obs, sizeof(obs), "%s", end + 1) < 0 ||
		    elastic_scaling_parse(&m, obs) < 0) {
			rc = elastic__fail(
				err, EINVAL,
				"scaling file %s, line %d: '%.60s' is not 'job ID GPUS:RATE:WEIGHT:WHEN,...'",
				path, no, line);
			break;
		}
		take(arg, (uint32_t)job, &m);
	}
	if (rc == 0 && ferror(f))
		rc = elastic__fail(err, EIO, "scaling file %s: read error", path);
	fclose(f);
	return rc;
}
