/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/runmap.c: ELASTIC_RUN_MAP, where each host's ranks run (pure). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runmap.h"

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
