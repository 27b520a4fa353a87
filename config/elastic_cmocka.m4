# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_cmocka.m4: cmocka, the unit-test harness of `make check`. Optional:
# without it (or with --without-cmocka) the C unit tests are not built and
# `make check` runs the other tests; configure's summary says so.
AC_DEFUN([ELASTIC_CHECK_CMOCKA], [
  AC_ARG_WITH([cmocka],
    [AS_HELP_STRING([--without-cmocka], [build no C unit tests (cmocka) for make check])],
    [], [with_cmocka=check])
  have_cmocka=no
  AS_IF([test "x$with_cmocka" != xno], [
    PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1], [have_cmocka=yes], [
      AS_IF([test "x$with_cmocka" = xyes],
        [AC_MSG_ERROR([--with-cmocka: cmocka >= 1.1 not found (install libcmocka-dev)])])
      AC_MSG_WARN([cmocka not found: make check leaves the C unit tests out (install libcmocka-dev to run them)])
    ])
  ])
  AM_CONDITIONAL([HAVE_CMOCKA], [test $have_cmocka = yes])
])
