/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/lease.h: which elasticd acts. The controller role is a
 * lease in a file that every controller host sees (slurmctld's
 * StateSaveLocation, which slurmctld's primary and backup share):
 * ed_lease_decide is the pure decision, ed_lease_read and ed_lease_write
 * its file. */
#ifndef ELASTICD_LEASE_H
#define ELASTICD_LEASE_H

#include <stdint.h>

#include "contract.h"

/*
 * Design note: one active elasticd, the others standing by
 * =========================================================
 * The active elasticd rewrites the lease every period (a second): its
 * address (HOST:PORT, where jobs reach it) and a sequence number that grows
 * by one each time. Every other elasticd reads the lease each period. It
 * compares no clocks (hosts' clocks differ): a lease is stale when neither
 * its holder nor its sequence changed for `timeout` of the reader's own
 * monotonic clock.
 *
 * A standby that finds the lease stale claims it: it writes its own lease
 * (a new file renamed over the old, so a reader sees one whole lease or
 * the other), waits `settle` and reads it back. Still its own: it is
 * active. Another's: a standby that claimed at the same time renamed its
 * lease later and won; this one stands by again.
 *
 * The active reads the lease before each rewrite. Another's lease there
 * means a standby took over while this one could not renew (frozen, cut
 * off from the file for longer than the timeout): it stands by at once, so
 * two elasticds act together for at most one period.
 *
 * A lease held by this elasticd's own address is stale at once: no other
 * process can hold that address while this one listens there (an elasticd
 * restarted on its host takes its role back without waiting). No lease at
 * all is claimed at once too.
 */

#define ED_LEASE_ADDR_MAX 160

enum ed_lease_role {
	ED_LEASE_STANDBY,
	ED_LEASE_CLAIMING, /* wrote its claim, waiting `settle` to read it back */
	ED_LEASE_ACTIVE,
};

/* What the lease file holds (ed_lease_read). */
struct ed_lease_view {
	int present; /* 0: no file, or none readable */
	char holder[ED_LEASE_ADDR_MAX];
	uint64_t seq;
};

struct ed_lease {
	char self[ED_LEASE_ADDR_MAX]; /* this elasticd's HOST:PORT */
	uint64_t timeout_ms, settle_ms;
	enum ed_lease_role role;
	struct ed_lease_view seen; /* the lease last read */
	uint64_t seen_ms;	   /* when it last changed (monotonic) */
	uint64_t claimed_ms;	   /* CLAIMING: when the claim was written */
	uint64_t seq;		   /* the sequence of the lease to write */
};

/* What one period's decision asks. */
struct ed_lease_step {
	int write;	   /* write the lease: self, l->seq */
	int became_active; /* STANDBY/CLAIMING -> ACTIVE */
	int lost;	   /* ACTIVE -> STANDBY: another holds the lease */
	int claimed;	   /* STANDBY -> CLAIMING: the lease was stale */
};

void ed_lease_init(struct ed_lease *l, const char *self, uint64_t timeout_ms,
		   uint64_t settle_ms, uint64_t now_ms);

/* The period's decision from the lease as it is now (v), at monotonic
 * now_ms. */
struct ed_lease_step ed_lease_decide(struct ed_lease *l, const struct ed_lease_view *v,
				     uint64_t now_ms);

/* "active", "claiming", "standby". */
const char *ed_lease_role_name(enum ed_lease_role r);

/* The file: "holder=HOST:PORT seq=N pid=PID\n". Read: 0 with v (present 0
 * when there is no file), -1 (err) when it cannot be read; a line that is
 * not a lease reads as none. Write: a temporary file beside it renamed over
 * it. */
int ed_lease_read(const char *path, struct ed_lease_view *v, elastic_error_t *err);
int ed_lease_write(const char *path, const char *holder, uint64_t seq,
		   elastic_error_t *err);
/* At a clean stop of the active elasticd: remove the lease if it is still
 * holder's, so that a standby claims it at once instead of waiting out the
 * timeout. 1 when it was removed. */
int ed_lease_release(const char *path, const char *holder);

#endif
