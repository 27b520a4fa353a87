/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/conf.c: Key=Value configuration parsing with file:line errors. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"

#define MAX_LINE 4096

#define _fail elastic__fail

static const struct elastic_conf_key *_find(const struct elastic_conf_key *keys,
					    const char *name)
{
	for (; keys->name; keys++)
		if (strcasecmp(keys->name, name) == 0)
			return keys;
	return NULL;
}

/* Edit distance of a and b, case-insensitive, capped at 4. */
static int _distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[64], prev;
	if (la >= 64 || lb >= 64)
		return 4;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int cur = row[j];
			int sub = prev + (tolower((unsigned char)a[i - 1]) !=
					  tolower((unsigned char)b[j - 1]));
			int best =
				row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
			row[j] = sub < best ? sub : best;
			prev = cur;
		}
	}
	return row[lb] < 4 ? row[lb] : 4;
}

/* The key of the table closest to a misspelt one (at most 2 edits), or NULL. */
static const char *_nearest(const struct elastic_conf_key *keys, const char *name)
{
	const char *best = NULL;
	int bd = 3;
	for (; keys->name; keys++) {
		int d = _distance(keys->name, name);
		if (d < bd) {
			bd = d;
			best = keys->name;
		}
	}
	return best;
}

/* Index of value among the '|'-separated choices, or -1. */
static int _choice(const char *choices, const char *value)
{
	size_t vlen = strlen(value);
	int i = 0;
	for (const char *p = choices; *p; i++) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);
		if (n == vlen && strncasecmp(p, value, n) == 0)
			return i;
		if (!bar)
			break;
		p = bar + 1;
	}
	return -1;
}

static int _parse_bool(const char *v)
{
	static const char *yes[] = {"yes", "true", "on", "1"};
	static const char *no[] = {"no", "false", "off", "0"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return 1;
		if (strcasecmp(v, no[i]) == 0)
			return 0;
	}
	return -1;
}

int elastic_conf_set(const struct elastic_conf_key *keys, void *out, const char *key,
		     const char *value, const char *where, elastic_error_t *err)
{
	const struct elastic_conf_key *k = _find(keys, key);
	char *field;

	if (!where)
		where = "configuration";
	if (!k) {
		const char *near = _nearest(keys, key);
		if (near)
			return _fail(err, EINVAL,
				     "%s: unknown key '%s' (did you mean '%s'?)", where,
				     key, near);
		/* The list as long as the message has room for: a cut message
		 * would lose its closing parenthesis, or all of the list. */
		char known[200] = "";
		size_t used = 0, fixed = strlen(where) + strlen(key) + 32;
		size_t room = sizeof(err->text) > fixed ? sizeof(err->text) - fixed : 0;
		if (room > sizeof(known))
			room = sizeof(known);
		for (const struct elastic_conf_key *p = keys; p->name; p++) {
			size_t n = strlen(p->name) + 2;
			if (used + n + 6 >= room) {
				snprintf(known + used, sizeof(known) - used, "%s...",
					 used ? ", " : "");
				break;
			}
			used += snprintf(known + used, sizeof(known) - used, "%s%s",
					 used ? ", " : "", p->name);
		}
		return _fail(err, EINVAL, "%s: unknown key '%s' (known: %s)", where, key,
			     known);
	}
	field = (char *)out + k->offset;
	switch (k->type) {
	case ELASTIC_CONF_STRING: {
		char *dup = strdup(value);
		if (!dup)
			return _fail(err, ENOMEM, "%s: out of memory", where);
		free(*(char **)field);
		*(char **)field = dup;
		return 0;
	}
	case ELASTIC_CONF_INT: {
		char *end;
		long v;
		errno = 0;
		v = strtol(value, &end, 10);
		if (!*value || *end || errno == ERANGE || isspace((unsigned char)*value))
			return _fail(err, EINVAL, "%s: %s=%s is not an integer", where,
				     k->name, value);
		if (v < k->min || v > k->max)
			return _fail(err, EINVAL, "%s: %s=%s is out of range [%ld, %ld]",
				     where, k->name, value, k->min, k->max);
		*(long *)field = v;
		return 0;
	}
	case ELASTIC_CONF_BOOL: {
		int b = _parse_bool(value);
		if (b < 0)
			return _fail(err, EINVAL,
				     "%s: %s=%s is not a boolean (yes or no)", where,
				     k->name, value);
		*(int *)field = b;
		return 0;
	}
	case ELASTIC_CONF_ENUM: {
		int c = _choice(k->choices, value);
		if (c < 0)
			return _fail(err, EINVAL, "%s: %s=%s is not one of %s", where,
				     k->name, value, k->choices);
		*(int *)field = c;
		return 0;
	}
	}
	return _fail(err, EINVAL, "%s: key '%s' has a bad type in the table", where, key);
}

void elastic_conf_free(const struct elastic_conf_key *keys, void *out)
{
	if (!out)
		return;
	for (; keys->name; keys++)
		if (keys->type == ELASTIC_CONF_STRING) {
			char **s = (char **)((char *)out + keys->offset);
			free(*s);
			*s = NULL;
		}
}

/* Deep copy: the strings of dst become private duplicates. */
static int _dup_strings(const struct elastic_conf_key *keys, void *dst)
{
	const struct elastic_conf_key *k;
	for (k = keys; k->name; k++) {
		char **s = (char **)((char *)dst + k->offset);
		if (k->type == ELASTIC_CONF_STRING && *s && !(*s = strdup(*s)))
			goto fail;
	}
	return 0;
fail:
	/* Those before k are duplicates, k and after still alias the source. */
	for (const struct elastic_conf_key *p = keys; p < k; p++)
		if (p->type == ELASTIC_CONF_STRING)
			free(*(char **)((char *)dst + p->offset));
	errno = ENOMEM;
	return -1;
}

