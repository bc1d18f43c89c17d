// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nanlog_apis.h"
#include "proc/procmaps.h"

int nl_lib_of_path(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (strncmp(base, "libamdhip64.so", 14) == 0)
		return NL_LIB_HIP;
	if (strncmp(base, "librccl.so", 10) == 0)
		return NL_LIB_RCCL;
	return -1;
}

/* Parse one line: "start-end perms offset MAJ:MIN inode   path". */
static int parse_line(const char *line, size_t len, struct nl_maplib *m)
{
	unsigned long long start, end, off, inode;
	unsigned int maj, min;
	char perms[8];
	int n = 0;
	char buf[4096 + 256];
	const char *path;
	size_t plen;

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (sscanf(buf, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
		   &min, &inode, &n) != 7 || n == 0)
		return -EINVAL;
	if (end < start)
		return -EINVAL;
	path = buf + n;
	while (*path == ' ')
		path++;
	if (*path != '/')
		return 0; /* anonymous, [heap], [vdso], ... */
	plen = strlen(path);
	m->deleted = false;
	if (plen > 10 && strcmp(path + plen - 10, " (deleted)") == 0) {
		plen -= 10;
		m->deleted = true;
	}
	if (plen >= sizeof(m->path))
		return -EINVAL;
	memcpy(m->path, path, plen);
	m->path[plen] = '\0';
	m->lib = nl_lib_of_path(m->path);
	if (m->lib < 0)
		return 0;
	m->dev = makedev(maj, min);
	m->inode = inode;
	return 1;
}

int nl_maps_find_libs(const char *text, struct nl_maplib *out, int max)
{
	int found = 0;
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		struct nl_maplib m;
		int r, dup = 0;

		if (len) {
			r = parse_line(p, len, &m);
			if (r < 0)
				return r;
			if (r > 0) {
				for (int i = 0; i < found; i++)
					if (out[i].dev == m.dev && out[i].inode == m.inode)
						dup = 1;
				if (!dup && found < max)
					out[found++] = m;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return found;
}

/* 16 MiB: a larger file is cut at its last whole line (a maps file that big
 * belongs to a process with a million mappings; the runtime's come early) */
#define MAX_READ (1u << 24)

int nl_read_text(const char *path, char **out)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb;

			if (cap >= MAX_READ)
				break;
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	/* a file cut in the middle of a line: drop the partial line */
	if (n + 1 >= cap && cap >= MAX_READ) {
		while (n > 0 && buf[n - 1] != '\n')
			n--;
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}
