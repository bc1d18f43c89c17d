/* SPDX-License-Identifier: MIT */
/*
 * --record FILE / --replay FILE: the record stream of a run in a versioned
 * binary file, so the audit can be run again offline, without root, on the
 * very bytes the ring buffer delivered. docs/recording.md has the byte layout.
 *
 * The format is little-endian and x86-64 only, as the records it carries
 * (struct nl_rec_call) are: the file starts with a byte-order mark that the
 * reader checks.
 *
 * Writer: nl_recording_create -> nl_recording_write_*... [-> nl_recording_flush]
 *         -> [nl_recording_finish] -> nl_recording_close (accepts NULL).
 * Reader: nl_recording_open | nl_recording_open_mem -> nl_recording_header ->
 *         nl_recording_next... -> [nl_recording_trailer] -> nl_recording_free
 *         (accepts NULL).
 * Functions return 0 or -errno unless said otherwise; where a char *err
 * buffer is passed, a failure leaves one line there naming the file and, for
 * a damaged recording, the byte offset.
 *
 * Pure C, no libbpf: unit-tested without root.
 */
#ifndef NANLOG_RECORDING_H
#define NANLOG_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nanlog_apis.h"
#include "nanlog_rec.h"

/* The record schema: the layout of struct nl_rec_call (include/nanlog_rec.h)
 * that decode.c reads; a recording carries its writer's. */
#define NL_RECORD_SCHEMA 1

#define NL_RECORDING_VERSION 1 /* format version this code writes and reads */

/* Limits, enforced by the writer (-E2BIG) and by the reader (malformed file). */
#define NL_RECORDING_MAX_FRAME (4u << 20) /* payload of the header, a block or the trailer */
#define NL_RECORDING_BLOCK_ITEMS 4096     /* items per block */
#define NL_RECORDING_BLOCK_BYTES (1u << 20) /* a block is written once it holds this much */
#define NL_RECORDING_MAX_STR 4096         /* bytes of one string, no NUL inside */
#define NL_RECORDING_MAX_REC 4096         /* bytes of one ring-buffer record */
#define NL_RECORDING_MAX_ARGS 1024        /* argv strings in the header */
#define NL_RECORDING_MAX_TARGETS 64       /* targets in the header (NL_MAX_PIDS) */
#define NL_RECORDING_MAX_LIBS 256         /* libraries in the header */

/* A traced process. */
struct nl_recording_target {
	uint32_t pid;
	bool mid_run;      /* already running when tracing began (-p), as nl_engine_attach */
	uint64_t ts_ns;    /* CLOCK_MONOTONIC when tracing began */
	const char *comm;  /* may be "" (NULL is written as "") */
};

/* One library attached into one target: struct nl_attach_report's fields. */
struct nl_recording_lib {
	uint32_t pid;
	int lib;           /* NL_LIB_* */
	const char *path;  /* as the target sees it */
	int attached;      /* symbols with their entry probe */
	int retprobes;     /* of which also a return probe */
	bool retprobes_allowed;
	uint64_t elapsed_ns; /* time the attach took (the attach line's attach_ms) */
	uint64_t ts_ns;    /* CLOCK_MONOTONIC when the attach was reported */
	int nmissing;
	int missing[NL_API_COUNT]; /* api ids the library lacks */
};

/* What the file says about the run at its start. */
struct nl_recording_header {
	uint32_t format_version; /* reader: NL_RECORDING_VERSION; writer: ignored */
	uint32_t rec_size;       /* reader: sizeof(struct nl_rec_call); writer: ignored */
	uint32_t rec_schema;     /* the record schema of the writing tool (NL_RECORD_SCHEMA) */
	const char *tool_version;
	const char *kernel_release;
	uint64_t start_mono_ns;  /* CLOCK_MONOTONIC at start ... */
	uint64_t start_real_ns;  /* ... and CLOCK_REALTIME at the same moment: the wall-clock anchor */
	int argc;                /* the tool's command line, options included */
	const char *const *argv;
	int ntargets;
	const struct nl_recording_target *targets;
	int nlibs;
	const struct nl_recording_lib *libs;
};

/* The run's counters as the live summary printed them. */
struct nl_recording_trailer {
	uint64_t end_ns;         /* CLOCK_MONOTONIC at the end (nl_app_finish's now) */
	uint64_t records, bad_records;
	uint64_t lost_ringbuf, lost_stash, nested_folded;
	uint32_t probes_attached, retprobes_attached;
	int nmissing;
	int missing[NL_API_COUNT]; /* distinct api ids missing, in the summary's order */
	uint64_t attach_ns, duration_ns;
	double cpu_ms;
	int32_t err;             /* the run's outcome handed to nl_app_finish: 0 or -errno */
};

/* ---- writer ------------------------------------------------------------------ */

struct nl_recording_writer;

/*
 * Create path (O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0644 less umask;
 * O_TRUNC instead of O_EXCL with force: a symbolic link is refused either way)
 * and write the header. -EEXIST, -ELOOP, -E2BIG (a string, argv, targets or
 * libraries over the limits), -EINVAL, -ENOSPC...
 */
