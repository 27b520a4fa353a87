# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_python.m4: optional Python binding (slurm_elastic): a Python 3 >= 3.12
# interpreter and its headers (pkg-config python3, Debian: python3-dev).
# --without-python leaves it out; --with-python-dir=DIR says where the package
# goes (default: the interpreter's site directory under the prefix, e.g.
# /usr/lib/python3/dist-packages on Debian with --prefix=/usr).
AC_DEFUN([ELASTIC_CHECK_PYTHON], [
  AC_ARG_WITH([python],
    [AS_HELP_STRING([--without-python], [leave the Python binding (slurm_elastic) out])],
    [], [with_python=check])
  AC_ARG_WITH([python-dir],
    [AS_HELP_STRING([--with-python-dir=DIR], [install the slurm_elastic package into DIR])],
    [], [with_python_dir=])
  have_python=no
  AS_IF([test "x$with_python" != xno], [
    AC_PATH_PROGS([PYTHON], [python3], [])
    AS_IF([test -n "$PYTHON"], [
      AC_MSG_CHECKING([for Python >= 3.12])
      AS_IF(["$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 12))'],
        [AC_MSG_RESULT([yes])
         PKG_CHECK_MODULES([PYTHON], [python3 >= 3.12], [have_python=yes], [have_python=no])],
        [AC_MSG_RESULT([no])])])
    AS_IF([test "x$with_python" = xyes -a $have_python = no],
      [AC_MSG_ERROR([--with-python given but Python >= 3.12 with its headers was not found: install python3-dev])])])
  AS_IF([test $have_python = yes], [
    AS_IF([test -n "$with_python_dir"], [ELASTIC_PYTHON_DIR="$with_python_dir"], [
      # Debian's interpreter reads <prefix>/lib/python3/dist-packages; others
      # their sysconfig purelib under the prefix
      py_rel=$("$PYTHON" -c 'import sys, sysconfig; p = sysconfig.get_path("purelib", vars={"base": "", "platbase": ""}); d = "/lib/python3/dist-packages"; print(d if any(x.endswith(d) for x in sys.path) else p)')
      ELASTIC_PYTHON_DIR='${prefix}'"$py_rel"])])
  AM_CONDITIONAL([HAVE_PYTHON], [test $have_python = yes])
  AC_SUBST([PYTHON_CFLAGS]) AC_SUBST([ELASTIC_PYTHON_DIR])
])
