/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/srunout.c: an srun's stderr, split into srun's own lines and the
 * tasks' bytes (pure). */
#include "config.h"

#include <string.h>

#include "srunout.h"

/* Every line srun writes of its own starts so (its log's prefix). */
static const char _prefix[] = "srun: ";
#define PREFIX_LEN (sizeof(_prefix) - 1)

enum { AT_START, SRUN_LINE, OTHER_LINE };

void elastic__srunout_init(struct elastic_srunout *s,
			   void (*pass)(const char *p, size_t n, void *arg),
			   void (*said)(const char *line, void *arg), void *arg)
{
	memset(s, 0, sizeof(*s));
	s->pass = pass;
	s->said = said;
	s->arg = arg;
}

/* srun's line so far, said (without its prefix). */
static void _say(struct elastic_srunout *s)
{
	s->line[s->n] = '\0';
	s->said(s->line + PREFIX_LEN, s->arg);
	s->n = 0;
	s->state = AT_START;
}

void elastic__srunout_feed(struct elastic_srunout *s, const char *buf, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (s->state == OTHER_LINE) {
			/* the rest of a task's line, in one piece */
			const char *nl = memchr(buf + i, '\n', n - i);
			size_t k = nl ? (size_t)(nl - (buf + i)) + 1 : n - i;
			s->pass(buf + i, k, s->arg);
			i += k;
			if (nl)
				s->state = AT_START;
			continue;
		}
		char c = buf[i++];
		if (s->state == SRUN_LINE) {
			if (c == '\n')
				_say(s);
			else if (s->n + 1 < sizeof(s->line))
				s->line[s->n++] = c; /* (longer: cut) */
			continue;
		}
		/* at a line's start: as long as it may be srun's, held back */
		if (c == _prefix[s->n]) {
			s->line[s->n++] = c;
			if (s->n == PREFIX_LEN)
				s->state = SRUN_LINE;
			continue;
		}
		if (s->n)
			s->pass(s->line, s->n, s->arg);
		s->n = 0;
		s->pass(&c, 1, s->arg);
		s->state = c == '\n' ? AT_START : OTHER_LINE;
	}
}

void elastic__srunout_end(struct elastic_srunout *s)
{
	if (s->state == SRUN_LINE)
		_say(s);
	else if (s->n)
		s->pass(s->line, s->n, s->arg);
	s->n = 0;
	s->state = AT_START;
}
