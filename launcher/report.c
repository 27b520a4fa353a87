/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/report.c: the rank-end reports of elastic-run: a listening TCP
 * socket on the launcher's host, one line per rank from the rank wrapper. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>

#include "gpuset.h"
#include "report.h"

#define MAGIC	 ELASTIC_REPORT_MAGIC
#define END_LINE 160 /* the longest line of a rank's end */
#define MAX_LINE ELASTIC_REPORT_ERROR_LINE

int elastic__report_open(struct elastic_report *r, elastic_error_t *err)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t sl = sizeof(sa);
	unsigned char rnd[16];
	char host[256];
	int fd;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if ((fd = open("/dev/urandom", O_RDONLY)) < 0 ||
	    read(fd, rnd, sizeof(rnd)) != sizeof(rnd)) {
		if (fd >= 0)
			close(fd);
		return elastic__fail(err, EIO,
				     "cannot read /dev/urandom for the report token");
	}
	close(fd);
	for (int i = 0; i < 16; i++)
		snprintf(r->token + 2 * i, 3, "%02x", rnd[i]);
	if ((r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) <
		    0 ||
	    bind(r->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(r->fd, 4096) < 0 ||
	    getsockname(r->fd, (struct sockaddr *)&sa, &sl) < 0) {
		int e = errno;
		elastic__report_close(r);
		return elastic__fail(err, e, "report socket: %s", strerror(e));
	}
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	snprintf(r->addr, sizeof(r->addr), "%s:%u", host, (unsigned)ntohs(sa.sin_port));
	return 0;
}

void elastic__report_close(struct elastic_report *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nconn; i++)
		close(r->conn[i]);
	r->nconn = 0;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->end);
	r->end = NULL;
}

int elastic__report_begin(struct elastic_report *r, int nranks)
{
	struct elastic_rank_end *e;
	if (nranks < 1 || nranks > ELASTIC_REPORT_MAX_RANKS ||
	    !(e = calloc(nranks, sizeof(*e))))
		return -1;
	free(r->end);
	r->end = e;
	r->nranks = nranks;
	r->gen++;
	r->err_from = 0;
	r->err_text[0] = '\0';
	r->nsrun = 0;
	return 0;
}

int elastic__report_grow(struct elastic_report *r, int nranks)
{
	struct elastic_rank_end *e;
	if (nranks <= r->nranks)
		return 0;
	if (nranks > ELASTIC_REPORT_MAX_RANKS ||
	    !(e = realloc(r->end, nranks * sizeof(*e))))
		return -1;
	memset(e + r->nranks, 0, (size_t)(nranks - r->nranks) * sizeof(*e));
	r->end = e;
	r->nranks = nranks;
	return 0;
}

/* Escape text into out (of cap bytes): backslash and newline as \\ and
 * \n, other control characters as '?'. Returns the length written. */
static size_t _escape(const char *text, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 3 < cap; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\\' || c == '\n') {
			out[o++] = '\\';
			out[o++] = c == '\n' ? 'n' : '\\';
		} else {
			out[o++] = c < 0x20 && c != '\t' ? '?' : (char)c;
		}
	}
	out[o] = '\0';
	return o;
}

void elastic__report_format_error(char *buf, size_t len, const char *token, unsigned gen,
				  int rank, const char *text)
{
	char keep[ELASTIC_REPORT_ERROR_MAX];
	size_t n = strlen(text), k;

	while (n && text[n - 1] == '\n')
		n--;
	if (n < sizeof(keep)) {
		memcpy(keep, text, n);
		k = n;
	} else {
		/* its first line ("Traceback (most recent call last):"), then
		 * its end from a line's start: the frames nearest the error
		 * and the error itself */
		const char *nl = memchr(text, '\n', n);
		size_t head = nl && (size_t)(nl - text) < sizeof(keep) / 4
				      ? (size_t)(nl - text) + 1
				      : 0;
		static const char cut[] = "  ...\n";
		size_t room = sizeof(keep) - 1 - head - (sizeof(cut) - 1);
		const char *tail = text + n - room, *l = memchr(tail, '\n', room);
		if (l)
			tail = l + 1;
		memcpy(keep, text, head);
		memcpy(keep + head, cut, sizeof(cut) - 1);
		k = head + sizeof(cut) - 1;
		memcpy(keep + k, tail, (size_t)(text + n - tail));
		k += (size_t)(text + n - tail);
	}
	int h = snprintf(buf, len, "%s %s %u %d error ", MAGIC, token, gen, rank);
	if (h < 0 || (size_t)h + 2 >= len)
		return;
	size_t e = _escape(keep, k, buf + h, len - (size_t)h - 1);
	snprintf(buf + h + e, len - (size_t)h - e, "\n");
}

