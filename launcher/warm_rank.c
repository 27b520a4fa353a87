/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/warm_rank.c: the rank wrapper's side of the warm interpreters
 * (warm_rank.h): it hands argv, environment, cwd and file descriptors to its
 * node's zygote, which forks the rank, and reads back how the rank ended. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ldpath.h"
#include "process.h"
#include "gpuset.h"
#include "warm_rank.h"

#define MAX_FDS		250  /* SCM_RIGHTS takes at most 253 */
#define WARM_START_WAIT 10.0 /* s: for a listed zygote to listen */

extern char **environ;

static int _verbose(void)
{
	const char *v = getenv("ELASTIC_RUN_VERBOSE");
	return v && atoi(v) > 0;
}

static void _note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void _note(const char *fmt, ...)
{
	va_list ap;
	char msg[1024];
	if (!_verbose())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one write: see elastic-run.c's _say */
	fprintf(stderr, "elastic-run --rank %s: %s\n",
		getenv("OMPI_COMM_WORLD_RANK") ?: "?", msg);
}

/* The job whose step runs this rank (its GPU's: ELASTIC_GPU_JOB, else its
 * host's in ELASTIC_RUN_MAP), or 0 when neither says. */
static unsigned long _rank_job(const char *host)
{
	const char *o = getenv("ELASTIC_GPU_JOB"), *map = getenv("ELASTIC_RUN_MAP");
	unsigned long job = 0;
	char gpus[512];

	if (o && *o)
		return strtoul(o, NULL, 10);
	if (map && elastic__map_find(map, host, &job, gpus, sizeof(gpus)) == 0)
		return job;
	return 0;
}

/* Whether ELASTIC_RUN_WARM_LIVE lists the zygote of host for job. */
static int _listed(const char *host, unsigned long job)
{
	const char *live = getenv("ELASTIC_RUN_WARM_LIVE");
	char hj[300];
	int n = snprintf(hj, sizeof(hj), "%s.%lu", host, job);

	if (!live || !job || n <= 0 || n >= (int)sizeof(hj))
		return 0;
	for (const char *p = live; (p = strstr(p, hj)); p += n)
		if ((p == live || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

static int _connect(const char *key, volatile sig_atomic_t *pending)
{
	const char *host = getenv("SLURMD_NODENAME");
	char hn[256];
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (!host) {
		if (gethostname(hn, sizeof(hn)) < 0)
			return -1;
		hn[sizeof(hn) - 1] = '\0';
		host = hn;
	}
	/* abstract name: "\0KEY.HOST.JOB" (the zygote in this rank's step),
	 * "\0KEY.HOST" where no job is known (a zygote started by hand) */
	unsigned long job = _rank_job(host);
	char jobs[24] = "";
	if (job)
		snprintf(jobs, sizeof(jobs), ".%lu", job);
	int len = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "%s.%s%s", key, host,
			   jobs);
	if (len <= 0 || len >= (int)sizeof(a.sun_path) - 1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* a zygote elastic-run started for this host and job may not listen
	 * yet (srun is starting it): wait for it, WARM_START_WAIT s at most */
	int listed = _listed(host, job);
	for (double t0 = elastic__now();;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&a,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
					len)) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (e != ECONNREFUSED || !listed || *pending ||
		    elastic__now() - t0 > WARM_START_WAIT) {
			errno = e;
			return -1;
		}
		usleep(50000);
	}
}

/* Append s and its NUL to the growing buffer; -1 when out of memory. */
static int _put(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s) + 1;
	if (*len + n > *cap) {
		size_t c = (*cap + n) * 2;
		char *p = realloc(*buf, c);
		if (!p)
			return -1;
		*buf = p, *cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	return 0;
}

/* This process's open descriptors other than skip, at most MAX_FDS. */
static int _open_fds(int skip, int *fds)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)) && n < MAX_FDS) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name || fd == skip || fd == dirfd(d))
			continue;
		fds[n++] = (int)fd;
	}
	closedir(d);
	return n;
}

/* This process's CPU affinity as "0,1,5" (empty when unknown). */
static void _cpus(char *buf, size_t len)
{
	cpu_set_t set;
	size_t used = 0;
	buf[0] = '\0';
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return;
	for (int c = 0; c < CPU_SETSIZE && used + 8 < len; c++)
		if (CPU_ISSET(c, &set))
			used += (size_t)snprintf(buf + used, len - used, "%s%d",
						 used ? "," : "", c);
}

/* Send the request: length + fds, then argv, environ, cwd, fd numbers, umask
 * and CPU affinity (the rank takes the wrapper's, not the zygote's). */
