/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/io.c: whole-buffer transfers (io.h). */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "io.h"

int elastic__io_all(elastic__io_fn op, int fd, void *buf, size_t n, off_t off)
{
	char *p = buf;
	while (n > 0) {
		ssize_t k = op(fd, p, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
		off += k;
	}
	return 0;
}

ssize_t elastic__io_pwrite(int fd, void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}