void elastic__report_format_srun(char *buf, size_t len, const char *token, unsigned gen,
				 unsigned long job, const char *host, const char *text)
{
	int h = snprintf(buf, len, "%s %s %u %s %lu %s", MAGIC, token, gen,
			 text ? "srun" : "step", job, host);
	if (h < 0 || (size_t)h + 3 >= len)
		return;
	size_t e = 0;
	if (text) {
		size_t n = strlen(text);
		if (n >= ELASTIC_REPORT_SRUN_TEXT)
			n = ELASTIC_REPORT_SRUN_TEXT - 1;
		buf[h++] = ' ';
		e = _escape(text, n, buf + h, len - (size_t)h - 1);
	}
	snprintf(buf + h + e, len - (size_t)h - e, "\n");
}

int elastic__report_take_srun(struct elastic_report *r, const char *line,
			      const struct elastic_srun **said)
{
	char magic[16], token[40], kind[8], host[64];
	char text[ELASTIC_REPORT_SRUN_TEXT];
	unsigned gen;
	unsigned long job;
	int used = 0;
	size_t o = 0;

	*said = NULL;
	if (sscanf(line, "%15s %39s %u %7s %lu %63s%n", magic, token, &gen, kind, &job,
		   host, &used) != 6 ||
	    strcmp(magic, MAGIC) || strcmp(token, r->token) || gen != r->gen || !job ||
	    (strcmp(kind, "srun") && strcmp(kind, "step")))
		return -1;
	const char *p = line + used;
	if (*p == ' ')
		p++;
	for (; *p && *p != '\n'; p++) {
		char c = *p;
		if (c == '\\' && (p[1] == 'n' || p[1] == '\\'))
			c = *++p == 'n' ? '\n' : '\\';
		if (o + 1 < sizeof(text))
			text[o++] = c;
	}
	text[o] = '\0';
	struct elastic_srun *s =
		(struct elastic_srun *)elastic__report_srun(r, job, host);
	if (!s) {
		if (r->nsrun >= ELASTIC_REPORT_SRUNS)
			return -1;
		s = &r->srun[r->nsrun++];
		memset(s, 0, sizeof(*s));
		s->job = job;
		snprintf(s->host, sizeof(s->host), "%s", host);
	}
	if (!strcmp(kind, "step")) {
		s->started = 1;
	} else if (o) {
		/* (its error is what says why: a line after it does not
		 * replace it) */
		if (strncmp(s->said, "error:", 6) || !strncmp(text, "error:", 6))
			snprintf(s->said, sizeof(s->said), "%s", text);
		*said = s;
	}
	return 0;
}

const struct elastic_srun *elastic__report_srun(const struct elastic_report *r,
						unsigned long job, const char *host)
{
	for (int i = 0; i < r->nsrun; i++)
		if (r->srun[i].job == job && !strcmp(r->srun[i].host, host))
			return &r->srun[i];
	return NULL;
}

/* fn for job's step on host unless it began; 1 if it did not. With fn
 * NULL only the count: of daemons' steps (daemon 1) that did not begin. */
static int _no_step(const struct elastic_report *r, unsigned long job, const char *host,
		    int daemon, int tried,
		    void (*fn)(unsigned long, const char *, int, int,
			       const struct elastic_srun *, void *),
		    void *arg)
{
	const struct elastic_srun *s = elastic__report_srun(r, job, host);
	if (s && s->started)
		return 0;
	if (fn)
		fn(job, host, daemon, tried, s, arg);
	return 1;
}

/* The steps of set that never began: every one (fn) or, fn NULL, only the
 * daemons' (daemons). */
