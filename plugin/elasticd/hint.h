/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/hint.h: hints from job_submit/elastic inside slurmctld, one
 * UDP datagram each on the channel's address and port: "job N was updated"
 * (an update of an elastic job passed job_modify) and "alive" (the plugin's
 * job cache thread, every TickSeconds). A hint carries no authority and no
 * data: it only makes elasticd ask slurmctld about a job sooner, so while
 * hints arrive elasticd need not poll its elastic jobs between ticks, nor
 * read a new plain job again in case a tag is added to it later. */
#ifndef ELASTICD_HINT_H
#define ELASTICD_HINT_H

#include <stdint.h>

#include "conf.h"

struct pollfd;

typedef struct ed_hint ed_hint_t;

/* A UDP socket on host:port (the channel's). NULL with err on failure. */
ed_hint_t *ed_hint_create(const char *host, int port, elastic_error_t *err);
void ed_hint_destroy(ed_hint_t *h);
/* struct ed_poll_extra's fill and ready (the channel's poll). */
int ed_hint_pollfds(ed_hint_t *h, struct pollfd *pf, int max);
void ed_hint_handle(ed_hint_t *h, const struct pollfd *pf, int n);
/* Jobs named by hints kept between two ed_hint_take calls; more are
 * counted as an overflow. */
#define ED_HINT_IDS 64
/* 1 if a job was named since the last call (then cleared), else 0. ids
 * (room for ED_HINT_IDS) receives the jobs named, each once, *nids their
 * count, or -1 when more were named than fit. */
int ed_hint_take(ed_hint_t *h, uint32_t *ids, int *nids);
/* 1 if a job was named since the last ed_hint_take (nothing cleared). */
int ed_hint_named(const ed_hint_t *h);
/* 1 if a hint (of any kind) came within window_ms of now_ms. */
int ed_hint_alive(const ed_hint_t *h, uint64_t now_ms, uint64_t window_ms);
/* Hints read, and datagrams that were not hints. */
uint64_t ed_hint_count(const ed_hint_t *h);
uint64_t ed_hint_bad(const ed_hint_t *h);

#endif
