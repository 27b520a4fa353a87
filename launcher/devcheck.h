/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/devcheck.h: a rank's check that its job step confines it to its
 * own GPU's device file (cgroup device confinement, ConstrainDevices=yes). */
#ifndef ELASTIC_LAUNCHER_DEVCHECK_H
#define ELASTIC_LAUNCHER_DEVCHECK_H

#include <stddef.h>

#include "conf.h" /* elastic_error_t */

#define ELASTIC_DEVCHECK_MAX 64 /* device files probed per host */

/*
 * The path of GPU gpu's device file on host from pattern ("%h" the host,
 * "%g" the GPU index, "%%" a percent sign; e.g. "/dev/nvidia%g") into buf.
 * Returns 0, or -1 (ENAMETOOLONG, or EINVAL for another "%" escape).
 */
int elastic__devcheck_path(const char *pattern, const char *host, int gpu, char *buf,
			   size_t len);

/*
 * The verdict on what a rank could open (pure): for the device files
 * 0..n-1 of its host, reach[i] (1: the open was not refused by the
 * kernel's device policy) and held[i] (1: the job step the rank runs in
 * holds GPU i); own is its GPU. 0 when it reaches its own GPU, which its
 * step holds, and no GPU its step does not hold; else -1 with err naming
 * the first file in the wrong state (paths from pattern and host).
 */
int elastic__devcheck_verdict(const int *reach, const int *held, int n, int own,
			      const char *pattern, const char *host,
			      elastic_error_t *err);

/*
 * Probe the device files of host (pattern with %g = 0, 1, ... while the file
 * exists, at most ELASTIC_DEVCHECK_MAX) and give the verdict for GPU own,
 * with step_gpus the GPUs of the step ("2,3": Slurm's SLURM_STEP_GPUS; NULL
 * outside any step: none). A file is reachable unless open() fails with
 * EPERM, which is how the cgroup device controller (v1 devices.deny, v2
 * eBPF program) refuses: a fake or driverless GPU answers ENXIO or ENODEV
 * even when allowed.
 */
int elastic__devcheck(const char *pattern, const char *host, int own,
		      const char *step_gpus, elastic_error_t *err);

#endif
