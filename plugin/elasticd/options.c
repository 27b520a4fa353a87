/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/options.c: elasticd's command line, the elastic.conf it
 * reads, and -t. */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static void _usage(FILE *f)
{
	fprintf(f,
		"usage: elasticd [-D] [-f elastic.conf] [-L logfile] [-p port] [-v] [-n]\n"
		"       elasticd -t [-f elastic.conf]\n"
		"  -D                 stay in the foreground, log to stderr (unless -L)\n"
		"  -f FILE            elastic.conf to read (default: $ELASTIC_CONF, else next to slurm.conf)\n"
		"  -L FILE            append the log to FILE (overrides LogFile)\n"
		"  -p PORT            listen on PORT (overrides ControllerPort; 0: any free port)\n"
		"  -v                 debug logging\n"
		"  -n                 dry run: compute and log decisions, change nothing\n"
		"  -t, --test-config  check elastic.conf, print the values elasticd would use, exit 0 (usable) or 1\n"
		"  -V, --version      print the version\n"
		"  -h, --help         print this help\n"
		"SIGHUP re-reads elastic.conf and reopens the log file. See elasticd(8).\n");
}

int ed_options_parse(int argc, char **argv, struct ed_opts *o)
{
	static const struct option longopts[] = {
		{"test-config", no_argument, NULL, 't'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;

	memset(o, 0, sizeof(*o));
	o->port = -1;
	while ((opt = getopt_long(argc, argv, "Df:L:p:vntVh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'D':
			o->foreground = 1;
			break;
		case 'f':
			o->conf_path = optarg;
			break;
		case 'L':
			o->log_path = optarg;
			break;
		case 'p': {
			char *e;
			long v = strtol(optarg, &e, 10);
			if (*e || v < 0 || v > 65535) {
				fprintf(stderr,
					"elasticd: -p %s: not a port number (0-65535)\n",
					optarg);
				return 2;
			}
			o->port = (int)v;
			break;
		}
		case 'v':
			o->verbose = 1;
			break;
		case 'n':
			o->dry = 1;
			break;
		case 't':
			o->test = 1;
			break;
		case 'V':
			printf("elasticd %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			_usage(stdout);
			return 0;
		default:
			_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "elasticd: unexpected argument '%s'\n", argv[optind]);
		_usage(stderr);
		return 2;
	}
	return -1;
}

int ed_options_load_conf(const char *named, struct elastic_site_conf *conf, char *path,
			 size_t size, elastic_error_t *err)
{
	if (named)
		snprintf(path, size, "%s", named);
	else if (elastic_site_conf_path(path, size, err) < 0)
		return -1;
	return elastic_site_conf_load(conf, path, named == NULL, err);
}

int ed_options_test_config(const struct ed_opts *o)
{
	struct elastic_site_conf conf;
	char path[PATH_MAX] = "";
	elastic_error_t err = {""};
	int rc = ed_options_load_conf(o->conf_path, &conf, path, sizeof(path), &err);

	if (rc < 0) {
		fprintf(stderr, "elasticd: %s\n", err.text);
		fprintf(stderr, "elasticd: configuration %s is NOT usable\n", path);
		return 1;
	}
	printf("# %s: %s\n", path,
	       rc == 1 ? "not found: elasticd uses the built-in defaults" : "usable");
	if (o->port >= 0)
		printf("# -p %d overrides ControllerPort\n", o->port);
	elastic_conf_print(elastic_site_conf_keys, &conf, stdout);
	elastic_site_conf_free(&conf);
	return fflush(stdout) == 0 ? 0 : 1;
}
