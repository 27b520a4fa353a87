# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_nccl.m4: optional NCCL (needs CUDA). Found by pkg-config (nccl),
# then --with-nccl=DIR, then the CUDA tree. Reports whether ncclCommShrink
# (NCCL >= 2.27) is there.
AC_DEFUN([ELASTIC_CHECK_NCCL], [
  AC_REQUIRE([ELASTIC_CHECK_CUDA])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl=DIR], [NCCL install (default: pkg-config, then the CUDA tree); --without-nccl leaves it out])],
    [], [with_nccl=check])
  have_nccl=no; have_nccl_shrink=no
  AS_IF([test "x$with_nccl" != xno -a $have_cuda = yes], [
    AS_IF([test "x$with_nccl" = xcheck -o "x$with_nccl" = xyes], [
      PKG_CHECK_EXISTS([nccl], [NCCL_CFLAGS=$($PKG_CONFIG --cflags nccl); NCCL_LIBS=$($PKG_CONFIG --libs nccl)],
        [AS_IF([test -n "$cuda_dir"], [nccl_dir="$cuda_dir"], [nccl_dir=/usr/local/cuda])])],
      [nccl_dir="$with_nccl"])
    AS_IF([test -n "$nccl_dir"], [
      NCCL_CFLAGS="-I$nccl_dir/include"
      NCCL_LIBS="-L$nccl_dir/lib64 -L$nccl_dir/lib -Wl,-rpath,$nccl_dir/lib64 -lnccl"])
    save_CPPFLAGS="$CPPFLAGS"; save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS $NCCL_CFLAGS"; LIBS="$NCCL_LIBS $CUDA_LIBS $LIBS"
    AC_MSG_CHECKING([for NCCL (ncclCommInitRank)])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]],
        [[ncclComm_t c; ncclUniqueId id; return (int)ncclCommInitRank(&c, 1, id, 0);]])],
      [have_nccl=yes], [NCCL_CFLAGS=; NCCL_LIBS=])
    AC_MSG_RESULT([$have_nccl])
    AS_IF([test $have_nccl = yes], [
      AC_MSG_CHECKING([for ncclCommShrink (NCCL >= 2.27)])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]],
          [[ncclComm_t c = 0, n; int ex = 0; return (int)ncclCommShrink(c, &ex, 1, &n, NULL, NCCL_SHRINK_DEFAULT);]])],
        [have_nccl_shrink=yes])
      AC_MSG_RESULT([$have_nccl_shrink])])
    CPPFLAGS="$save_CPPFLAGS"; LIBS="$save_LIBS"
    AS_IF([test "x$with_nccl" != xcheck -a $have_nccl = no],
      [AC_MSG_ERROR([--with-nccl given but NCCL was not found there])])])
  AS_IF([test $have_nccl = yes], [AC_DEFINE([HAVE_NCCL], [1], [NCCL available])
    # libelastic loads NCCL with dlopen (gpu.c) from its soname, then here
    nccl_libdir=$(echo "$NCCL_LIBS" | tr " " "\n" | sed -n "s/^-L//p" | head -n 1)
    AC_DEFINE_UNQUOTED([ELASTIC_NCCL_LIBDIR], ["$nccl_libdir"], [where configure found libnccl])])
  AS_IF([test $have_nccl_shrink = yes], [AC_DEFINE([HAVE_NCCL_COMM_SHRINK], [1], [ncclCommShrink available])])
  AM_CONDITIONAL([HAVE_NCCL], [test $have_nccl = yes])
  AC_SUBST([NCCL_CFLAGS]) AC_SUBST([NCCL_LIBS])
])
