/* SPDX-License-Identifier: MIT */
/*
 * simhip's binary interface against the real ROCm library:
 *  - every symbol simhip exports exists in the real libamdhip64.so.5 with the
 *    same symbol version (both files' .dynsym/.gnu.version/.gnu.version_d are
 *    read directly), and the entry points the tracer needs are there;
 *  - this very program, built against the real headers, runs on either
 *    library chosen only by LD_LIBRARY_PATH (a child process per library);
 *  - a process that exits with work still queued exits promptly;
 *  - every probed entry point begins with `push %rbp`, in simhip as in the
 *    real library: the kernel emulates that instruction when a uprobe hits,
 *    where most others are single-stepped out of line, a second trap that
 *    costs far more on a VM. A simulation with other prologues would make
 *    tracing look dearer than it is on ROCm (docs/performance.md).
 *
 * The real library is looked for in the usual library folders, or taken from
 * $SIMHIP_REAL_LIB; without it the comparisons are skipped.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"
#include "nanlog_apis.h"
#include "simhip.h"

/* ---- reading exported symbols with their versions ---------------------- */

struct syms {
	char **name; /* "symbol@version" */
	size_t n;
	char soname[128];
};

static const Elf64_Shdr *section(const unsigned char *img, size_t len, uint32_t type)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);

	if (eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) > len)
		return NULL;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == type)
			return &sh[i];
	return NULL;
}

static const char *verdef_name(const unsigned char *img, const Elf64_Shdr *vd_sh,
			       const char *vstr, unsigned ndx)
{
	const unsigned char *p = img + vd_sh->sh_offset;

	for (unsigned i = 0; i < vd_sh->sh_info; i++) {
		const Elf64_Verdef *vd = (const Elf64_Verdef *)p;

		if (vd->vd_ndx == ndx) {
			const Elf64_Verdaux *aux = (const Elf64_Verdaux *)(p + vd->vd_aux);

			return vstr + aux->vda_name;
		}
		p += vd->vd_next;
	}
	return "";
}

/* The whole file, read-only; NULL when it cannot be read. */
static const unsigned char *map_file(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *img;

	if (fd < 0 || fstat(fd, st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	img = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	return img == MAP_FAILED ? NULL : img;
}

static int load_syms(const char *path, struct syms *out)
{
	const Elf64_Shdr *ds, *vs, *vd, *dyn, *shdrs;
	const Elf64_Ehdr *eh;
	const unsigned char *img;
	const char *str;
	struct stat st;

	memset(out, 0, sizeof(*out));
	img = map_file(path, &st);
	if (!img)
		return -1;
	eh = (const Elf64_Ehdr *)img;
	shdrs = (const Elf64_Shdr *)(img + eh->e_shoff);
	ds = section(img, (size_t)st.st_size, SHT_DYNSYM);
	vs = section(img, (size_t)st.st_size, SHT_GNU_versym);
	vd = section(img, (size_t)st.st_size, SHT_GNU_verdef);
	dyn = section(img, (size_t)st.st_size, SHT_DYNAMIC);
	if (!ds || !dyn) {
		munmap((void *)img, (size_t)st.st_size);
		return -1;
	}
	str = (const char *)img + shdrs[ds->sh_link].sh_offset;
	for (const Elf64_Dyn *d = (const Elf64_Dyn *)(img + dyn->sh_offset);
	     d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_SONAME)
			snprintf(out->soname, sizeof(out->soname), "%s",
				 (const char *)img + shdrs[dyn->sh_link].sh_offset + d->d_un.d_val);
	size_t n = ds->sh_size / sizeof(Elf64_Sym);
	const Elf64_Sym *sym = (const Elf64_Sym *)(img + ds->sh_offset);
	const Elf64_Half *ver = vs ? (const Elf64_Half *)(img + vs->sh_offset) : NULL;

	out->name = calloc(n, sizeof(*out->name));
	for (size_t i = 1; out->name && i < n; i++) {
		const char *v = "";

		if (sym[i].st_shndx == SHN_UNDEF || sym[i].st_shndx == SHN_ABS)
			continue;
		if (ver && vd && (ver[i] & 0x7fff) > 1)
			v = verdef_name(img, vd, (const char *)img + shdrs[vd->sh_link].sh_offset,
					ver[i] & 0x7fff);
		if (asprintf(&out->name[out->n], "%s@%s", str + sym[i].st_name, v) > 0)
			out->n++;
	}
	munmap((void *)img, (size_t)st.st_size);
	return out->name ? 0 : -1;
}

/*
 * The first byte of the code of the exported function `name` (any version)
 * in the ELF file `path`: -1 when the file has no such symbol, -2 when the
 * file cannot be read.
 */
static int first_code_byte(const char *path, const char *name)
{
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	const Elf64_Shdr *ds, *shdrs;
	const unsigned char *img;
	struct stat st;
	int byte = -1;

	img = map_file(path, &st);
	if (!img)
		return -2;
	eh = (const Elf64_Ehdr *)img;
	ph = (const Elf64_Phdr *)(img + eh->e_phoff);
	shdrs = (const Elf64_Shdr *)(img + eh->e_shoff);
	ds = section(img, (size_t)st.st_size, SHT_DYNSYM);
	if (ds) {
		const Elf64_Sym *sym = (const Elf64_Sym *)(img + ds->sh_offset);
		const char *str = (const char *)img + shdrs[ds->sh_link].sh_offset;
		size_t n = ds->sh_size / sizeof(Elf64_Sym);

		for (size_t i = 1; i < n && byte < 0; i++) {
			if (sym[i].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[i].st_info) != STT_FUNC ||
			    strcmp(str + sym[i].st_name, name))
				continue;
			for (int k = 0; k < eh->e_phnum; k++) {
				const Elf64_Phdr *p = &ph[k];

				if (p->p_type == PT_LOAD && sym[i].st_value >= p->p_vaddr &&
				    sym[i].st_value < p->p_vaddr + p->p_filesz &&
				    sym[i].st_value - p->p_vaddr + p->p_offset < (Elf64_Off)st.st_size)
					byte = img[sym[i].st_value - p->p_vaddr + p->p_offset];
			}
		}
	}
	munmap((void *)img, (size_t)st.st_size);
	return byte;
}

static void free_syms(struct syms *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->name[i]);
	free(s->name);
}

