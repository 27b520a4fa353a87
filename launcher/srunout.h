/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/srunout.h: an srun's stderr, split as it comes (pure): the lines
 * srun writes of its own ("srun: ..."), which go to elastic-run, and the
 * rest (what the step's tasks write: a rank's program, a daemon), passed
 * on byte for byte, at once, partial lines included. */
#ifndef ELASTIC_LAUNCHER_SRUNOUT_H
#define ELASTIC_LAUNCHER_SRUNOUT_H

#include <stddef.h>

#include "report.h"

struct elastic_srunout {
	int state; /* at a line's start or in srun's prefix; srun's; another's */
	size_t n;
	char line[ELASTIC_REPORT_SRUN_TEXT + 8];
	/* where the parts go: pass (the tasks' bytes) and said (one of srun's
	 * lines, without "srun: " and the newline) */
	void (*pass)(const char *p, size_t n, void *arg);
	void (*said)(const char *line, void *arg);
	void *arg;
};

/* Start s with its outlets. */
void elastic__srunout_init(struct elastic_srunout *s,
			   void (*pass)(const char *p, size_t n, void *arg),
			   void (*said)(const char *line, void *arg), void *arg);

/* n more bytes of the stream. */
void elastic__srunout_feed(struct elastic_srunout *s, const char *buf, size_t n);

/* The stream ended: what is held back goes out. */
void elastic__srunout_end(struct elastic_srunout *s);

#endif
