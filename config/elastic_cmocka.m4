# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_cmocka.m4: cmocka, the unit-test harness of `make check`.
AC_DEFUN([ELASTIC_CHECK_CMOCKA], [
  PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1], [],
    [AC_MSG_ERROR([cmocka not found: install libcmocka-dev (the unit tests of make check need it)])])
])
