/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/log.h: elasticd's log (a file, stderr or syslog) and its
 * clock; every module logs through here, only elasticd.c chooses where. */
#ifndef ELASTICD_LOG_H
#define ELASTICD_LOG_H

#include <stdint.h>
#include <sys/types.h>

/* ED_LOG_NOTICE: what an admin should know but need not fix (a setting
 * that waits for a restart). */
enum { ED_LOG_ERROR, ED_LOG_NOTICE, ED_LOG_INFO, ED_LOG_DEBUG };

/* One line, "[stamp] elasticd: " and fmt in a file or on stderr, fmt alone
 * in syslog; nothing above the level set (ED_LOG_INFO until then). */
void ed_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define ed_error(...)  ed_log(ED_LOG_ERROR, __VA_ARGS__)
#define ed_notice(...) ed_log(ED_LOG_NOTICE, __VA_ARGS__)
#define ed_info(...)   ed_log(ED_LOG_INFO, __VA_ARGS__)
#define ed_debug(...)  ed_log(ED_LOG_DEBUG, __VA_ARGS__)

/* Milliseconds since the epoch (realtime). */
uint64_t ed_now_ms(void);
/* Milliseconds of the monotonic clock (durations that a clock step must
 * not change). */
uint64_t ed_mono_ms(void);
/* The monotonic clock in seconds (timing a call or a tick). */
double ed_mono_s(void);
/* CPU time of the calling thread, s. */
double ed_cpu_s(void);
/* How long the calling thread has waited for a CPU while it could run, s
 * (the kernel's schedstat: the host's CPUs busy with other work); 0 where
 * the kernel does not say. */
double ed_runq_s(void);

void ed_log_set_level(int level);
/* Log to path (made absolute: the daemon leaves its directory), appended;
 * also reopens it (logrotate). 0, or -1 with errno and the log stays where
 * it was. */
int ed_log_open(const char *path);
/* Log to stderr, or to syslog (facility daemon, with the pid). */
void ed_log_stderr(void);
void ed_log_syslog(void);
/* The file logged to, "" when stderr or syslog. */
const char *ed_log_path(void);
/* Hand the log file (if any) to uid:gid, so that they can reopen it. 0
 * (also when not a file), or -1 with errno. */
int ed_log_chown(uid_t uid, gid_t gid);
/* Close the log file (if any). */
void ed_log_close(void);

#endif