static int _each_no_step(const struct elastic_report *r, const struct elastic_gpuset *set,
			 const char *self, unsigned long own, int daemons, int tried,
			 void (*fn)(unsigned long, const char *, int, int,
				    const struct elastic_srun *, void *),
			 void *arg)
{
	int n = 0;
	for (int h = 0; h < set->nhosts; h++) {
		const struct elastic_host *x = &set->host[h];
		int here = self && !strcmp(x->name, self);
		/* (mpirun's own node: its daemon is mpirun, in the job's step) */
		unsigned long daemon = here ? own : x->job;
		if (!here)
			n += _no_step(r, daemon, x->name, 1, 1, fn, arg);
		for (int g = 0; g < x->ngpus && !daemons; g++) {
			unsigned long j = x->gpu_job[g];
			int seen = 0;
			for (int k = 0; k < g; k++)
				seen |= x->gpu_job[k] == j;
			if (j && j != daemon && !seen)
				n += _no_step(r, j, x->name, 0, tried, fn, arg);
		}
	}
	return n;
}

int elastic__report_no_step(const struct elastic_report *r,
			    const struct elastic_gpuset *set, const char *self,
			    unsigned long own,
			    void (*fn)(unsigned long job, const char *host, int daemon,
				       int tried, const struct elastic_srun *s,
				       void *arg),
			    void *arg)
{
	/* a rank's srun is tried once every daemon is up: the runtime starts
	 * no rank before */
	int tried = !_each_no_step(r, set, self, own, 1, 1, NULL, NULL);
	return _each_no_step(r, set, self, own, 0, tried, fn, arg);
}

int elastic__report_parse_error(const struct elastic_report *r, const char *line,
				int *rank, char *text)
{
	char magic[16], token[40], kind[8];
	unsigned gen;
	int rk, used = 0;
	size_t o = 0;

	if (sscanf(line, "%15s %39s %u %d %7s %n", magic, token, &gen, &rk, kind,
		   &used) != 5 ||
	    !used || strcmp(magic, MAGIC) || strcmp(kind, "error") ||
	    strcmp(token, r->token) || gen != r->gen || rk < 0 || rk >= r->nranks)
		return -1;
	for (const char *p = line + used; *p && *p != '\n'; p++) {
		char c = *p;
		if (c == '\\' && (p[1] == 'n' || p[1] == '\\'))
			c = *++p == 'n' ? '\n' : '\\';
		if (o + 1 < ELASTIC_REPORT_ERROR_MAX)
			text[o++] = c;
	}
	text[o] = '\0';
	*rank = rk;
	return 0;
}

int elastic__report_parse(const struct elastic_report *r, const char *line, int *rank,
			  struct elastic_rank_end *end)
{
	char magic[16], token[40], how[8], host[64] = "";
	unsigned gen;
	int rk, value, gpu = -1, used = 0, f;

	if (strlen(line) >= END_LINE)
		return -1;
	/* 6 fields, or 8 with where the rank ran ("HOST GPU") */
	f = sscanf(line, "%15s %39s %u %d %7s %d%n %63s %d%n", magic, token, &gen, &rk,
		   how, &value, &used, host, &gpu, &used);
	if ((f != 6 && f != 8) || (line[used] != '\0' && line[used] != '\n'))
		return -1;
	if (strcmp(magic, MAGIC) || strcmp(token, r->token) || gen != r->gen || rk < 0 ||
	    rk >= r->nranks || value < 0 || value > 255 || gpu < -1 || gpu > 4095)
		return -1;
	if (strcmp(how, "exit") == 0)
		end->how = ELASTIC_RANK_EXITED;
	else if (strcmp(how, "signal") == 0)
		end->how = ELASTIC_RANK_SIGNALED;
	else
		return -1;
	end->value = value;
	end->told = 0;
	snprintf(end->host, sizeof(end->host), "%s", f == 8 ? host : "");
	end->gpu = f == 8 ? gpu : -1;
	*rank = rk;
	return 0;
}

int elastic__report_ended_on(const struct elastic_report *r, const char *host, int gpu)
{
	for (int i = 0; i < r->nranks; i++) {
		const struct elastic_rank_end *e = &r->end[i];
		if (e->how != ELASTIC_RANK_UNKNOWN && e->gpu == gpu && gpu >= 0 &&
		    !strcmp(e->host, host))
			return 1;
	}
	return 0;
}

