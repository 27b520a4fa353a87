# SPDX-License-Identifier: GPL-2.0-or-later
# elastic_slurm_api.m4: which form of libslurm's API the found slurm.h has.
# Slurm 26.05 names a job by a slurm_step_id_t where 24.11 takes a uint32_t
# job id; the code asks the header, not the version number, and
# plugin/elasticd/slurm.c and plugin/job_submit/job_submit_elastic.c map
# the two forms onto one. Call after ELASTIC_CHECK_SLURM.
AC_DEFUN([ELASTIC_CHECK_SLURM_API], [
  save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
  # 26.05: the job id of job_desc_msg_t and submit_response_msg_t moved into
  # a slurm_step_id_t step_id (24.11's submit_response_msg_t has a uint32_t
  # step_id beside job_id, hence step_id.job_id).
  AC_CHECK_MEMBERS([job_desc_msg_t.step_id.job_id, submit_response_msg_t.step_id.job_id],
    [], [], [[#include <slurm/slurm.h>]])
  # 26.05: slurm_free_conf replaces slurm_free_ctl_conf.
  AC_CHECK_DECLS([slurm_free_conf], [], [], [[#include <slurm/slurm.h>]])
  # 26.05: slurm_kill_job(slurm_step_id_t, ...) replaces slurm_kill_job(uint32_t, ...).
  AC_CACHE_CHECK([whether slurm_kill_job takes a slurm_step_id_t],
    [elastic_cv_kill_job_step_id],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <slurm/slurm.h>]],
        [[slurm_step_id_t s = {0}; s.job_id = 1; return slurm_kill_job(s, 9, 0);]])],
      [elastic_cv_kill_job_step_id=yes], [elastic_cv_kill_job_step_id=no])])
  AS_IF([test $elastic_cv_kill_job_step_id = yes],
    [AC_DEFINE([HAVE_SLURM_KILL_JOB_STEP_ID], [1],
      [Define to 1 if slurm_kill_job takes a slurm_step_id_t (Slurm 26.05).])])
  # 26.05: slurm_load_job(resp, slurm_step_id_t, flags) replaces (resp, uint32_t, flags).
  AC_CACHE_CHECK([whether slurm_load_job takes a slurm_step_id_t],
    [elastic_cv_load_job_step_id],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <slurm/slurm.h>]],
        [[job_info_msg_t *m; slurm_step_id_t s = {0}; s.job_id = 1; return slurm_load_job(&m, s, 0);]])],
      [elastic_cv_load_job_step_id=yes], [elastic_cv_load_job_step_id=no])])
  AS_IF([test $elastic_cv_load_job_step_id = yes],
    [AC_DEFINE([HAVE_SLURM_LOAD_JOB_STEP_ID], [1],
      [Define to 1 if slurm_load_job takes a slurm_step_id_t (Slurm 26.05).])])
  # Slurm >= 23.11: the job-state RPC (ids and states only); without it
  # elasticd reads the whole job list each tick.
  AC_CHECK_DECLS([slurm_load_job_state], [], [], [[#include <slurm/slurm.h>]])
  CPPFLAGS="$save_CPPFLAGS"
  AS_IF([test "x$ac_cv_member_job_desc_msg_t_step_id_job_id" = xyes],
    [SLURM_API_NOTE="jobs named by slurm_step_id_t"],
    [SLURM_API_NOTE="jobs named by uint32_t job id"])
])
