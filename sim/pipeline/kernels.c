// SPDX-License-Identifier: MIT
/*
 * Batch content and the kernels that move and check it. A batch's words are
 * a hash of (seed, batch, tensor, index); each stage transforms them, so a
 * stage that reads a buffer before its producer wrote it passes on another
 * batch's (or uninitialized) words, and forward's check counts them.
 *
 *   host staging --H2D (M)--> in --input_dist (D)--> sp --all-to-all (N)--> recv
 *   --dist_init (D)--> fin --lookup (C, checks f2(f1(pattern)))
 *
 * Kernels run on simhip's stream workers; the arguments are { &batch->self }
 * and stay valid for the whole run, since simhip cannot copy what the
 * argument pointers point to.
 */
#include <string.h>

#include "pl.h"

const size_t pl_tensor_words[PL_NT] = { 128, 1024, 1024 };

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

uint32_t pl_pattern(uint64_t seed, long batch, int t, size_t j)
{
	uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)batch << 24) ^
			   ((uint64_t)t << 56) ^ j);

	return (uint32_t)h | 1; /* never 0: zeroed memory never passes */
}

static uint32_t f1(uint32_t x) /* input_dist */
{
	return x * 0x01000193u ^ 0x5bd1e995u;
}

static uint32_t f2(uint32_t x) /* dist_init */
{
	return ((x << 7) | (x >> 25)) + 0x632be5abu;
}

static uint32_t emb_word(const struct pl_batch *b, size_t j)
{
	return pl_pattern(b->seed ^ 0xe3b0c442ull, b->id, 0, j);
}

size_t pl_batch_bytes(void)
{
	size_t n = 0;

	for (int t = 0; t < PL_NT; t++)
		n += pl_tensor_words[t] * sizeof(uint32_t);
	return n;
}

size_t pl_slot_bytes(void)
{
	return 4 * pl_batch_bytes() +
	       (2 * PL_NSPLIT + 16 + 2 * PL_NEMB + 16) * sizeof(uint32_t);
}

void pl_slot_carve(struct pl_slot *s, uint8_t *base)
{
	uint32_t *p = (uint32_t *)base;
	uint32_t **sets[4] = { s->in, s->sp, s->recv, s->fin };

	for (int k = 0; k < 4; k++)
		for (int t = 0; t < PL_NT; t++) {
			sets[k][t] = p;
			p += pl_tensor_words[t];
		}
	s->splits = p, p += PL_NSPLIT;
	s->splits_recv = p, p += PL_NSPLIT;
	s->meta = p, p += 16;
	s->emb = p, p += PL_NEMB;
	s->emb_out = p, p += PL_NEMB;
	s->loss = p;
}

void pl_batch_init(struct pl_batch *b, long id, uint64_t seed, struct pl_slot *slot)
{
	memset(b, 0, sizeof(*b));
	b->id = id;
	b->seed = seed;
	b->slot = slot;
	b->self = b;
	b->argv[0] = &b->self;
	for (int i = 0; i < 16; i++)
		b->h_meta[i] = (uint32_t)(id * 16 + i);
	atomic_init(&b->checked, 0);
	atomic_init(&b->mismatches, 0);
}

void pl_fill_host(const struct pl_batch *b, uint32_t *host)
{
	for (int t = 0; t < PL_NT; t++)
		for (size_t j = 0; j < pl_tensor_words[t]; j++)
			*host++ = pl_pattern(b->seed, b->id, t, j);
}

long pl_check_splits(const struct pl_batch *b)
{
	long bad = 0;

	for (size_t j = 0; j < PL_NSPLIT; j++)
		bad += b->h_splits[j] != f1(pl_pattern(b->seed, b->id, 0, j));
	return bad;
}

static struct pl_batch *arg_batch(void **args)
{
	return *(struct pl_batch **)args[0];
}

static void input_dist(void **args)
{
	struct pl_batch *b = arg_batch(args);
	struct pl_slot *s = b->slot;

	for (int t = 0; t < PL_NT; t++)
		for (size_t j = 0; j < pl_tensor_words[t]; j++)
			s->sp[t][j] = f1(s->in[t][j]);
	for (size_t j = 0; j < PL_NSPLIT; j++)
		s->splits[j] = f1(s->in[0][j]);
}

static void dist_init(void **args)
{
	struct pl_batch *b = arg_batch(args);
	struct pl_slot *s = b->slot;

	for (int t = 0; t < PL_NT; t++)
		for (size_t j = 0; j < pl_tensor_words[t]; j++)
			s->fin[t][j] = f2(s->recv[t][j]);
}

/* Forward's embedding lookup: the content check of the sparse path. */
static void lookup(void **args)
{
	struct pl_batch *b = arg_batch(args);
	struct pl_slot *s = b->slot;
	long bad = 0;

	for (int t = 0; t < PL_NT; t++)
		for (size_t j = 0; j < pl_tensor_words[t]; j++)
			bad += s->fin[t][j] != f2(f1(pl_pattern(b->seed, b->id, t, j)));
	for (size_t j = 0; j < PL_NEMB; j++)
		s->emb[j] = emb_word(b, j);
	atomic_fetch_add(&b->mismatches, bad);
	atomic_store(&b->checked, 1);
}

/* --pattern simple: forward reads the copy directly. */
static void simple_lookup(void **args)
{
	struct pl_batch *b = arg_batch(args);
	struct pl_slot *s = b->slot;
	long bad = 0;

	for (int t = 0; t < PL_NT; t++)
		for (size_t j = 0; j < pl_tensor_words[t]; j++)
			bad += s->in[t][j] != pl_pattern(b->seed, b->id, t, j);
	atomic_fetch_add(&b->mismatches, bad);
	atomic_store(&b->checked, 1);
}

/* Dense forward reads the output all-to-all: checks the C->N->C edges. */
static void gemm_fwd(void **args)
{
	struct pl_batch *b = arg_batch(args);
	long bad = 0;

	for (size_t j = 0; j < PL_NEMB; j++)
		bad += b->slot->emb_out[j] != emb_word(b, j);
	atomic_fetch_add(&b->mismatches, bad);
}

#define KERNEL(var, kname, kfn, dur_ns) \
	simhip_kernel_t var = { SIMHIP_KERNEL_MAGIC, kname, kfn, dur_ns }

KERNEL(k_input_dist, "bucketize_permute_input_dist", input_dist, 60000);
KERNEL(k_dist_init, "kjt_dist_init", dist_init, 40000);
KERNEL(k_lookup, "embedding_bag_lookup", lookup, 80000);
KERNEL(k_simple_lookup, "embedding_lookup", simple_lookup, 80000);
KERNEL(k_gemm_fwd, "Cijk_Ailk_Bljk_SB_MT64x64x16", gemm_fwd, 120000);
KERNEL(k_gemm_plain, "Cijk_Ailk_Bljk_SB_MT32x32x16", NULL, 120000);
KERNEL(k_triton_fwd, "triton_poi_fused_relu_0", NULL, 40000);
KERNEL(k_bwd_emb, "embedding_bag_backward", NULL, 100000);
KERNEL(k_gemm_bwd, "Cijk_Alik_Bljk_SB_MT64x64x16", NULL, 150000);
KERNEL(k_bwd_elem, "threshold_backward", NULL, 50000);
KERNEL(k_optimizer, "fused_adam_step", NULL, 60000);
KERNEL(k_mlp_fwd, "Cijk_Ailk_Bljk_SB_MT16x16x16", NULL, 5000);
KERNEL(k_mlp_bwd, "Cijk_Alik_Bljk_SB_MT16x16x16", NULL, 5000);
