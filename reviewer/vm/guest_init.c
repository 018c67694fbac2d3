// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * reviewer's /init for guests with no userspace of their own (vm/initramfs.py): an initramfs of
 * statically built test programs, booted where Debian has neither bash nor busybox (32-bit powerpc).
 *
 * It mounts /proc, /sys, /dev and /dev/shm, runs each job of /reviewer/jobs as kselftest's runner
 * would (from its directory, under a timeout, plainly or in a new user + time namespace with the
 * boot and monotonic clocks moved ahead), and writes each job's output and status into the kernel's
 * log (/dev/kmsg), which the console prints whole records at a time: a kernel message never lands
 * inside one of these lines, and no tty is written to (QEMU's mac99 Zilog serial ports end up with
 * their interrupt disabled, "nobody cared", when a program writes to them); then it powers off.
 *
 * /reviewer/jobs: one job a line, fields separated by tabs:
 *     <timeout seconds> <kill-after seconds> <plain|timens> <offset seconds> <directory> <argv0> [<arg>...]
 * The log gets lines (base64 of the output, 57 bytes a line, as the host reads them):
 *     reviewer-guest: job <n>
 *     @reviewer <n> out <base64>
 *     @reviewer <n> rc <exit status> <start ns> <end ns> <output bytes>
 *     @reviewer done
 * (the byte count lets the host tell output lost on the way, in a full log buffer, from none).
 * The exit status is the program's, 128+N for a signal N, and 124 (137 when SIGKILL was needed)
 * when the job was stopped at its timeout, as timeout(1) reports it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The tests (tests/unit/vm/test_initramfs.py) run it as an ordinary process with their own paths. */
#ifndef JOBS
#define JOBS "/reviewer/jobs"
#endif
#ifndef PORT
#define PORT "/dev/kmsg"
#endif
#define MAX_OUTPUT (1 << 20)  /* bytes of a job's output sent: the host keeps 8 MB of console in all */
#define MAX_ARGS 64

static int results = -1;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void put(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(results, buf, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += w;
		len -= w;
	}
}

/* One line for the console: through the log like the results (stdout until that is open). */
static void say(const char *fmt, const char *a, int n)
{
	char line[512];
	int len = snprintf(line, sizeof(line), fmt, a, n);

	if (len <= 0)
		return;
	if (len >= (int)sizeof(line))
		len = sizeof(line) - 1;
	if (results >= 0)
		put(line, len);
	else if (write(1, line, len) < 0)
		return;
}

static void put_output(int n, const unsigned char *data, size_t len)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char line[128];

	for (size_t at = 0; at < len; at += 57) {
		size_t chunk = len - at < 57 ? len - at : 57;
		int o = snprintf(line, sizeof(line), "@reviewer %d out ", n);

		for (size_t i = 0; i < chunk; i += 3) {
			unsigned v = data[at + i] << 16;

			if (i + 1 < chunk)
				v |= data[at + i + 1] << 8;
			if (i + 2 < chunk)
				v |= data[at + i + 2];
			line[o++] = b64[(v >> 18) & 63];
			line[o++] = b64[(v >> 12) & 63];
			line[o++] = i + 1 < chunk ? b64[(v >> 6) & 63] : '=';
			line[o++] = i + 2 < chunk ? b64[v & 63] : '=';
		}
		line[o++] = '\n';
		put(line, o);
	}
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	return ok;
}

/* In the job's child: a new user namespace (root mapped to root) and time namespace, clocks OFFSET ahead. */
static int enter_timens(long offset)
{
	char text[128];

	if (unshare(CLONE_NEWUSER | CLONE_NEWTIME) < 0)
		return -1;
	if (write_file("/proc/self/setgroups", "deny") < 0 || write_file("/proc/self/uid_map", "0 0 1") < 0 ||
	    write_file("/proc/self/gid_map", "0 0 1") < 0)
		return -1;
	snprintf(text, sizeof(text), "monotonic %ld 0\nboottime %ld 0\n", offset, offset);
	return write_file("/proc/self/timens_offsets", text);
}

static int status_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
}

