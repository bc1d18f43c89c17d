// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/discover.h"
#include "nanlog_apis.h"
#include "proc/procmaps.h"

enum { ST_PENDING = 0, ST_REPORTED, ST_REJECTED };

struct entry {
	pid_t pid; /* 0 = free slot */
	unsigned long long starttime, vsize;
	char comm[16];
	unsigned gen; /* scan that last saw it */
	int state;
};

struct nl_discover {
	struct nl_discover_opts o;
	char root[256];
	char arg[256];
	struct entry *tab;
	size_t cap, n; /* power of two; entries in use */
	unsigned gen;
};

int nl_proc_stat(const char *root, pid_t pid, char *comm, size_t commlen,
		     unsigned long long *start, unsigned long long *vsize)
{
	char path[320], buf[1024], *lp, *rp, *p;
	unsigned long long v[2] = { 0, 0 };
	ssize_t r;
	int fd, field = 3;

	snprintf(path, sizeof(path), "%s/%d/stat", root, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -ESRCH;
	buf[r] = '\0';
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp || rp[1] != ' ' || !rp[2])
		return -EINVAL;
	if (rp[2] == 'Z' || rp[2] == 'X')
		return -ESRCH;
	if (comm) {
		size_t l = (size_t)(rp - lp - 1);

		if (l >= commlen)
			l = commlen - 1;
		memcpy(comm, lp + 1, l);
		comm[l] = '\0';
	}
	/* field 3 is the state; starttime is 22, vsize 23 */
	for (p = rp + 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field != 22 || sscanf(p, "%llu %llu", &v[0], &v[1]) != 2)
		return -EINVAL;
	*start = v[0];
	*vsize = v[1];
	return v[1] ? 0 : -ESRCH; /* no address space: a kernel thread */
}

int nl_identify(const char *root, pid_t pid, struct nl_found *f)
{
	char path[320], *text = NULL;
	unsigned long long vsize;
	int err;

	memset(f, 0, sizeof(*f));
	f->pid = pid;
	err = nl_proc_stat(root, pid, f->comm, sizeof(f->comm), &f->starttime, &vsize);
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/%d/cgroup", root, (int)pid);
	if (nl_read_text(path, &text) == 0) {
		nl_cgroup_parse(text, &f->cg); /* a cgroup file we cannot parse leaves it empty */
		free(text);
	}
	return 0;
}

static bool maps_hip(const char *root, pid_t pid)
{
	struct nl_maplib libs[8];
	char path[320], *text = NULL;
	int n;

	snprintf(path, sizeof(path), "%s/%d/maps", root, (int)pid);
	if (nl_read_text(path, &text))
		return false;
	n = nl_maps_find_libs(text, libs, 8);
	free(text);
	for (int i = 0; i < n; i++)
		if (libs[i].lib == NL_LIB_HIP && !libs[i].deleted)
			return true;
	return false;
}

struct nl_discover *nl_discover_new(const struct nl_discover_opts *o)
{
	struct nl_discover *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->o = *o;
	snprintf(d->root, sizeof(d->root), "%s", o->proc_root ? o->proc_root : "/proc");
	snprintf(d->arg, sizeof(d->arg), "%s", o->arg ? o->arg : "");
	d->o.proc_root = d->root;
	d->o.arg = d->arg;
	d->cap = 1024;
	d->tab = calloc(d->cap, sizeof(*d->tab));
	if (!d->tab) {
		free(d);
		return NULL;
	}
	return d;
}

void nl_discover_free(struct nl_discover *d)
{
	if (!d)
		return;
	free(d->tab);
	free(d);
}

static size_t slot(pid_t pid, size_t cap)
{
	return ((size_t)pid * 2654435761u) & (cap - 1);
}

static struct entry *find(struct nl_discover *d, pid_t pid)
{
	for (size_t i = slot(pid, d->cap), n = 0; n < d->cap; n++, i = (i + 1) & (d->cap - 1)) {
		if (d->tab[i].pid == pid)
			return &d->tab[i];
		if (!d->tab[i].pid)
			return NULL;
	}
	return NULL;
}

static int grow(struct nl_discover *d);

static struct entry *insert(struct nl_discover *d, pid_t pid)
{
	size_t i;