static bool has_sym(const struct syms *s, const char *name_at_ver)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name_at_ver))
			return true;
	return false;
}

static const char *sim_path(void)
{
	static Dl_info info;

	return dladdr((void *)hipStreamCreate, &info) ? info.dli_fname : NULL;
}

static const char *real_path(void)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
					    "/usr/lib", "/opt/rocm/lib" };
	static char buf[512];
	const char *env = getenv("SIMHIP_REAL_LIB");

	if (env && *env)
		return access(env, R_OK) ? NULL : env;
	for (size_t i = 0; i < NL_ARRAY_SIZE(dirs); i++) {
		snprintf(buf, sizeof(buf), "%s/libamdhip64.so.5", dirs[i]);
		if (!access(buf, R_OK))
			return buf;
	}
	return NULL;
}

/* ---- tests ------------------------------------------------------------- */

static void test_exports_match_real_versions(void **state)
{
	static const char *const needed[] = {
		"hipInit@hip_4.2", "hipMemcpyAsync@hip_4.2", "hipMemcpyAsync_spt@hip_5.2",
		"hipLaunchKernel@hip_4.2", "hipLaunchKernel_spt@hip_5.2",
		"hipLaunchCooperativeKernel_spt@hip_5.2", "hipExtLaunchKernel@hip_4.2",
		"hipModuleLaunchKernel@hip_4.2",
		"_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_"
		"P11ihipEvent_tS6_j@hip_4.2",
		"hipEventRecord@hip_4.2", "hipStreamWaitEvent_spt@hip_5.2",
		"hipStreamIsCapturing@hip_4.3", "hipStreamQuery_spt@hip_5.2",
		"hipDeviceSynchronize@hip_4.2", "hipMemcpyWithStream@hip_4.2",
		"hipStreamBeginCapture@hip_4.3", "hipStreamEndCapture@hip_4.3",
		"hipGraphInstantiate@hip_4.3", "hipGraphInstantiateWithFlags@hip_4.5",
		"hipGraphLaunch@hip_4.3", "hipGraphExecDestroy@hip_4.3", "hipGraphDestroy@hip_4.3",
	};
	struct syms sim, real;
	const char *rp = real_path();

	(void)state;
	assert_non_null(sim_path());
	assert_int_equal(load_syms(sim_path(), &sim), 0);
	assert_string_equal(sim.soname, "libamdhip64.so.5");
	for (size_t i = 0; i < NL_ARRAY_SIZE(needed); i++)
		if (!has_sym(&sim, needed[i]))
			fail_msg("simhip lacks %s", needed[i]);
	assert_false(has_sym(&sim, "hipEventRecord_spt@hip_5.2")); /* not in 5.2.3 */
	assert_false(has_sym(&sim, "hipGraphLaunch_spt@hip_5.2"));
	if (!rp) {
		free_syms(&sim);
		skip();
	}
	assert_int_equal(load_syms(rp, &real), 0);
	assert_string_equal(real.soname, sim.soname);
	for (size_t i = 0; i < sim.n; i++)
		if (!has_sym(&real, sim.name[i]))
			fail_msg("%s is not exported by %s", sim.name[i], rp);
	print_message("simhip exports %zu symbols, all in %s (%zu) with the same version\n",
		      sim.n, rp, real.n);
	free_syms(&sim);
	free_syms(&real);
}

/* the RCCL simulation is built beside simhip */
static const char *rccl_path(void)
{
	static char buf[512];
	const char *sim = sim_path(), *slash = sim ? strrchr(sim, '/') : NULL;

	if (!slash)
		return NULL;
	snprintf(buf, sizeof(buf), "%.*s/librccl.so.1", (int)(slash - sim), sim);
	return access(buf, R_OK) ? NULL : buf;
}

#define PUSH_RBP 0x55

