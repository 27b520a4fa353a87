/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/metrics.h: the OpenMetrics endpoint (GET /metrics), whose
 * sockets the channel's poll watches (struct ed_poll_extra). */
#ifndef ELASTICD_METRICS_H
#define ELASTICD_METRICS_H

#include <stdio.h>

#include "conf.h"

struct pollfd;

typedef struct ed_metrics ed_metrics_t;
/* Writes the OpenMetrics text (ending with "# EOF") to f. */
typedef void (*ed_metrics_render_fn)(void *arg, FILE *f);
/* Listen on addr ("host:port", "[v6]:port", ":port"); render makes the text
 * of each GET /metrics. */
ed_metrics_t *ed_metrics_create(const char *addr, ed_metrics_render_fn render, void *arg,
				elastic_error_t *err);
void ed_metrics_destroy(ed_metrics_t *m);
int ed_metrics_port(const ed_metrics_t *m);
/* struct ed_poll_extra's fill and ready. */
int ed_metrics_pollfds(ed_metrics_t *m, struct pollfd *pf, int max);
void ed_metrics_handle(ed_metrics_t *m, const struct pollfd *pf, int n);

#endif
