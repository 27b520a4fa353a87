/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/lease.c: the controller role as a lease (lease.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lease.h"

void ed_lease_init(struct ed_lease *l, const char *self, uint64_t timeout_ms,
		   uint64_t settle_ms, uint64_t now_ms)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->self, sizeof(l->self), "%s", self);
	l->timeout_ms = timeout_ms;
	l->settle_ms = settle_ms;
	l->role = ED_LEASE_STANDBY;
	l->seen_ms = now_ms;
}

static int _same(const struct ed_lease_view *a, const struct ed_lease_view *b)
{
	return a->present == b->present && a->seq == b->seq &&
	       strcmp(a->holder, b->holder) == 0;
}

struct ed_lease_step ed_lease_decide(struct ed_lease *l, const struct ed_lease_view *v,
				     uint64_t now_ms)
{
	struct ed_lease_step st = {0};
	int mine = v->present && strcmp(v->holder, l->self) == 0;

	if (!_same(v, &l->seen)) {
		l->seen = *v;
		l->seen_ms = now_ms;
	}
	switch (l->role) {
	case ED_LEASE_ACTIVE:
		if (v->present && !mine) {
			l->role = ED_LEASE_STANDBY;
			st.lost = 1;
			break;
		}
		l->seq = (v->present && v->seq >= l->seq ? v->seq : l->seq) + 1;
		st.write = 1;
		break;
	case ED_LEASE_CLAIMING:
		if (!mine) {
			l->role = ED_LEASE_STANDBY; /* another's claim came later */
			break;
		}
		if (now_ms - l->claimed_ms >= l->settle_ms) {
			l->role = ED_LEASE_ACTIVE;
			st.became_active = 1;
			l->seq = v->seq + 1;
			st.write = 1;
		}
		break;
	case ED_LEASE_STANDBY:
		if (v->present && !mine && now_ms - l->seen_ms < l->timeout_ms)
			break;
		l->role = ED_LEASE_CLAIMING;
		l->claimed_ms = now_ms;
		l->seq = (v->present ? v->seq : 0) + 1;
		st.write = 1;
		st.claimed = 1;
		break;
	}
	return st;
}

const char *ed_lease_role_name(enum ed_lease_role r)
{
	switch (r) {
	case ED_LEASE_STANDBY:
		return "standby";
	case ED_LEASE_CLAIMING:
		return "claiming";
	case ED_LEASE_ACTIVE:
		return "active";
	}
	return "unknown";
}

int ed_lease_read(const char *path, struct ed_lease_view *v, elastic_error_t *err)
{
	char line[512], holder[ED_LEASE_ADDR_MAX];
	unsigned long long seq;
	FILE *f;
	int n;

	memset(v, 0, sizeof(*v));
	if (!(f = fopen(path, "r"))) {
		if (errno == ENOENT)
			return 0;
		return elastic__fail(err, errno, "lease %s: %s", path, strerror(errno));
	}
	n = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	if (n && sscanf(line, "holder=%159s seq=%llu", holder, &seq) == 2) {
		v->present = 1;
		snprintf(v->holder, sizeof(v->holder), "%s", holder);
		v->seq = seq;
	}
	return 0;
}

int ed_lease_write(const char *path, const char *holder, uint64_t seq,
		   elastic_error_t *err)
{
	char tmp[4200];
	FILE *f;
	int bad;

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	if (!(f = fopen(tmp, "w")))
		return elastic__fail(err, errno, "lease %s: %s", tmp, strerror(errno));
	fprintf(f, "holder=%s seq=%" PRIu64 " pid=%d\n", holder, seq, (int)getpid());
	/* no fsync: a lease is worth a second, and a slow shared file system
	 * must not stall the loop that renews it */
	bad = fflush(f) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return elastic__fail(err, e, "lease %s: %s", path, strerror(e));
	}
	return 0;
}

int ed_lease_release(const char *path, const char *holder)
{
	struct ed_lease_view v;
	elastic_error_t err;

	if (ed_lease_read(path, &v, &err) < 0 || !v.present ||
	    strcmp(v.holder, holder) != 0)
		return 0;
	return unlink(path) == 0;
}