static void test_probed_entries_start_with_push_rbp(void **state)
{
	static const struct {
		const char *name;
		int lib;
	} apis[] = {
#define NL_X_NAME(id, name, alt, lib, ...) { name, lib },
		NL_API_TABLE(NL_X_NAME)
#undef NL_X_NAME
	};
	const char *rp = real_path();
	int sim_n = 0, real_n = 0;

	(void)state;
	assert_non_null(sim_path());
	assert_non_null(rccl_path());
	for (size_t i = 0; i < NL_ARRAY_SIZE(apis); i++) {
		const char *lib = apis[i].lib == NL_LIB_HIP ? sim_path() : rccl_path();
		int b = first_code_byte(lib, apis[i].name);

		if (b == -1)
			continue; /* optional, absent from 5.2.3 as from simhip */
		if (b != PUSH_RBP)
			fail_msg("%s in %s begins with 0x%02x, not push %%rbp", apis[i].name, lib, b);
		sim_n++;
		if (!rp || apis[i].lib != NL_LIB_HIP)
			continue;
		b = first_code_byte(rp, apis[i].name);
		if (b == -1)
			continue;
		if (b != PUSH_RBP)
			fail_msg("%s in %s begins with 0x%02x, not push %%rbp", apis[i].name, rp, b);
		real_n++;
	}
	assert_true(sim_n >= 40);
	print_message("%d probed entry points of simhip and librccl and %d of %s begin with push %%rbp\n",
		      sim_n, real_n, rp ? rp : "(no real library)");
	if (!rp)
		skip();
}

/* Child mode: report which library answered and what. */
static int probe(void)
{
	Dl_info info;
	int n = -1;
	hipError_t rc = hipGetDeviceCount(&n);
	hipStream_t s;
	hipError_t rs = hipStreamCreate(&s);

	if (rs == hipSuccess)
		rs = hipStreamDestroy(s);
	printf("lib=%s rc=%d n=%d stream=%d\n",
	       dladdr((void *)hipGetDeviceCount, &info) ? info.dli_fname : "?", rc, n, rs);
	return 0;
}

/* Run this program again with `arg`, optional LD_LIBRARY_PATH; capture stdout. */
static int run_self(const char *arg, const char *ldpath, char *out, size_t outlen, int timeout_s)
{
	int fds[2], status = -1;
	pid_t pid;
	size_t got = 0;
	ssize_t r;
	double waited = 0;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		if (ldpath)
			setenv("LD_LIBRARY_PATH", ldpath, 1);
		setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
		execl("/proc/self/exe", "test_simabi", arg, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	while (got + 1 < outlen && (r = read(fds[0], out + got, outlen - got - 1)) > 0)
		got += (size_t)r;
	out[got] = 0;
	close(fds[0]);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (waited > timeout_s) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -2;
		}
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		waited += 0.02;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_same_program_runs_on_both_libraries(void **state)
{
	char out[1024], dir[512], expect[600];
	const char *rp = real_path();

	(void)state;
	assert_int_equal(run_self("--probe", NULL, out, sizeof(out), 20), 0);
	snprintf(expect, sizeof(expect), "lib=%s rc=0 n=1 stream=0\n", sim_path());
	assert_string_equal(out, expect);
	if (!rp)
		skip();
	snprintf(dir, sizeof(dir), "%s", rp);
	*strrchr(dir, '/') = 0;
	assert_int_equal(run_self("--probe", dir, out, sizeof(out), 60), 0);
	/* the real runtime without a GPU: no device */
	snprintf(expect, sizeof(expect), "lib=%s/libamdhip64.so.5 rc=%d n=0", dir,
		 hipErrorNoDevice);
	if (strncmp(out, expect, strlen(expect)))
		fail_msg("real library run said: %s", out);
	print_message("on the real library: %s", out);
}

/* Child mode: queue long work, then exit without waiting for it. */
static int exit_with_pending_work(void)
{
	static simhip_kernel_t k_long = { SIMHIP_KERNEL_MAGIC, "long", NULL, 30000000000ull };
	const dim3 one = { 1, 1, 1 };
	hipStream_t s;

	if (hipStreamCreateWithFlags(&s, hipStreamNonBlocking) != hipSuccess ||
	    hipLaunchKernel(&k_long, one, one, NULL, 0, s) != hipSuccess ||
	    hipLaunchKernel(&k_long, one, one, NULL, 0, NULL) != hipSuccess)
		return 3;
	printf("queued\n");
	fflush(stdout);
	exit(0);
}

static void test_exit_with_pending_work_is_prompt(void **state)
{
	char out[64];
	struct timespec t0, t1;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(run_self("--exit-pending", NULL, out, sizeof(out), 10), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_string_equal(out, "queued\n");
	assert_true(t1.tv_sec - t0.tv_sec < 10);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exports_match_real_versions),
		cmocka_unit_test(test_probed_entries_start_with_push_rbp),
		cmocka_unit_test(test_same_program_runs_on_both_libraries),
		cmocka_unit_test(test_exit_with_pending_work_is_prompt),
	};

	if (argc > 1 && !strcmp(argv[1], "--probe"))
		return probe();
	if (argc > 1 && !strcmp(argv[1], "--exit-pending"))
		return exit_with_pending_work();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
