/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/bind.c: bind the rank to the cores nearest its GPU (hwloc), only when asked
 * (ELASTIC_BIND=gpu) and the topology shows the GPU; otherwise leave the binding alone
 * and say why at debug level. Off by default: a process with threads of its own
 * (PyTorch's intra-op pool, OpenMP) must not be confined behind its back. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "internal.h"

void elastic__bind_near_gpu(elastic_ctx_t *ctx)
{
	int dev;
	char busid[32], why[256];
	hwloc_topology_t topo;
	hwloc_obj_t pci, near;

	if (!ctx->env.bind) {
		elastic__log(ctx, ELASTIC_LOG_DEBUG,
			     "binding left alone (ELASTIC_BIND=gpu binds near the GPU)");
		return;
	}
	if (elastic__gpu_busid(ctx, &dev, busid, sizeof(busid), why, sizeof(why)) < 0) {
		elastic__log(ctx, ELASTIC_LOG_DEBUG, "binding left alone: %s", why);
		return;
	}
	if (hwloc_topology_init(&topo) < 0)
		return;
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(topo) < 0) {
		hwloc_topology_destroy(topo);
		elastic__log(ctx, ELASTIC_LOG_DEBUG,
			     "binding left alone: no hwloc topology");
		return;
	}
	pci = hwloc_get_pcidev_by_busidstring(topo, busid);
	near = pci ? hwloc_get_non_io_ancestor_obj(topo, pci) : NULL;
	if (!near || !near->cpuset || hwloc_bitmap_iszero(near->cpuset) ||
	    hwloc_bitmap_isequal(near->cpuset,
				 hwloc_topology_get_topology_cpuset(topo))) {
		elastic__log(
			ctx, ELASTIC_LOG_DEBUG,
			"binding left alone: the topology shows no cores nearer GPU %d (%s) than others",
			dev, busid);
	} else {
		char *cpus = NULL;
		hwloc_bitmap_list_asprintf(&cpus, near->cpuset);
		if (hwloc_set_cpubind(topo, near->cpuset, HWLOC_CPUBIND_PROCESS) == 0)
			elastic__log(ctx, ELASTIC_LOG_INFO,
				     "bound to cores %s near GPU %d (%s)",
				     cpus ? cpus : "?", dev, busid);
		else
			elastic__log(ctx, ELASTIC_LOG_DEBUG,
				     "binding left alone: hwloc_set_cpubind to %s failed",
				     cpus ? cpus : "?");
		free(cpus);
	}
	hwloc_topology_destroy(topo);
}