	if ((d->n + 1) * 2 > d->cap && grow(d))
		return NULL;
	for (i = slot(pid, d->cap); d->tab[i].pid; i = (i + 1) & (d->cap - 1))
		;
	memset(&d->tab[i], 0, sizeof(d->tab[i]));
	d->tab[i].pid = pid;
	d->n++;
	return &d->tab[i];
}

static int grow(struct nl_discover *d)
{
	struct entry *old = d->tab;
	size_t oldcap = d->cap;

	d->tab = calloc(oldcap * 2, sizeof(*d->tab));
	if (!d->tab) {
		d->tab = old;
		return -ENOMEM;
	}
	d->cap = oldcap * 2;
	d->n = 0;
	for (size_t i = 0; i < oldcap; i++) {
		if (old[i].pid) {
			struct entry *e = insert(d, old[i].pid);

			*e = old[i];
		}
	}
	free(old);
	return 0;
}

/* Remove by re-inserting the rest of the probe run (no tombstones). */
static void erase(struct nl_discover *d, struct entry *e)
{
	size_t i = (size_t)(e - d->tab);

	e->pid = 0;
	d->n--;
	for (size_t j = (i + 1) & (d->cap - 1); d->tab[j].pid; j = (j + 1) & (d->cap - 1)) {
		struct entry tmp = d->tab[j];

		d->tab[j].pid = 0;
		d->n--;
		*insert(d, tmp.pid) = tmp;
	}
}

void nl_discover_forget(struct nl_discover *d, pid_t pid)
{
	struct entry *e = d ? find(d, pid) : NULL;

	if (e)
		erase(d, e);
}

static bool selected(const struct nl_discover *d, const struct nl_found *f)
{
	switch (d->o.select) {
	case NL_SEL_ALL:
		return true;
	case NL_SEL_COMM:
		/* the kernel keeps 15 characters of a command name */
		return strncmp(f->comm, d->arg, 15) == 0;
	case NL_SEL_CGROUP:
		return f->cg.path[0] && nl_cgroup_within(f->cg.path, d->arg);
	case NL_SEL_CONTAINER:
		return f->cg.container_id[0] &&
		       strncmp(f->cg.container_id, d->arg, strlen(d->arg)) == 0;
	default:
		return false;
	}
}

int nl_discover_scan(struct nl_discover *d, void (*found)(void *ctx, const struct nl_found *f),
		     void *ctx)
{
	DIR *dir = opendir(d->root);
	struct dirent *de;
	int reported = 0;

	if (!dir)
		return -errno;
	d->gen++;
	while ((de = readdir(dir))) {
		unsigned long long start, vsize;
		struct nl_found f;
		struct entry *e;
		char comm[16], *end;
		long v;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		v = strtol(de->d_name, &end, 10);
		if (*end || v <= 0 || v > 4194304 || (pid_t)v == d->o.self)
			continue;
		if (nl_proc_stat(d->root, (pid_t)v, comm, sizeof(comm), &start, &vsize))
			continue;
		e = find(d, (pid_t)v);
		if (e && e->starttime != start) { /* the PID was reused */
			erase(d, e);
			e = NULL;
		}
		if (e) {
			e->gen = d->gen;
			/* judged already: look again only when its command or mappings changed */
			if (e->state == ST_REPORTED ||
			    (strcmp(e->comm, comm) == 0 && (e->vsize == vsize || e->state == ST_REJECTED)))
				continue;
		} else {
			e = insert(d, (pid_t)v);
			if (!e)
				break;
		}
		e->gen = d->gen;
		e->starttime = start;
		e->vsize = vsize;
		snprintf(e->comm, sizeof(e->comm), "%s", comm);
		if (nl_identify(d->root, (pid_t)v, &f) || f.starttime != start)
			continue;
		if (!selected(d, &f)) {
			e->state = ST_REJECTED;
			continue;
		}
		e->state = ST_PENDING;
		f.has_hip = maps_hip(d->root, (pid_t)v);
		if (!f.has_hip)
			continue; /* selected, no HIP yet: looked at again when its mappings change */
		e->state = ST_REPORTED;
		reported++;
		found(ctx, &f);
	}
	closedir(dir);
	/* processes gone since the last scan */
	for (size_t i = 0; i < d->cap; i++)
		if (d->tab[i].pid && d->tab[i].gen != d->gen) {
			erase(d, &d->tab[i]);
			i--; /* erase may move a later entry into this slot */
		}
	return reported;
}
