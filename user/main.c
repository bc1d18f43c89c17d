// SPDX-License-Identifier: MIT
/*
 * nanlog-bpf: attach to running ROCm processes and audit their pipelines.
 * main() is the only place that turns -errno into an exit code.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <limits.h>

#include "base/util.h"
#include "app/app.h"
#include "record/call.h"
#include "attach/loader.h"
#include "attach/caps.h"
#include "attach/features.h"

#define NANLOG_VERSION NL_APP_VERSION

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	if (stop_signal) {
		/* second signal: do not wait for a slow detach; the kernel drops the probes */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	stop_signal = sig;
}

static struct nl_app app;

/* The last error said (level 0, not a warning): a failed run's JSON error line repeats it. */
static char last_error[4096];

/* level 0: errors and warnings (always); 1: -v; 2: -vv; 3: libbpf itself, -vvv */
static void diag(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diag(int level, const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	if (level > app.o.verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "nanlog-bpf: %s\n", line);
	if (level == 0 && strncmp(line, "warning:", 8) != 0)
		snprintf(last_error, sizeof(last_error), "%s", line);
}

/*
 * A run that failed after its output was opened: the output (JSON, not
 * --format table) ends with an "error" line saying why, as stderr did.
 */
static void end_with_error(struct nl_app *a, int err)
{
	nl_app_error(a, last_error[0] ? last_error : err ? strerror(-err) : "failed");
}

static void on_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	diag(level, "%s", msg);
}

static int on_record(void *ctx, const void *data, size_t size)
{
	return nl_app_record(ctx, data, size);
}

static void on_attached(void *ctx, const struct nl_attach_report *r)
{
	nl_app_attached(ctx, r);
}

/*
 * An output file: never through a symbolic link, never over an existing
 * regular file unless --force; an existing device or pipe is fine.
 */
