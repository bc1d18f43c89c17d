// SPDX-License-Identifier: MIT
/*
 * nl_decode on records, then the raw writer on what it decoded. The input is
 * decoded whole (the size check) and as a run of record-sized records, as a
 * recording holds them; and expanded whole as a compact ring record
 * (nl_wire_expand), then decoded, as the loader hands it on.
 */
#include <errno.h>

#include "record/decode.h"
#include "fuzz.h"
#include "out/raw.h"

#define ALL_FIELDS ((uint32_t)(NL_F_MS << 1) - 1)

static void check_call(const struct nl_rec_call *r, const struct nl_call *c)
{
	FUZZ_CHECK(c->api == r->api && c->api < NL_API_COUNT);
	FUZZ_CHECK(c->kind == nl_api_info[c->api].kind);
	FUZZ_CHECK(c->pid == r->pid && c->tid == r->tid && c->ts_ns == r->ts_ns);
	FUZZ_CHECK((c->fields & ~ALL_FIELDS) == 0);
	/* return values only from a return probe, out parameters only on success */
	FUZZ_CHECK(!(c->fields & (NL_F_HANDLE | NL_F_MS)) || ((c->fields & NL_F_RC) && c->rc == 0));
	FUZZ_CHECK(!((c->fields & NL_F_HANDLE) && (c->fields & NL_F_MS)));
}

/* What nl_decode accepts: a known tag and API; counted-run words that hold together. */
static bool valid(const struct nl_rec_call *r)
{
	if ((r->type != NL_REC_CALL && r->type != NL_REC_RUN) || r->api >= NL_API_COUNT)
		return false;
	if (r->flags & NL_RF_RET)
		return r->type == NL_REC_CALL;
	if (r->type == NL_REC_CALL && r->run &&
	    ((r->run & NL_RUN_CLOSING) || NL_RUN_COUNT(r->run) || !NL_RUN_TOKEN(r->run) ||
	     !nl_api_info[r->api].countable))
		return false;
	return NL_RUN_COUNT(r->flush) ? NL_RUN_TOKEN(r->flush) != 0 : r->type != NL_REC_RUN;
}

/* A compact record that expands says what its size says, and nothing it did not carry. */
static void check_wire(const uint8_t *data, size_t size, FILE *out)
{
	struct nl_rec_call r;
	struct nl_wire w;
	struct nl_call c;
	size_t words;

	if (nl_wire_expand(data, size, &r))
		return;
	memcpy(&w, data, size);
	FUZZ_CHECK(w.type == NL_WIRE_CALL || w.type == NL_WIRE_RUN);
	words = w.nargs + ((w.words & NL_WW_TRIPLE) ? 3 : 0) + ((w.words & NL_WW_LOST) ? 1 : 0);
	FUZZ_CHECK(size == NL_WIRE_HEAD + words * sizeof(__u64));
	FUZZ_CHECK(r.type == (w.type == NL_WIRE_CALL ? NL_REC_CALL : NL_REC_RUN));
	FUZZ_CHECK(r.api == w.api && r.pid == w.pid && r.tid == w.tid && r.ts_ns == w.ts_ns);
	for (int i = w.nargs; i < NL_ARG_LOST_BEFORE; i++)
		FUZZ_CHECK(r.args[i] == 0);
	FUZZ_CHECK((w.words & NL_WW_LOST) || r.args[NL_ARG_LOST_BEFORE] == 0);
	FUZZ_CHECK((w.words & NL_WW_TRIPLE) || (r.ret_ns == 0 && r.rc == 0 && r.out == 0));
	if (nl_decode(&r, sizeof(r), &c))
		return;
	FUZZ_CHECK(valid(&r));
	if (r.type == NL_REC_CALL) {
		check_call(&r, &c);
		FUZZ_CHECK(nl_raw_write(out, &c) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nl_call c;
	FILE *out = fuzz_devnull();

	check_wire(data, size, out);
	/* any other size is refused; a record-sized input is checked below */
	if (nl_decode(data, size, &c) == 0)
		FUZZ_CHECK(size == sizeof(struct nl_rec_call));
	for (size_t off = 0; off + sizeof(struct nl_rec_call) <= size; off += sizeof(struct nl_rec_call)) {
		struct nl_rec_call r;
		int ret = nl_decode(data + off, sizeof(r), &c);

		memcpy(&r, data + off, sizeof(r));
		FUZZ_CHECK(ret == (valid(&r) ? 0 : -EINVAL));
		if (ret)
			continue;
		if (r.type == NL_REC_RUN) {
			/* only the end of a counted run: no call fields */
			FUZZ_CHECK(c.fields == NL_F_RUN_END && c.flush_count > 0 && c.flush_token);
			continue;
		}
		check_call(&r, &c);
		FUZZ_CHECK(!c.run_token || nl_api_info[c.api].countable);
		FUZZ_CHECK(nl_raw_write(out, &c) == 0);
	}
	FUZZ_CHECK(nl_decode(NULL, 0, &c) == -EINVAL);
	return 0;
}
