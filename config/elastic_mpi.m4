# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_mpi.m4: find an MPI with ULFM fault tolerance (MPIX_Comm_shrink
# through mpi-ext.h). Required: libelastic is built on ULFM.
AC_DEFUN([ELASTIC_CHECK_ULFM_MPI], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper used to find MPI flags])
  AS_IF([test -z "$MPI_CFLAGS$MPI_LIBS"], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [], [
      AC_CHECK_PROGS([MPICC], [mpicc], [])
      AS_IF([test -n "$MPICC"], [
        MPI_CFLAGS=$($MPICC --showme:compile 2>/dev/null)
        MPI_LIBS=$($MPICC --showme:link 2>/dev/null)])])])
  save_CFLAGS="$CFLAGS"; save_LIBS="$LIBS"
  CFLAGS="$CFLAGS $MPI_CFLAGS"; LIBS="$MPI_LIBS $LIBS"
  AC_MSG_CHECKING([for an MPI with ULFM (MPIX_Comm_shrink, MPIX_Comm_agree)])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#include <mpi-ext.h>
#ifndef MPIX_FT
#error "no MPIX_FT: this MPI has no ULFM fault tolerance"
#endif]],
      [[MPI_Comm c; int f = 1; MPIX_Comm_shrink(MPI_COMM_WORLD, &c);
        MPIX_Comm_agree(MPI_COMM_WORLD, &f); MPIX_Comm_revoke(MPI_COMM_WORLD);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([no MPI with ULFM found: install Open MPI >= 5.0 with ULFM (Debian 13: openmpi-bin libopenmpi-dev), or set MPI_CFLAGS/MPI_LIBS. MPICH's MPIX_* stubs and Open MPI 4 do not recover from failures (see the README).])])
  AC_CHECK_PROGS([MPIRUN], [mpirun mpiexec], [mpirun])
  CFLAGS="$save_CFLAGS"; LIBS="$save_LIBS"
  AC_SUBST([MPI_CFLAGS]) AC_SUBST([MPI_LIBS])
])
