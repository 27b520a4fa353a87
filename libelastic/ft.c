/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/ft.c: the library's only use of ULFM (MPIX_*): fault classes, agree, revoke
 * and shrink. */
#include "config.h"

#include <mpi.h>
#include <mpi-ext.h>

#include "internal.h"

#ifndef MPIX_FT
#error "libelastic needs an MPI with ULFM (MPIX_FT in mpi-ext.h)"
#endif

int elastic__ft_is_fault(int rc)
{
	int cls = rc;
	if (rc == MPI_SUCCESS)
		return 0;
	if (MPI_Error_class(rc, &cls) != MPI_SUCCESS)
		cls = rc;
	return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED
#ifdef MPIX_ERR_PROC_FAILED_PENDING
	       || cls == MPIX_ERR_PROC_FAILED_PENDING
#endif
		;
}

int elastic__ft_agree(MPI_Comm comm, int *flag)
{
	/* The agreed flag and a MPIX_ERR_PROC_FAILED result are uniform over
	 * the surviving processes (ULFM), so every survivor decides alike. */
	return MPIX_Comm_agree(comm, flag);
}

void elastic__ft_revoke(MPI_Comm comm)
{
	(void)MPIX_Comm_revoke(comm);
}

int elastic__ft_shrink(MPI_Comm comm, MPI_Comm *out)
{
	return MPIX_Comm_shrink(comm, out);
}