int elastic__report_end_failed(int how, int value)
{
	if (how == ELASTIC_RANK_SIGNALED)
		return 1;
	return how == ELASTIC_RANK_EXITED && value != 0 && value != ELASTIC_EXIT_REFORM &&
	       value != ELASTIC_EXIT_LEFT;
}

int elastic__report_failed_on(const struct elastic_report *r, const char *host, int gpu)
{
	for (int i = 0; i < r->nranks; i++) {
		const struct elastic_rank_end *e = &r->end[i];
		if (gpu >= 0 && e->gpu == gpu && !strcmp(e->host, host) &&
		    elastic__report_end_failed(e->how, e->value))
			return 1;
	}
	return 0;
}

int elastic__report_from(const struct elastic_report *r, const char *host)
{
	int n = 0;
	for (int i = 0; i < r->nranks; i++)
		n += r->end[i].how != ELASTIC_RANK_UNKNOWN &&
		     !strcmp(r->end[i].host, host);
	return n;
}

/* A line longer than one segment (an error's text) may come in parts: the
 * rest of it is read here, for 200 ms at most (the wrapper sent it whole
 * and closes). Returns the bytes in line now. */
static ssize_t _rest_of_line(int fd, char *line, ssize_t got)
{
	for (int waits = 0; got < MAX_LINE && !memchr(line, '\n', got) && waits < 20;) {
		ssize_t more = recv(fd, line + got, MAX_LINE - got, MSG_DONTWAIT);
		if (more > 0) {
			got += more;
		} else if (more == 0 || (errno != EAGAIN && errno != EINTR)) {
			break;
		} else {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			waits++;
			poll(&p, 1, 10);
		}
	}
	return got;
}

static void _drop(struct elastic_report *r, int i)
{
	close(r->conn[i]);
	r->conn[i] = r->conn[--r->nconn];
}

