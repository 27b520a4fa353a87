/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/io.h: a transfer of a whole buffer through a system call that may move fewer
 * bytes than asked or be interrupted (pread, pwrite, send). */
#ifndef ELASTIC_COMMON_IO_H
#define ELASTIC_COMMON_IO_H

#include <stddef.h>
#include <sys/types.h>

/* One call of the transfer: like pread(2), n bytes at buf, at offset off (a
 * transfer without offsets ignores it). */
typedef ssize_t (*elastic__io_fn)(int fd, void *buf, size_t n, off_t off);

/* Call op until all n bytes went through, again after EINTR, the offset
 * moving with the bytes: 0, or -1 when op fails (errno from op) or moves
 * nothing (end of file, a closed peer). */
int elastic__io_all(elastic__io_fn op, int fd, void *buf, size_t n, off_t off);

/* pwrite(2) as an elastic__io_fn. */
ssize_t elastic__io_pwrite(int fd, void *buf, size_t n, off_t off);

#endif
