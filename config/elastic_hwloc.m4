# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_hwloc.m4: hwloc >= 2 for GPU-near CPU binding and placement.
AC_DEFUN([ELASTIC_CHECK_HWLOC], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
    [AC_MSG_ERROR([hwloc >= 2.0 not found: install libhwloc-dev])])
])
