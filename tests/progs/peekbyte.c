// SPDX-License-Identifier: MIT
/*
 * peekbyte PID SYMBOL: print, in hex, the first byte of SYMBOL as it is in
 * the memory of process PID (searched in its libamdhip64/librccl mappings).
 * 0xcc means a uprobe breakpoint is installed there. Test helper.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/elfsym.h"
#include "proc/procmaps.h"

int main(int argc, char **argv)
{
	char path[4200], line[4600];
	const char *names[1];
	uint64_t off;
	unsigned char b;
	FILE *maps;
	int fd, mem;

	if (argc != 3) {
		fprintf(stderr, "usage: peekbyte PID SYMBOL\n");
		return 2;
	}
	names[0] = argv[2];
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	maps = fopen(path, "r");
	if (!maps) {
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof(line), maps)) {
		struct nl_maplib m;
		unsigned long long start, end, foff;
		char file[4200];

		if (nl_maps_find_libs(line, &m, 1) != 1)
			continue;
		if (sscanf(line, "%llx-%llx %*s %llx", &start, &end, &foff) != 3)
			continue;
		snprintf(file, sizeof(file), "/proc/%s/root%s", argv[1], m.path);
		fd = open(file, O_RDONLY);
		if (fd < 0)
			continue;
		if (nl_elf_resolve(fd, names, 1, &off) != 1 || off < foff || off >= foff + (end - start)) {
			close(fd);
			continue;
		}
		close(fd);
		snprintf(path, sizeof(path), "/proc/%s/mem", argv[1]);
		mem = open(path, O_RDONLY);
		if (mem < 0 || pread(mem, &b, 1, (off_t)(start + off - foff)) != 1) {
			perror(path);
			return 1;
		}
		close(mem);
		printf("0x%02x\n", b);
		fclose(maps);
		return 0;
	}
	fclose(maps);
	fprintf(stderr, "peekbyte: %s not found in the mapped libraries of %s\n", argv[2], argv[1]);
	return 1;
}
