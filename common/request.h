/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/request.h: the elastic request from what the user typed (sbatch --elastic-*),
 * checked against the site's limits. The request itself is in contract.h. */
#ifndef ELASTIC_COMMON_REQUEST_H
#define ELASTIC_COMMON_REQUEST_H

#include "contract.h"
#include "site_conf.h"

/* Build a request from the option strings as typed (NULL: not given; gpus
 * is required when any other is given). site supplies the limits and
 * defaults (NULL: built-in defaults). Any error: -1, errno EINVAL, and err
 * holds one line naming the option, the value and what is allowed, e.g.
 * "--elastic-gpus=0: MIN must be at least 1 (allowed: MIN[-MAX] with
 * 1 <= MIN <= MAX <= 8)". req is unchanged on error. */
int elastic_request_from_options(struct elastic_request *req, const char *gpus,
				 const char *grace, const char *sizes, const char *weight,
				 const struct elastic_site_conf *site,
				 elastic_error_t *err);

/* Check a request against the site limits (site NULL: the contract's) and
 * its own consistency; err as above (naming the option). */
int elastic_request_check(const struct elastic_request *req,
			  const struct elastic_site_conf *site, elastic_error_t *err);

#endif
