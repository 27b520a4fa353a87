# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_munge.m4: libmunge, used to authenticate the controller channel.
AC_DEFUN([ELASTIC_CHECK_MUNGE], [
  PKG_CHECK_MODULES([MUNGE], [munge], [], [
    AC_CHECK_HEADER([munge.h], [], [AC_MSG_ERROR([munge.h not found: install libmunge-dev])])
    AC_CHECK_LIB([munge], [munge_encode], [MUNGE_LIBS=-lmunge],
      [AC_MSG_ERROR([libmunge not found: install libmunge-dev])])])
])
