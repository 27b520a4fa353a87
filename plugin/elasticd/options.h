/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/options.h: elasticd's command line, the elastic.conf it
 * reads, and -t (the configuration checked and printed). */
#ifndef ELASTICD_OPTIONS_H
#define ELASTICD_OPTIONS_H

#include <stddef.h>

#include "conf.h"
#include "site_conf.h"

/* The command line. */
struct ed_opts {
	const char *conf_path; /* -f; NULL: the default path */
	const char *log_path;  /* -L; NULL: LogFile */
	int foreground, port, verbose, dry, test;
};

/* Fills o from argv (usage errors and -h/-V print here). Returns -1 to go
 * on, else the status to exit with. */
int ed_options_parse(int argc, char **argv, struct ed_opts *o);

/* elastic.conf: the file named (it must exist), else the default path,
 * where no file means the built-in defaults. Sets path to the file used.
 * Returns 0 (read), 1 (defaults) or -1 with err; conf is the caller's to
 * free (elastic_site_conf_free) unless -1. */
int ed_options_load_conf(const char *named, struct elastic_site_conf *conf, char *path,
			 size_t size, elastic_error_t *err);

/* elasticd -t: the configuration, checked, and every value it would use.
 * Returns the status to exit with. */
int ed_options_test_config(const struct ed_opts *o);

#endif
