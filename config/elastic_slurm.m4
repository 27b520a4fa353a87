# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_slurm.m4: find Slurm's public headers, libslurm and the plugin dir.
AC_DEFUN([ELASTIC_CHECK_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm=PREFIX], [Slurm install prefix])],
    [SLURM_CPPFLAGS="-I$withval/include"; SLURM_LDFLAGS="-L$withval/lib"])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR],
      [where slurmctld/slurmd load plugins from (default: found)])],
    [SLURM_PLUGINDIR="$withval"])
  save_CPPFLAGS="$CPPFLAGS"; save_LDFLAGS="$LDFLAGS"
  CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"; LDFLAGS="$LDFLAGS $SLURM_LDFLAGS"
  AC_CHECK_HEADERS([slurm/slurm.h slurm/spank.h], [],
    [AC_MSG_ERROR([Slurm headers not found: install libslurm-dev (Debian) or slurm-devel, or use --with-slurm=PREFIX])])
  AC_CHECK_LIB([slurm], [slurm_load_jobs], [SLURM_LIBS="-lslurm"],
    [AC_MSG_ERROR([libslurm not found: install libslurm-dev (Debian) or slurm-devel, or use --with-slurm=PREFIX])])
  AC_MSG_CHECKING([Slurm version])
  AC_COMPUTE_INT([elastic_slurm_ver], [SLURM_VERSION_NUMBER], [#include <slurm/slurm_version.h>],
    [elastic_slurm_ver=0])
  SLURM_VERSION_STRING=$(printf '%d.%02d.%d' $((elastic_slurm_ver >> 16)) $(((elastic_slurm_ver >> 8) & 255)) $((elastic_slurm_ver & 255)))
  AC_MSG_RESULT([$SLURM_VERSION_STRING])
  # Built and tested: 24.11 (Debian 13) and 26.05 (Debian sid).
  AS_IF([test "$elastic_slurm_ver" -lt $(( (24 << 16) + (11 << 8) ))],
    [AC_MSG_ERROR([Slurm $SLURM_VERSION_STRING is too old: slurm-elastic needs 24.11 or newer (built and tested: 24.11 and 26.05)])])
  AS_IF([test "$elastic_slurm_ver" -ge $(( (26 << 16) + (6 << 8) ))],
    [AC_MSG_WARN([Slurm $SLURM_VERSION_STRING is newer than the newest tested (26.05)])])
  CPPFLAGS="$save_CPPFLAGS"; LDFLAGS="$save_LDFLAGS"
  AC_MSG_CHECKING([Slurm plugin directory])
  AS_IF([test -z "$SLURM_PLUGINDIR"], [
    for d in ${libdir}/slurm-wlm ${libdir}/slurm /usr/lib/$($CC -print-multiarch 2>/dev/null)/slurm-wlm \
             /usr/lib64/slurm /usr/lib/slurm /usr/local/lib/slurm; do
      AS_IF([test -f "$d/select_cons_tres.so" -o -f "$d/auth_munge.so"], [SLURM_PLUGINDIR="$d"; break])
    done])
  AS_IF([test -z "$SLURM_PLUGINDIR"], [SLURM_PLUGINDIR='${libdir}/slurm'])
  AC_MSG_RESULT([$SLURM_PLUGINDIR])
  AC_SUBST([SLURM_CPPFLAGS]) AC_SUBST([SLURM_LDFLAGS]) AC_SUBST([SLURM_LIBS])
  AC_SUBST([SLURM_PLUGINDIR]) AC_SUBST([SLURM_VERSION_STRING])
])
