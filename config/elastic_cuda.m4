# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_cuda.m4: optional CUDA runtime. Found by pkg-config (cudart-X.Y),
# then --with-cuda=DIR, then /usr/local/cuda. Absent: the GPU parts are left out.
AC_DEFUN([ELASTIC_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit (default: pkg-config, then /usr/local/cuda); --without-cuda leaves GPU code out])],
    [], [with_cuda=check])
  have_cuda=no
  AS_IF([test "x$with_cuda" != xno], [
    AS_IF([test "x$with_cuda" = xcheck -o "x$with_cuda" = xyes], [
      for m in cudart-13.0 cudart-12.9 cudart-12.8 cudart-12.6 cudart-12.4 cudart; do
        PKG_CHECK_EXISTS([$m], [CUDA_CFLAGS=$($PKG_CONFIG --cflags $m); CUDA_LIBS=$($PKG_CONFIG --libs $m); break])
      done
      AS_IF([test -z "$CUDA_LIBS" -a -d /usr/local/cuda], [cuda_dir=/usr/local/cuda])],
      [cuda_dir="$with_cuda"])
    AS_IF([test -n "$cuda_dir"], [
      CUDA_CFLAGS="-I$cuda_dir/include"
      CUDA_LIBS="-L$cuda_dir/lib64 -Wl,-rpath,$cuda_dir/lib64 -lcudart"])
    save_CPPFLAGS="$CPPFLAGS"; save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS"; LIBS="$CUDA_LIBS $LIBS"
    AC_MSG_CHECKING([for the CUDA runtime (cudaMalloc)])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]],
        [[void *p; return (int)cudaMalloc(&p, 1);]])],
      [have_cuda=yes], [CUDA_CFLAGS=; CUDA_LIBS=])
    AC_MSG_RESULT([$have_cuda])
    CPPFLAGS="$save_CPPFLAGS"; LIBS="$save_LIBS"
    AS_IF([test "x$with_cuda" != xcheck -a $have_cuda = no],
      [AC_MSG_ERROR([--with-cuda given but the CUDA runtime was not found there])])])
  AS_IF([test $have_cuda = yes], [AC_DEFINE([HAVE_CUDA], [1], [CUDA runtime available])
    # libelastic loads the runtime with dlopen (gpu.c): its soname's major
    # (CUDART_VERSION / 1000) and the directory it was found in
    save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS"
    AC_COMPUTE_INT([cudart_major], [CUDART_VERSION / 1000], [[#include <cuda_runtime_api.h>]], [cudart_major=0])
    CPPFLAGS="$save_CPPFLAGS"
    cuda_libdir=$(echo "$CUDA_LIBS" | tr " " "\n" | sed -n "s/^-L//p" | head -n 1)
    AC_DEFINE_UNQUOTED([ELASTIC_CUDART_MAJOR], [$cudart_major], [soname major of libcudart])
    AC_DEFINE_UNQUOTED([ELASTIC_CUDA_LIBDIR], ["$cuda_libdir"], [where configure found libcudart])])
  AM_CONDITIONAL([HAVE_CUDA], [test $have_cuda = yes])
  AC_SUBST([CUDA_CFLAGS]) AC_SUBST([CUDA_LIBS])
])