static int _send_request(int s, char **argv)
{
	char *buf = NULL, num[16], cwd[4096], *list, cpus[CPU_SETSIZE * 6], mask[8];
	size_t len = 0, cap = 0;
	int fds[MAX_FDS], nfds = _open_fds(s, fds), argc = 0, envc = 0, rc = -1;

	if (nfds < 0 || !getcwd(cwd, sizeof(cwd)))
		return -1;
	while (argv[argc])
		argc++;
	while (environ[envc])
		envc++;
	list = malloc((size_t)nfds * 12 + 1);
	if (!list)
		return -1;
	list[0] = '\0';
	for (int i = 0; i < nfds; i++)
		sprintf(list + strlen(list), "%s%d", i ? "," : "", fds[i]);
	snprintf(num, sizeof(num), "%d", argc);
	int bad = _put(&buf, &len, &cap, "v1") || _put(&buf, &len, &cap, num);
	for (int i = 0; i < argc && !bad; i++)
		bad = _put(&buf, &len, &cap, argv[i]);
	/* LD_LIBRARY_PATH as the job has it, without what the runtime added
	 * for this node's daemon (ldpath.h): the zygote compares it with its own */
	const char *ld_added = getenv("ELASTIC_RUN_LD_ADDED"),
		   *ld = getenv("LD_LIBRARY_PATH");
	const char *ld_job = ld ? elastic__ld_strip(ld, ld_added) : NULL;
	char *ld_var = NULL;
	if (ld_job && ld_job != ld && *ld_job &&
	    asprintf(&ld_var, "LD_LIBRARY_PATH=%s", ld_job) < 0)
		ld_var = NULL;
	int skip = ld_job && ld_job != ld && (!*ld_job || ld_var) ? 1 : 0;
	snprintf(num, sizeof(num), "%d", envc - skip + (ld_var ? 1 : 0));
	bad = bad || _put(&buf, &len, &cap, num);
	for (int i = 0; i < envc && !bad; i++)
		if (!skip || strncmp(environ[i], "LD_LIBRARY_PATH=", 16))
			bad = _put(&buf, &len, &cap, environ[i]);
	if (ld_var)
		bad = bad || _put(&buf, &len, &cap, ld_var);
	free(ld_var);
	mode_t um = umask(0);
	umask(um);
	snprintf(mask, sizeof(mask), "%o", (unsigned)um);
	_cpus(cpus, sizeof(cpus));
	bad = bad || _put(&buf, &len, &cap, cwd) || _put(&buf, &len, &cap, list) ||
	      _put(&buf, &len, &cap, mask) || _put(&buf, &len, &cap, cpus);
	free(list);
	if (bad)
		goto out;
	/* no NUL after the last field; the length little-endian (as x86_64
	 * and aarch64 are: the zygote reads "<I") */
	len--;
	uint32_t n32 = (uint32_t)len;
	union {
		char b[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &n32, .iov_len = 4};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > 0) {
		m.msg_control = u.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (sendmsg(s, &m, MSG_NOSIGNAL) != 4)
		goto out;
	for (size_t off = 0; off < len;) {
		ssize_t w = send(s, buf + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto out;
		off += (size_t)w;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* Read one line from s (blocking, EINTR retried); 0 or -1 at EOF/error. */
static int _line(int s, char *buf, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t r = read(s, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

/* Wait until s has something to read (the zygote's answer, or its end);
 * 0 then, or the terminating signal that came first (SIGHUP: the daemon
 * that started this wrapper ended, and its launch with it). */
static int _wait_answer(int s, volatile sig_atomic_t *pending)
{
	struct pollfd p = {.fd = s, .events = POLLIN};
	pid_t parent = getppid();
	for (;;) {
		int sig = *pending;
		if (sig == SIGTERM || sig == SIGINT || sig == SIGKILL)
			return sig;
		if (getppid() != parent)
			return SIGHUP;
		int r = poll(&p, 1, 100);
		if (r > 0 || (r < 0 && errno != EINTR))
			return 0;
	}
}

int elastic__warm_rank_run(char **argv, volatile pid_t *child, int *ws,
			   volatile sig_atomic_t *pending)
{
	const char *key = getenv("ELASTIC_RUN_WARM");
	char line[512];

	elastic__setenv_time("ELASTIC_RUN_T_RANK", elastic__wall());
	if (!key || !*key)
		return -1;
	int s = _connect(key, pending);
	if (s < 0) {
		_note("no warm interpreter on this node (%s): starting %s cold",
		      strerror(errno), argv[0]);
		return -1;
	}
	if (_send_request(s, argv) < 0) {
		_note("the warm interpreter did not take the rank (%s): starting %s cold",
		      strerror(errno), argv[0]);
		close(s);
		return -1;
	}
	/* the zygote answers once its imports are done; a rank ended while it
	 * waits ends here, as killed by that signal (the zygote sees the
	 * socket closed and forks nothing for it) */
	int ended = _wait_answer(s, pending);
	if (ended) {
		_note("ended by signal %d while waiting for the warm interpreter", ended);
		close(s);
		*ws = ended; /* a wait status: killed by that signal */
		return 0;
	}
	if (_line(s, line, sizeof(line)) < 0) {
		_note("the warm interpreter did not take the rank (%s): starting %s cold",
		      strerror(errno), argv[0]);
		close(s);
		return -1;
	}
	if (strncmp(line, "pid ", 4) != 0) {
		_note("the warm interpreter refused: %s: starting %s cold",
		      strncmp(line, "no ", 3) ? line : line + 3, argv[0]);
		close(s);
		return -1;
	}
	*child = (pid_t)atol(line + 4);
	_note("started warm: pid %ld forked by this node's zygote", (long)*child);
	if (*pending)
		kill(*child, *pending);
	/* the zygote says "exit STATUS" when the rank ended; EOF: the zygote is
	 * gone, and its children with it (they die with it) */
	int st = -1;
	if (_line(s, line, sizeof(line)) == 0 && sscanf(line, "exit %d", &st) == 1)
		*ws = st;
	else
		*ws = SIGKILL; /* a wait status: killed by SIGKILL */
	/* the zygote reaped it: its pid may now be another process's, which
	 * a signal passed on later (mpirun's SIGTERM while the end is being
	 * reported) must not reach */
	*child = -1;
	close(s);
	return 0;
}
