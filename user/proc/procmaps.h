/* SPDX-License-Identifier: MIT */
/* Finding a target's HIP and RCCL libraries in /proc/PID/maps text. */
#ifndef NANLOG_PROCMAPS_H
#define NANLOG_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nl_maplib {
	int lib;            /* NL_LIB_HIP or NL_LIB_RCCL */
	uint64_t dev;       /* makedev(major, minor) of the mapping */
	uint64_t inode;
	bool deleted;       /* the file was replaced or removed after mapping */
	char path[4096];    /* as the target sees it (its own mount namespace) */
};

/* Which probed library a file name is, by its basename; -1 for none. */
int nl_lib_of_path(const char *path);

/*
 * Parse maps text (NUL-terminated) and store up to max distinct probed
 * libraries (by device and inode) in out. Returns how many were found, or
 * -EINVAL when a line is malformed.
 */
int nl_maps_find_libs(const char *text, struct nl_maplib *out, int max);

/*
 * The whole text of a /proc file (or any small file), NUL-terminated, in a
 * malloc'd buffer; a file over 16 MiB is cut at its last whole line.
 * 0 or -errno.
 */
int nl_read_text(const char *path, char **out);

#endif
