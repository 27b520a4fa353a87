# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_pmix.m4: PMIx (optional), for libelastic's handler of a peer's
# re-form exit. Open MPI links it anyway; without it that handler is left out.
AC_DEFUN([ELASTIC_CHECK_PMIX], [
  PKG_CHECK_MODULES([PMIX], [pmix], [have_pmix=yes], [have_pmix=no])
  AS_IF([test $have_pmix = yes], [
    save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $PMIX_CFLAGS"
    AC_CHECK_HEADER([pmix.h], [], [have_pmix=no])
    CPPFLAGS="$save_CPPFLAGS"])
  AS_IF([test $have_pmix = yes],
    [AC_DEFINE([HAVE_PMIX], [1], [Define to 1 when PMIx (pmix.h, libpmix) is there])],
    [PMIX_CFLAGS=""; PMIX_LIBS=""])
  AM_CONDITIONAL([HAVE_PMIX], [test $have_pmix = yes])
])