/* The job's child: its own process group, output to OUT, from DIR; a time namespace takes effect in its child. */
static void child(int out, const char *env, long offset, const char *dir, char **argv)
{
	char *envp[] = { "PATH=/usr/bin:/bin", "HOME=/", "TERM=dumb", NULL };
	int status;
	pid_t pid;

	setpgid(0, 0);
	dup2(out, 1);
	dup2(out, 2);
	close(out);
	close(0);
	open("/dev/null", O_RDONLY);
	if (chdir(dir) < 0) {
		dprintf(2, "reviewer-init: cannot enter %s: %s\n", dir, strerror(errno));
		_exit(126);
	}
	if (strcmp(env, "timens") == 0) {
		if (enter_timens(offset) < 0) {
			dprintf(2, "reviewer-init: cannot make the time namespace: %s\n", strerror(errno));
			_exit(126);
		}
		pid = fork();
		if (pid < 0)
			_exit(126);
		if (pid > 0) {
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			_exit(status_code(status));
		}
	}
	execve(argv[0], argv, envp);
	dprintf(2, "reviewer-init: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static int split(char *line, char **fields, int max)
{
	int n = 0;

	for (char *f = strtok(line, "\t\n"); f != NULL && n < max; f = strtok(NULL, "\t\n"))
		fields[n++] = f;
	return n;
}

/* Signal the job's group by the clock: TERM at DEADLINE, KILL KILL_AFTER ns later. */
static void police(pid_t pid, long long deadline, long long kill_after, int *stopped)
{
	long long t = now_ns();

	if (*stopped == 0 && t >= deadline) {
		kill(-pid, SIGTERM);
		*stopped = 1;
	} else if (*stopped == 1 && t >= deadline + kill_after) {
		kill(-pid, SIGKILL);
		*stopped = 2;
	}
}

static void run_job(int n, char *line)
{
	char *f[MAX_ARGS + 6];
	int count = split(line, f, MAX_ARGS + 5);
	unsigned char *output = malloc(MAX_OUTPUT + 128);
	long long start, deadline, kill_after;
	int pipefd[2], status = 0, stopped = 0;
	size_t len = 0, lost = 0;
	char tail[128];
	pid_t pid, w;

	if (count < 6 || output == NULL || pipe(pipefd) < 0) {
		put("@reviewer bad job\n", 18);
		free(output);
		return;
	}
	f[count] = NULL;
	say("reviewer-guest: job %s%d\n", "", n);
	start = now_ns();
	deadline = start + atol(f[0]) * 1000000000LL;
	kill_after = atol(f[1]) * 1000000000LL;
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		child(pipefd[1], f[2], atol(f[3]), f[4], &f[5]);
	}
	close(pipefd[1]);
	/* Its output until the pipe closes, or a second after the KILL (what still holds it escaped the group). */
	for (;;) {
		struct pollfd p = { pipefd[0], POLLIN, 0 };
		ssize_t r;

		police(pid, deadline, kill_after, &stopped);
		if (stopped == 2 && now_ns() >= deadline + kill_after + 1000000000LL)
			break;
		if (poll(&p, 1, 100) <= 0)
			continue;
		r = read(pipefd[0], len < MAX_OUTPUT ? output + len : (unsigned char *)tail,
			 len < MAX_OUTPUT ? MAX_OUTPUT - len : sizeof(tail));
		if (r <= 0)
			break;
		if (len < MAX_OUTPUT)
			len += r;
		else
			lost += r;
	}
	if (lost)
		len += snprintf((char *)output + len, 128, "\n[reviewer-init: %zu more bytes of output were not kept]\n", lost);
	close(pipefd[0]);
	/* Then the job itself, still under its timeout. */
	for (;;) {
		struct timespec pause_20ms = { 0, 20000000 };

		w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		police(pid, deadline, kill_after, &stopped);
		nanosleep(&pause_20ms, NULL);
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)  /* orphans of earlier jobs are ours: reap them */
		;
	put_output(n, output, len);
	snprintf(tail, sizeof(tail), "@reviewer %d rc %d %lld %lld %zu\n", n,
		 stopped == 2 ? 137 : stopped ? 124 : status_code(status), start, now_ns(), len);
	put(tail, strlen(tail));
	free(output);
}

int main(void)
{
	static char text[1 << 20];
	int fd, n = 0;
	ssize_t got;

	if (getpid() == 1) {  /* the guest's init: its file systems (anywhere else: the ones it has) */
		mkdir("/proc", 0555);
		mkdir("/sys", 0555);
		mkdir("/dev", 0755);
		mkdir("/tmp", 01777);
		mount("proc", "/proc", "proc", 0, NULL);
		mount("sysfs", "/sys", "sysfs", 0, NULL);
		mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
		mkdir("/dev/shm", 01777);
		mount("tmpfs", "/dev/shm", "tmpfs", 0, NULL);
		/* /tmp is the initramfs's own (writable): the jobs' directories may be in it */
	}
	results = open(PORT, O_WRONLY | O_NOCTTY);
	if (results < 0)
		say("reviewer-init: cannot open %s\n", PORT, 0);
	say("reviewer-guest: %sstart\n", "", 0);
	fd = open(JOBS, O_RDONLY);
	got = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
	if (got < 0) {
		say("reviewer-init: cannot read %s\n", JOBS, 0);
		got = 0;
	}
	text[got] = '\0';
	for (char *line = text, *next; results >= 0 && *line; line = next) {
		next = strchr(line, '\n');
		if (next == NULL)
			next = line + strlen(line);
		else
			*next++ = '\0';
		if (*line)
			run_job(n++, line);
	}
	put("@reviewer done\n", 15);
	say("reviewer-guest: %sdone\n", "", 0);
	if (getpid() != 1)  /* never power off a machine it is not the init of */
		return 0;
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}
