// SPDX-License-Identifier: MIT
/* The API table (include/nanlog_apis.h) as user-space data. */
#include <string.h>

#include "record/call.h"

const struct nl_api_info nl_api_info[NL_API_COUNT] = {
#define NL_X_INFO(id, name_, alt_, lib_, kind_, flags_, nst, st, ev, ev2, dst, src, by, \
		  ka, fk, af, pr, fn, peer, cnt, out, osz)                              \
	[NL_API_##id] = { .name = name_, .alt = alt_, .lib = lib_, .kind = kind_,        \
			  .flags = flags_, .nstack = nst, .slot_stream = st,             \
			  .slot_event = ev, .slot_event2 = ev2, .slot_dst = dst,         \
			  .slot_src = src, .slot_bytes = by, .slot_kind = ka,            \
			  .fixed_kind = fk, .slot_flags = af, .slot_prio = pr,           \
			  .slot_fn = fn, .slot_peer = peer, .slot_count = cnt,           \
			  .slot_out = out, .out_size = osz,                              \
			  .nargs = NL_API_NARGS(st, ev, ev2, dst, src, by, ka, af, pr,  \
						fn, peer, cnt, out),                     \
			  .countable = NL_API_COUNTABLE(kind_, flags_, st, ev, ev2) },
	NL_API_TABLE(NL_X_INFO)
#undef NL_X_INFO
};

const char *nl_api_name(unsigned api)
{
	return api < NL_API_COUNT ? nl_api_info[api].name : NULL;
}

int nl_api_by_name(const char *name)
{
	for (int i = 0; i < NL_API_COUNT; i++)
		if (strcmp(nl_api_info[i].name, name) == 0)
			return i;
	return -1;
}

const char *nl_lib_name(int lib)
{
	switch (lib) {
	case NL_LIB_HIP:
		return "libamdhip64";
	case NL_LIB_RCCL:
		return "librccl";
	default:
		return "?";
	}
}
