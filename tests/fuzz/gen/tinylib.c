/* SPDX-License-Identifier: MIT */
/* Seed of fuzz_elfsym: a small shared library exporting some probed names,
 * one with a default and a hidden version (name@@hip_5.0, name@hip_4.2). */
int hipMemcpyAsync(void);
int hipLaunchKernel(void);
int hipEventRecord(void);
int hipStreamWaitEvent(void);
int ncclAllToAll(void);
int hipStreamCreate_old(void);
int hipStreamCreate_new(void);

int hipMemcpyAsync(void) { return 0; }
int hipLaunchKernel(void) { return 1; }
int hipEventRecord(void) { return 2; }
int hipStreamWaitEvent(void) { return 3; }
int ncclAllToAll(void) { return 4; }
int hipStreamCreate_old(void) { return 5; }
int hipStreamCreate_new(void) { return 6; }
__asm__(".symver hipStreamCreate_old,hipStreamCreate@hip_4.2");
__asm__(".symver hipStreamCreate_new,hipStreamCreate@@hip_5.0");
