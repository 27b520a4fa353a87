/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/bind.c: bind the rank to the cores nearest its GPU (hwloc), when the
 * topology shows the GPU; otherwise leave the binding alone and say why at debug level.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>
#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "internal.h"

void elastic__bind_near_gpu(elastic_ctx_t *ctx)
{
	const char *v = getenv("ELASTIC_BIND");

	if (v && (!strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "none"))) {
		elastic__log(ctx, ELASTIC_LOG_DEBUG, "binding: off (ELASTIC_BIND=%s)", v);
		return;
	}
#ifndef HAVE_CUDA
	elastic__log(ctx, ELASTIC_LOG_DEBUG,
		     "binding left alone: this libelastic was built without CUDA");
#else
	int ndev = 0, dev;
	char busid[32];
	cudaError_t ce = cudaGetDeviceCount(&ndev);
	hwloc_topology_t topo;
	hwloc_obj_t pci, near;

	if (ce != cudaSuccess || ndev < 1) {
		elastic__log(ctx, ELASTIC_LOG_DEBUG,
			     "binding left alone: no GPU visible (%s)",
			     ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
		return;
	}
	dev = ctx->node_rank % ndev;
	if (cudaDeviceGetPCIBusId(busid, sizeof(busid), dev) != cudaSuccess) {
		elastic__log(ctx, ELASTIC_LOG_DEBUG,
			     "binding left alone: no PCI address for GPU %d", dev);
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
			"binding left alone: the topology shows no cores nearer GPU %d "
			"(%s) than others",
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
#endif
}