int nl_recording_create(struct nl_recording_writer **out, const char *path, bool force,
			const struct nl_recording_header *h, char *err, size_t errlen);

/*
 * Items, in arrival order. They are grouped into blocks written when full
 * (NL_RECORDING_BLOCK_ITEMS items or NL_RECORDING_BLOCK_BYTES), at
 * nl_recording_flush, nl_recording_finish and nl_recording_close. After the
 * first failure every call returns that error and writes nothing more.
 */
/* One ring-buffer record as delivered, of any size up to NL_RECORDING_MAX_REC
 * (a record of the wrong size is kept too: replay counts it as bad, as live did). */
int nl_recording_write_record(struct nl_recording_writer *w, const void *data, size_t size);
int nl_recording_write_lib(struct nl_recording_writer *w, const struct nl_recording_lib *l);
/* count records lost, noticed at ts_ns; pid 0: not known whose. */
int nl_recording_write_lost(struct nl_recording_writer *w, uint32_t pid, uint64_t count,
			    uint64_t ts_ns);
int nl_recording_write_exit(struct nl_recording_writer *w, uint32_t pid, uint64_t ts_ns);
int nl_recording_write_target(struct nl_recording_writer *w, const struct nl_recording_target *t);

/* Write the items gathered so far as a block now. Called from the periodic
 * tick, it bounds what a SIGKILLed tool loses to one tick's items. */
int nl_recording_flush(struct nl_recording_writer *w);
/* Flush and write the trailer; nothing may be written after. */
int nl_recording_finish(struct nl_recording_writer *w, const struct nl_recording_trailer *t);
/* Flush what is pending (without a trailer unless finished), close and free.
 * Returns the first error of the writer's life, 0 if none. Accepts NULL. */
int nl_recording_close(struct nl_recording_writer *w);
/* Bytes written to the file so far (complete blocks). */
uint64_t nl_recording_bytes(const struct nl_recording_writer *w);

/* ---- reader ------------------------------------------------------------------ */

enum nl_recording_item_kind {
	NL_RI_RECORD = 1, /* rec */
	NL_RI_LIB,        /* lib: a library attached after the start */
	NL_RI_LOST,       /* lost */
	NL_RI_EXIT,       /* exit: a target exited */
	NL_RI_TARGET,     /* target: a target added after the start */
};

/* One item; its strings stay valid until the next nl_recording_next or free. */
struct nl_recording_item {
	int kind; /* enum nl_recording_item_kind */
	union {
		struct {
			uint32_t size;
			union {
				struct nl_rec_call call; /* size == sizeof(call): the usual case */
				unsigned char bytes[NL_RECORDING_MAX_REC];
			} data;
		} rec;
		struct nl_recording_lib lib;
		struct {
			uint32_t pid;
			uint64_t count, ts_ns;
		} lost;
		struct {
			uint32_t pid;
			uint64_t ts_ns;
		} exit;
		struct nl_recording_target target;
	};
};

/* nl_recording_next's results besides -errno. */
#define NL_RECORDING_ITEM 1       /* *it holds the next item */
#define NL_RECORDING_END 0        /* end, the trailer was read: nl_recording_trailer */
#define NL_RECORDING_NO_TRAILER 2 /* end without a trailer (writer killed): not fatal */

struct nl_recording_reader;

/*
 * Open a recording and read its header. rec_schema: the record schema this
 * tool decodes (NL_RECORD_SCHEMA), 0 to accept any. Errors: -ENOENT and other
 * open(2) errors; -EINVAL not a recording; -EPROTONOSUPPORT another format
 * version or byte order; -EPROTO another record size, schema or API table;
 * -EBADMSG damaged or truncated header.
 */
int nl_recording_open(struct nl_recording_reader **out, const char *path, uint32_t rec_schema,
		      char *err, size_t errlen);
/* The same on len bytes at buf, which must outlive the reader; name is used
 * in messages (NULL: "<memory>"). */
int nl_recording_open_mem(struct nl_recording_reader **out, const void *buf, size_t len,
			  const char *name, uint32_t rec_schema, char *err, size_t errlen);
const struct nl_recording_header *nl_recording_header(const struct nl_recording_reader *r);

/*
 * Next item in write order. NL_RECORDING_ITEM, NL_RECORDING_END,
 * NL_RECORDING_NO_TRAILER (with the "no trailer: ..." line in err; the items
 * of every complete block were delivered), or -EBADMSG for a damaged block
 * (a block's items are delivered only once the whole block checked out),
 * -EIO for a read error. Once it returned anything but NL_RECORDING_ITEM it
 * returns the same again.
 */
int nl_recording_next(struct nl_recording_reader *r, struct nl_recording_item *it, char *err,
		      size_t errlen);
/* The trailer once nl_recording_next returned NL_RECORDING_END, else NULL. */
const struct nl_recording_trailer *nl_recording_trailer(const struct nl_recording_reader *r);
/* Offset just past the last frame read (the block whose items are being handed out). */
uint64_t nl_recording_offset(const struct nl_recording_reader *r);
void nl_recording_free(struct nl_recording_reader *r);

#endif /* NANLOG_RECORDING_H */