static int open_file(const char *path, bool force, FILE **out)
{
	int fd, flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW;

	flags |= force ? O_TRUNC : O_EXCL;
	fd = open(path, flags, 0644);
	if (fd < 0 && errno == EEXIST) {
		struct stat st;

		if (lstat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
			fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		else
			errno = EEXIST;
	}
	if (fd < 0) {
		int err = -errno;

		if (err == -EEXIST)
			diag(0, "%s: exists (use --force to overwrite)", path);
		else if (err == -ELOOP)
			diag(0, "%s: is a symbolic link; refusing to write through it", path);
		else
			diag(0, "%s: %s", path, strerror(-err));
		return err;
	}
	*out = fdopen(fd, "w");
	if (!*out) {
		close(fd);
		return -errno;
	}
	return 0;
}

static int open_outputs(struct nl_app *a)
{
	const struct nl_opts *o = &a->o;
	int err;

	if (!o->out_path || strcmp(o->out_path, "-") == 0) {
		a->out = stdout;
	} else {
		err = open_file(o->out_path, o->force, &a->out);
		if (err)
			return err;
	}
	setvbuf(a->out, NULL, _IOLBF, 0);
	if (o->trace_path) {
		FILE *f;

		err = open_file(o->trace_path, o->force, &f);
		if (err)
			return err;
		a->trace = nl_trace_new(f);
		if (!a->trace) {
			fclose(f);
			return -ENOMEM;
		}
	}
	return 0;
}

static int check_environment(void)
{
	const char *btf = getenv("NANLOG_BTF_PATH"); /* tests: pretend the kernel lacks BTF */
	const char *upr = getenv("NANLOG_UPROBE_PMU"); /* tests: pretend it lacks uprobes */

	if (access(btf ? btf : "/sys/kernel/btf/vmlinux", R_OK) != 0) {
		diag(0, "kernel without BTF (%s missing): needs CONFIG_DEBUG_INFO_BTF",
		     btf ? btf : "/sys/kernel/btf/vmlinux");
		return -ENOTSUP;
	}
	if (access(upr ? upr : "/sys/bus/event_source/devices/uprobe/type", R_OK) != 0) {
		diag(0, "kernel without uprobes (no uprobe PMU): needs CONFIG_UPROBE_EVENTS");
		return -ENOTSUP;
	}
	if (!nl_caps_can_trace()) {
		diag(0, "not enough privilege: run as root, or with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE");
		return -EPERM;
	}
	return 0;
}

/* fork the command, held until the probes are in place */
static int start_command(char **cmd, int *go_fd, pid_t *pid)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	*pid = fork();
	if (*pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (*pid == 0) {
		char c;

		close(p[1]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (read(p[0], &c, 1) != 1)
			_exit(127); /* the tool gave up before attaching */
		execvp(cmd[0], cmd);
		fprintf(stderr, "nanlog-bpf: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*go_fd = p[1];
	return 0;
}

/* -- CMD: the runtime libraries looked for where --lib does not name them */
static const struct {
	const char *prefix;
	bool warn; /* not found: said, since the run sees nothing until the command loads it */
} cmd_libs[] = {
	{ "libamdhip64.so", true },
	{ "librccl.so", false },
};

static int attach_targets(struct nl_app *a)
{
	const struct nl_opts *o = &a->o;
	const char *paths[NL_MAX_LIBS + NL_ARRAY_SIZE(cmd_libs)];
	char found[NL_ARRAY_SIZE(cmd_libs)][PATH_MAX];
	int n = 0, err;

	for (int i = 0; i < o->nlibs; i++)
		paths[n++] = o->libs[i];

	if (o->ncmd) {
		for (size_t k = 0; k < NL_ARRAY_SIZE(cmd_libs); k++) {
			const char *prefix = cmd_libs[k].prefix;
			bool given = false;

			for (int i = 0; i < o->nlibs; i++)
				given |= strstr(o->libs[i], prefix) != NULL;
			if (given)
				continue;
			if (nl_find_library(prefix, found[k], sizeof(found[k])) == 0)
				paths[n++] = found[k];
			else if (cmd_libs[k].warn)
				diag(0, "warning: no %s* in LD_LIBRARY_PATH or the usual folders; "
					"attaching when the command loads one", prefix);
		}
		err = start_command(o->cmd, &a->go_fd, &a->child);
		if (err) {
			diag(0, "cannot start %s: %s", o->cmd[0], strerror(-err));
			return err;
		}
		err = nl_app_add_target(a, a->child, paths, n, false);
		if (err) {
			kill(a->child, SIGKILL);
			return err;
		}
		if (write(a->go_fd, "g", 1) != 1)
			return -errno;
		close(a->go_fd);
		a->go_fd = -1;
		return 0;
	}
	for (int i = 0; i < o->npids; i++) {
		err = nl_app_add_target(a, o->pids[i], paths, n, !o->wait_lib && n == 0);
		if (err)
			return err;
	}
	if (o->select) {
		struct nl_discover_opts d = { .proc_root = "/proc", .select = o->select,
					      .arg = o->select_arg, .self = getpid() };

		a->discover = nl_discover_new(&d);
		if (!a->discover)
			return -ENOMEM;
		nl_app_discover(a);
		if (a->ntargets_alive == 0 && !o->quiet)
			diag(0, "no matching process maps a HIP runtime yet: waiting for one");
	}
	return 0;
}

/*
 * How long one wait on the ring buffer lasts at most: the loop's grain, with
 * which a signal, --duration and the next tick are noticed (a record wakes it
 * at once).
 */
#define POLL_MS 50

static int run(struct nl_app *a)
{
	const struct nl_opts *o = &a->o;
	uint64_t start = nl_mono_ns(), next_scan, end;
	int err;

	next_scan = start + (uint64_t)(o->poll_interval_s * 1e9);
	end = o->duration_s > 0 ? start + (uint64_t)(o->duration_s * 1e9) : 0;
	while (!stop_signal) {
		uint64_t now;

		err = nl_loader_poll(a->l, POLL_MS);
		if (err < 0) {
			diag(0, "ring buffer: %s", strerror(-err));
			return err;
		}
		if (a->write_err)
			return a->write_err;
		now = nl_mono_ns();
		if (now >= next_scan) {
			next_scan = now + (uint64_t)(o->poll_interval_s * 1e9);
			nl_app_tick(a, now);
			if (a->write_err)
				return a->write_err;
			/* selection modes keep watching for new targets */
			if (a->ntargets_alive == 0 && !o->select) {
				diag(1, "every target has exited");
				break;
			}
		}
		if (end && now >= end) {
			diag(1, "duration reached");
			break;
		}
	}
	if (stop_signal)
		diag(1, "stopping on signal %d", (int)stop_signal);
	return 0;
}

/*
 * --check, once the run ended without a failure of the tool: a command that
 * failed comes first (its run is what broke, and the evidence about it is
 * then rarely complete), then the summary's evidence_valid (docs/usage.md).
 */
static int check_status(const struct nl_app *a)
{
	char why[256], stages[64];
	int st = a->child_status;

	if (!a->o.check)
		return NL_EXIT_OK;
	if (a->child > 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		if (WIFSIGNALED(st))
			diag(0, "check: %s was killed by signal %d", a->o.cmd[0], WTERMSIG(st));
		else
			diag(0, "check: %s exited with status %d", a->o.cmd[0], WEXITSTATUS(st));
		return NL_EXIT_CMD_FAILED;
	}
	if (!a->summary_done)
		return NL_EXIT_FAIL;
	if (a->evidence_valid) {
		diag(1, "check: evidence valid");
		return NL_EXIT_OK;
	}
	nl_mask_names(why, sizeof(why), a->invalid_mask, NL_NINVALID, nl_invalid_name);
	nl_mask_names(stages, sizeof(stages), a->missing_stages, NL_NSTAGES, nl_stage_name);
	if (!a->o.quiet)
		fprintf(stderr, "nanlog-bpf: check: evidence not valid: %s%s%s%s\n", why,
			a->missing_stages ? " (missing stages: " : "", stages,
			a->missing_stages ? ")" : "");
	return NL_EXIT_INVALID;
}

int main(int argc, char **argv)
{
	struct nl_loader_cb cb = { .ctx = &app, .record = on_record, .attached = on_attached,
				   .log = on_log };
	struct sigaction sa = { .sa_handler = on_signal };
	struct nl_loader_conf conf;
	char err_msg[512], caps[256];
	int err;

	err = nl_opts_parse(argc, argv, &app.o, err_msg, sizeof(err_msg));
	if (err < 0) {
		fprintf(stderr, "nanlog-bpf: %s\n", err_msg);
		return NL_EXIT_USAGE;
	}
	if (app.o.help) {
		fputs(nl_usage, stdout);
		return NL_EXIT_OK;
	}
	app.diag = diag;
	if (app.o.version) {
		struct nl_kernel_features k;

		nl_kernel_features_probe(&k);
		return nl_app_print_version(&app, &k) ? NL_EXIT_FAIL : NL_EXIT_OK;
	}

	app.go_fd = -1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (app.o.replay_path) {
		/* offline: no BPF, no privilege, no target */
		err = open_outputs(&app);
		if (err)
			return NL_EXIT_FAIL;
		err = nl_app_init(&app, nl_mono_ns());
		if (!err)
			err = nl_app_replay(&app);
		nl_app_finish(&app, nl_mono_ns(), err);
		if (err || app.replay_incomplete)
			end_with_error(&app, err);
		if (app.out != stdout && fclose(app.out) && !err)
			err = -EIO;
		if (err || app.write_err || app.replay_incomplete)
			return NL_EXIT_FAIL;
		return check_status(&app);
	}
	err = check_environment();
	if (err)
		return NL_EXIT_FAIL;
	err = open_outputs(&app);
	if (err)
		return NL_EXIT_FAIL;
	err = nl_app_init(&app, nl_mono_ns());
	if (err) {
		diag(0, "cannot start the audit engine: %s", strerror(-err));
		goto out;
	}
	{
		struct utsname u;

		uname(&u);
		err = nl_app_record_start(&app, argc, argv, u.release, NANLOG_VERSION);
		if (err)
			goto out;
	}
	err = nl_app_metrics_start(&app); /* a port below 1024 needs a capability */
	if (err)
		goto out;
	conf = (struct nl_loader_conf){ .retprobes = app.o.retprobes,
					.every_launch = app.o.every_launch,
					.no_placement = app.o.no_placement,
					.ringbuf_size = app.o.ringbuf_size };
	err = nl_loader_open(&app.l, &conf, &cb);
	if (err)
		goto out;
	err = attach_targets(&app);
	if (err)
		goto out;
	app.attach_done_ns = nl_mono_ns();
	err = nl_caps_drop(nl_loader_perf_links(app.l), caps, sizeof(caps));
	if (err)
		diag(0, "warning: cannot drop capabilities: %s", strerror(-err));
	else
		diag(1, "capabilities dropped: effective set empty; permitted kept for late "
			"libraries: %s", caps[0] ? caps : "none");
	err = run(&app);
out:
	nl_app_finish(&app, nl_mono_ns(), err);
	if (err)
		end_with_error(&app, err);
	nl_loader_close(app.l);
	nl_discover_free(app.discover);
	if (app.child > 0 && !app.child_reaped) {
		if (err)
			kill(app.child, SIGKILL);
		if (waitpid(app.child, &app.child_status, 0) == app.child)
			app.child_reaped = true;
	}
	if (app.out && app.out != stdout && fclose(app.out) && !err) {
		diag(0, "%s: %s", app.o.out_path, strerror(errno));
		err = -EIO;
	} else if (app.out == stdout && fflush(stdout) && !err) {
		diag(0, "stdout: %s", strerror(errno));
		err = -EIO;
	}
	if (!err && app.write_err)
		err = app.write_err;
	return err ? NL_EXIT_FAIL : check_status(&app);
}
