/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/watch.h: WATCH, the launch while mpirun runs. */
#ifndef ELASTIC_LAUNCHER_WATCH_H
#define ELASTIC_LAUNCHER_WATCH_H

#include "run.h"

/* Wait for mpirun while taking the ranks' reports and the controller's
 * orders; then sum up how the launch ended (r->launch). RUN_REFORM. */
enum run_state elastic__watch(struct run *r);

#endif
