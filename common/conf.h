/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/conf.h: the one Key=Value configuration parser of every component. */
#ifndef ELASTIC_COMMON_CONF_H
#define ELASTIC_COMMON_CONF_H

#include <stddef.h>
#include <stdio.h>

#include "contract.h" /* elastic_error_t, elastic__errorf, elastic__fail */

enum elastic_conf_type {
	ELASTIC_CONF_STRING, /* char * (malloc'd, owned by the struct) */
	ELASTIC_CONF_INT,    /* long, checked against [min, max] */
	ELASTIC_CONF_BOOL,   /* int: yes/no, true/false, on/off, 1/0 */
	ELASTIC_CONF_ENUM,   /* int: index into the '|'-separated choices */
};

/* One key of a configuration table; tables end with a NULL name. */
struct elastic_conf_key {
	const char *name; /* matched case-insensitively, like Slurm */
	enum elastic_conf_type type;
	size_t offset;	     /* of the field in the caller's struct */
	const char *def;     /* default, as it would be written; NULL: none */
	long min, max;	     /* ELASTIC_CONF_INT bounds */
	const char *choices; /* ELASTIC_CONF_ENUM: "a|b|c" */
};

/* Set every key of the table to its default in the struct at out (zeroed
 * first). Returns 0, or -1 if a default itself is invalid. */
int elastic_conf_defaults(const struct elastic_conf_key *keys, void *out, size_t size,
			  elastic_error_t *err);

/* Set one key from text; where names the origin for messages ("file:line").
 * Unknown keys and bad values fail with -1 (errno EINVAL) and err naming
 * where, the key and what is allowed; the struct is unchanged then. */
int elastic_conf_set(const struct elastic_conf_key *keys, void *out, const char *key,
		     const char *value, const char *where, elastic_error_t *err);

/* Parse Key=Value lines ('#' comments, blank lines, spaces around '=') from
 * text, naming it origin in messages. A key given twice is an error naming
 * both lines (the reader could not tell which one counts). On any error nothing in out changes:
 * the parse works on a copy of size bytes and commits only on success. */
int elastic_conf_parse_text(const struct elastic_conf_key *keys, void *out, size_t size,
			    const char *text, const char *origin, elastic_error_t *err);

/* The same for a file; a missing or unreadable file is an error naming it. */
int elastic_conf_parse_file(const struct elastic_conf_key *keys, void *out, size_t size,
			    const char *path, elastic_error_t *err);

/* Write every key of the table as Key=Value, one a line, in table order,
 * with the value conf holds (as it would be written in the file). Returns
 * 0, or -1 with errno if writing failed. */
int elastic_conf_print(const struct elastic_conf_key *keys, const void *conf, FILE *f);

/* Free the strings of the struct (not the struct). Accepts NULL. */
void elastic_conf_free(const struct elastic_conf_key *keys, void *out);

#endif
