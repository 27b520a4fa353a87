/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/ldpath.c: the library path the MPI runtime adds for its remote
 * daemons (pure; see ldpath.h). */
#include "config.h"

#include <string.h>

#include "ldpath.h"

#define VAR	"LD_LIBRARY_PATH="
#define SUFFIX	":$LD_LIBRARY_PATH"
#define SUFFIX2 ":${LD_LIBRARY_PATH}"

int elastic__ld_added(const char *cmd, char *out, size_t len)
{
	for (const char *p = cmd; (p = strstr(p, VAR)); p += strlen(VAR)) {
		/* an assignment of its own, not the end of a longer name */
		if (p != cmd && !strchr(" ;\t", p[-1]))
			continue;
		const char *v = p + strlen(VAR);
		size_t n = strcspn(v, "; \t"), x;
		if (n > strlen(SUFFIX) &&
		    !strncmp(v + n - strlen(SUFFIX), SUFFIX, strlen(SUFFIX)))
			x = n - strlen(SUFFIX);
		else if (n > strlen(SUFFIX2) &&
			 !strncmp(v + n - strlen(SUFFIX2), SUFFIX2, strlen(SUFFIX2)))
			x = n - strlen(SUFFIX2);
		else
			continue;
		if (x == 0 || x >= len)
			return -1;
		for (size_t i = 0; i < x; i++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789/._:+-",
				    v[i]) ||
			    !v[i])
				return -1;
		memcpy(out, v, x);
		out[x] = '\0';
		return 0;
	}
	return -1;
}

const char *elastic__ld_strip(const char *value, const char *added)
{
	size_t n = added ? strlen(added) : 0;
	if (n && !strncmp(value, added, n) && value[n] == ':')
		return value + n + 1;
	if (n && !strcmp(value, added))
		return value + n;
	return value;
}