int elastic_conf_defaults(const struct elastic_conf_key *keys, void *out, size_t size,
			  elastic_error_t *err)
{
	memset(out, 0, size);
	for (const struct elastic_conf_key *k = keys; k->name; k++)
		if (k->def &&
		    elastic_conf_set(keys, out, k->name, k->def, "default", err) < 0) {
			elastic_conf_free(keys, out);
			return -1;
		}
	return 0;
}

static char *_trim(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int elastic_conf_parse_text(const struct elastic_conf_key *keys, void *out, size_t size,
			    const char *text, const char *origin, elastic_error_t *err)
{
	void *work = malloc(size ? size : 1);
	char line[MAX_LINE], where[PATH_MAX + 32];
	int lineno = 0, rc = -1, saved, *seen; /* seen: line of each key, 0: none */
	size_t nkeys = 0;

	while (keys[nkeys].name)
		nkeys++;
	seen = calloc(nkeys + 1, sizeof(*seen));
	if (!work || !seen) {
		free(work);
		free(seen);
		return _fail(err, ENOMEM, "%s: out of memory", origin);
	}
	memcpy(work, out, size);
	if (_dup_strings(keys, work) < 0) {
		free(work);
		free(seen);
		return _fail(err, ENOMEM, "%s: out of memory", origin);
	}
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);
		const struct elastic_conf_key *k;
		char *s, *eq, *hash;

		lineno++;
		snprintf(where, sizeof(where), "%s:%d", origin, lineno);
		if (n >= sizeof(line)) {
			_fail(err, EINVAL, "%s: line longer than %d bytes", where,
			      MAX_LINE - 1);
			goto out;
		}
		memcpy(line, text, n);
		line[n] = '\0';
		text += nl ? n + 1 : n;
		if (memchr(line, '\0', n)) {
			_fail(err, EINVAL, "%s: NUL byte in line", where);
			goto out;
		}
		if ((hash = strchr(line, '#')))
			*hash = '\0';
		s = _trim(line);
		if (!*s)
			continue;
		if (!(eq = strchr(s, '='))) {
			_fail(err, EINVAL, "%s: expected Key=Value, got '%s'", where, s);
			goto out;
		}
		*eq = '\0';
		if (!*_trim(s)) {
			_fail(err, EINVAL, "%s: empty key before '='", where);
			goto out;
		}
		s = _trim(s);
		if ((k = _find(keys, s))) {
			if (seen[k - keys]) {
				_fail(err, EINVAL,
				      "%s: %s given a second time (first at %s:%d); each key may appear once",
				      where, k->name, origin, seen[k - keys]);
				goto out;
			}
			seen[k - keys] = lineno;
		}
		if (elastic_conf_set(keys, work, s, _trim(eq + 1), where, err) < 0)
			goto out;
	}
	rc = 0;
out:
	saved = errno;
	if (rc == 0) {
		elastic_conf_free(keys, out);
		memcpy(out, work, size);
	} else {
		elastic_conf_free(keys, work);
	}
	free(work);
	free(seen);
	errno = saved;
	return rc;
}

int elastic_conf_parse_file(const struct elastic_conf_key *keys, void *out, size_t size,
			    const char *path, elastic_error_t *err)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (!f)
		return _fail(err, errno, "%s: cannot open: %s", path, strerror(errno));
	for (;;) {
		size_t got;
		if (cap - len < 4096) {
			char *p = realloc(text, cap + 65536);
			if (!p) {
				fclose(f);
				free(text);
				return _fail(err, ENOMEM, "%s: out of memory", path);
			}
			text = p;
			cap += 65536;
		}
		got = fread(text + len, 1, cap - len - 1, f);
		len += got;
		if (got == 0)
			break;
		if (len > (1u << 20)) {
			fclose(f);
			free(text);
			return _fail(err, EFBIG, "%s: larger than 1 MiB", path);
		}
	}
	if (ferror(f)) {
		int e = errno;
		fclose(f);
		free(text);
		return _fail(err, e, "%s: read error: %s", path, strerror(e));
	}
	fclose(f);
	text[len] = '\0';
	if (strlen(text) != len) {
		free(text);
		return _fail(err, EINVAL, "%s: contains a NUL byte", path);
	}
	rc = elastic_conf_parse_text(keys, out, size, text, path, err);
	free(text);
	return rc;
}

/* The value of key k in conf as it would be written in the file. */
static void _format(const struct elastic_conf_key *k, const void *conf, char *buf,
		    size_t size)
{
	const char *field = (const char *)conf + k->offset;

	switch (k->type) {
	case ELASTIC_CONF_STRING: {
		const char *v = *(char *const *)field;
		snprintf(buf, size, "%s", v ? v : "");
		return;
	}
	case ELASTIC_CONF_INT:
		snprintf(buf, size, "%ld", *(const long *)field);
		return;
	case ELASTIC_CONF_BOOL:
		snprintf(buf, size, "%s", *(const int *)field ? "yes" : "no");
		return;
	case ELASTIC_CONF_ENUM: {
		const char *p = k->choices;
		for (int i = *(const int *)field; i > 0 && p; i--)
			if ((p = strchr(p, '|')))
				p++;
		snprintf(buf, size, "%.*s", p ? (int)strcspn(p, "|") : 1, p ? p : "?");
		return;
	}
	}
	snprintf(buf, size, "?");
}

int elastic_conf_print(const struct elastic_conf_key *keys, const void *conf, FILE *f)
{
	char value[4096];

	for (const struct elastic_conf_key *k = keys; k->name; k++) {
		_format(k, conf, value, sizeof(value));
		if (fprintf(f, "%s=%s\n", k->name, value) < 0)
			return -1;
	}
	return 0;
}