int elastic__report_poll(struct elastic_report *r, int timeout_ms)
{
	struct pollfd pf[1 + 1024];
	int taken = 0, n = 0;

	pf[n++] = (struct pollfd){.fd = r->fd, .events = POLLIN};
	for (int i = 0; i < r->nconn; i++)
		pf[n++] = (struct pollfd){.fd = r->conn[i], .events = POLLIN};
	if (poll(pf, n, timeout_ms) <= 0)
		return 0;
	/* New connections first, read in this same call: a wrapper sends its
	 * line and closes at once, so a report that comes in as mpirun ends
	 * (a rank ending last, through srun) is taken before the caller's
	 * drain sees a poll with nothing taken and stops. */
	int polled = r->nconn;
	if (pf[0].revents & POLLIN) {
		int c;
		while (r->nconn < 1024 &&
		       (c = accept4(r->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >=
			       0)
			r->conn[r->nconn++] = c;
	}
	/* From the last (indices shift as connections close). */
	for (int i = r->nconn - 1; i >= 0; i--) {
		if (i < polled && !(pf[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		char line[MAX_LINE + 1];
		ssize_t got = recv(r->conn[i], line, MAX_LINE, MSG_DONTWAIT);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (got > 0)
			got = _rest_of_line(r->conn[i], line, got);
		if (got > 0) {
			int rank;
			struct elastic_rank_end e;
			line[got] = '\0';
			if (memchr(line, '\n', got) &&
			    elastic__report_parse(r, line, &rank, &e) == 0) {
				/* (a rank in a grant's step is reported twice, from
				 * inside the step and by its wrapper: the same end) */
				struct elastic_rank_end *was = &r->end[rank];
				if (was->how != e.how || was->value != e.value) {
					*was = e;
					taken++;
				}
			} else if (memchr(line, '\n', got) && !r->err_from &&
				   elastic__report_parse_error(r, line, &rank,
							       r->err_text) == 0) {
				r->err_from = 1 + rank;
			} else if (memchr(line, '\n', got)) {
				const struct elastic_srun *said;
				if (elastic__report_take_srun(r, line, &said) == 0 &&
				    said && r->on_said)
					r->on_said(said, said->said);
			}
		}
		_drop(r, i); /* one line per connection, whole or nothing */
	}
	return taken;
}

/* An exit status that says the rank was killed from outside, not that it
 * failed: libelastic's handlers end a rank that gets SIGTERM or SIGHUP with
 * 128 + the signal (Slurm ending the step of a cancelled grant or a lost
 * node, mpirun stopping ranks still exiting at a planned re-form). Such a
 * rank was lost, like a SIGKILLed one; the survivors may have healed. */
int elastic__report_killed_status(int v)
{
	return v == 128 + SIGTERM || v == 128 + SIGKILL || v == 128 + SIGHUP;
}

void elastic__report_describe(const struct elastic_report *r, int rank, char *buf,
			      size_t len)
{
	const struct elastic_rank_end *e = &r->end[rank];
	char where[100] = "";

	if (e->host[0])
		snprintf(where, sizeof(where), " on %s", e->host);
	if (e->gpu >= 0)
		snprintf(where + strlen(where), sizeof(where) - strlen(where), " GPU %d",
			 e->gpu);
	if (e->how == ELASTIC_RANK_SIGNALED)
		snprintf(buf, len, "rank %d%s: killed by signal %d (%s)", rank, where,
			 e->value, strsignal(e->value));
	else if (e->how == ELASTIC_RANK_EXITED)
		snprintf(buf, len, "rank %d%s: exit status %d", rank, where, e->value);
	else
		snprintf(buf, len, "rank %d%s: no report of its end", rank, where);
}

int elastic__report_cause(const struct elastic_report *r, int reform_code, char *buf,
			  size_t len)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < r->nranks; i++) {
			const struct elastic_rank_end *e = &r->end[i];
			int sig = e->how == ELASTIC_RANK_SIGNALED;
			if (sig ? pass != 0 || e->value == SIGKILL ||
					    e->value == SIGTERM || e->value == SIGHUP
				: pass != 1 || e->how != ELASTIC_RANK_EXITED ||
					    e->value == 0 || e->value == reform_code ||
					    e->value == ELASTIC_EXIT_LEFT ||
					    elastic__report_killed_status(e->value))
				continue;
			elastic__report_describe(r, i, buf, len);
			return 0;
		}
	return -1;
}

void elastic__report_summary(const struct elastic_report *r, int reform_code,
			     struct elastic_report_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < r->nranks; i++) {
		const struct elastic_rank_end *e = &r->end[i];
		if (e->how == ELASTIC_RANK_UNKNOWN)
			s->missing++;
		else if (e->how == ELASTIC_RANK_SIGNALED ||
			 elastic__report_killed_status(e->value))
			s->signaled++;
		else if (e->value == 0)
			s->ok++;
		else if (e->value == reform_code)
			s->reform++;
		else if (e->value == ELASTIC_EXIT_LEFT)
			s->left++;
		else
			s->failed++;
	}
	s->raised = r->err_from > 0;
}

/* ---- Rank 0's progress record (report.h). */

/* Was a file last written (st) after the current mpirun was started? */
static int _since_launch(const struct elastic_progress *p, const struct stat *st)
{
	return st->st_mtim.tv_sec > p->since.tv_sec ||
	       (st->st_mtim.tv_sec == p->since.tv_sec &&
		st->st_mtim.tv_nsec > p->since.tv_nsec);
}

int elastic__progress_read(const struct elastic_progress *p, unsigned long long *step,
			   unsigned long long *seen, double *t, int *size)
{
	char buf[96];
	struct stat st;
	int fd;
	ssize_t n;

	if ((fd = open(p->path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1; /* no record yet */
	if (fstat(fd, &st) < 0 || !_since_launch(p, &st)) {
		close(fd);
		return -1;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	*size = 0;
	return sscanf(buf, "%llu %llu %lf %d", step, seen, t, size) >= 3 ? 0 : -1;
}

int elastic__progress_committed(const struct elastic_progress *p)
{
	unsigned long long step, seen;
	double t;
	int size;

	return elastic__progress_read(p, &step, &seen, &t, &size) == 0;
}

int elastic__ranks_ready(const struct elastic_progress *p, double t0, double now)
{
	struct stat st;
	if (now - t0 > 10.0)
		return 1;
	return stat(p->path, &st) == 0 && _since_launch(p, &st);
}
