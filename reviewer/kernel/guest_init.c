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
 *     @reviewer <n> left <base64 of "pid <pid>: <command line>">     (up to SHOWN_LEFT of them)
 *     @reviewer <n> rc <exit status> <start ns> <end ns> <output bytes> <processes left>
 *     @reviewer done
 * (the byte count lets the host tell output lost on the way, in a full log buffer, from none).
 * The exit status is the program's, 128+N for a signal N, and 124 (137 when SIGKILL was needed)
 * when the job was stopped at its timeout, as timeout(1) reports it.
 *
 * When a job's program exits, what it left running (a daemon, a child in a session of its own) is
 * killed and counted, as the host's sandbox does: it is a child subreaper (PID 1 is one anyway), so
 * every orphan of the job becomes its child, and what descends from it then is the job's.
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
#include <dirent.h>
#include <sys/mount.h>
#include <sys/prctl.h>
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
#define SHOWN_LEFT 8  /* of the processes a job left, those named */
#define MAX_PROCS 65536  /* processes looked at, per round */
#define MAX_PID (1 << 22)  /* the kernel's PID_MAX_LIMIT on 64-bit machines */

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

/* DATA as records "@reviewer <n> <what> <base64>", 57 bytes a record (one record for "left" lines: they are shorter). */
static void put_base64(int n, const char *what, const unsigned char *data, size_t len, size_t per)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char line[512];

	for (size_t at = 0; at < len; at += per) {
		size_t chunk = len - at < per ? len - at : per;
		int o = snprintf(line, sizeof(line), "@reviewer %d %s ", n, what);

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

static void put_output(int n, const unsigned char *data, size_t len)
{
	put_base64(n, "out", data, len, 57);
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

/* PID's parent from /proc/PID/stat (after the command name, which may hold anything); -1 if gone or a zombie. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[1024], *close_paren, state;
	int fd, ppid;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	close_paren = strrchr(buf, ')');
	if (close_paren == NULL || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2 || state == 'Z' || state == 'X')
		return -1;
	return ppid;
}

/* "pid <pid>: <command line>" (120 bytes of it, its NULs as spaces) into OUT. */
static size_t describe(pid_t pid, char *out, size_t size)
{
	char path[64], cmd[121];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY);
	len = fd < 0 ? 0 : read(fd, cmd, sizeof(cmd) - 1);
	if (fd >= 0)
		close(fd);
	if (len < 0)
		len = 0;
	for (ssize_t i = 0; i < len; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	while (len > 0 && cmd[len - 1] == ' ')
		len--;
	cmd[len] = '\0';
	len = snprintf(out, size, "pid %d: %s", (int)pid, cmd);
	return len < 0 ? 0 : (size_t)len >= size ? size - 1 : (size_t)len;
}

/* The live processes descending from this one (the job's leftovers: its own process was reaped), into PIDS. */
static int descendants(pid_t *pids, pid_t *parents, int max)
{
	static unsigned char ours[(MAX_PID + 7) / 8];
	DIR *proc = opendir("/proc");
	struct dirent *d;
	int all = 0, found = 0;
	pid_t me = getpid();

	if (proc == NULL)
		return 0;
	while ((d = readdir(proc)) != NULL && all < max) {
		pid_t pid = atoi(d->d_name), ppid;

		if (pid > 0 && pid < MAX_PID && pid != me && (ppid = parent_of(pid)) > 0 && ppid < MAX_PID) {
			pids[all] = pid;
			parents[all++] = ppid;
		}
	}
	closedir(proc);
	memset(ours, 0, sizeof(ours));
	ours[me / 8] |= 1 << (me % 8);
	/* A child of ours, or of one found already (the table has no order): again while one is added, a bounded number
	 * of times (what a deeper tree still hides is found in the next round, reparented to us when its parent dies). */
	for (int pass = 0, more = 1; more && pass < 64; pass++) {
		more = 0;
		for (int i = found; i < all; i++) {
			if (ours[parents[i] / 8] & (1 << (parents[i] % 8))) {
				pid_t p = pids[i], q = parents[i];

				ours[p / 8] |= 1 << (p % 8);
				pids[i] = pids[found];
				parents[i] = parents[found];
				pids[found] = p;
				parents[found++] = q;
				more = 1;
			}
		}
	}
	return found;
}

/* Kill what job N left running, a few rounds (a fork bomb keeps forking); name the first SHOWN_LEFT; how many. */
static int kill_left(int n)
{
	static pid_t pids[MAX_PROCS], parents[MAX_PROCS], seen[MAX_PROCS];
	int count = 0;

	for (int round = 0; round < 20; round++) {
		struct timespec pause_10ms = { 0, 10000000 };
		int found = descendants(pids, parents, MAX_PROCS);

		if (found == 0)
			break;
		for (int i = 0; i < found; i++) {
			int known = 0;
			char text[256];

			for (int j = 0; j < count && !known; j++)
				known = seen[j] == pids[i];
			if (!known && count < MAX_PROCS) {
				if (count < SHOWN_LEFT)
					put_base64(n, "left", (const unsigned char *)text, describe(pids[i], text, sizeof(text)), sizeof(text));
				seen[count++] = pids[i];
			}
			kill(pids[i], SIGKILL);
		}
		nanosleep(&pause_10ms, NULL);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	return count;
}

/* Whether the job's process PID has ended (its STATUS then set). */
static int ended(pid_t pid, int *status)
{
	pid_t w = waitpid(pid, status, WNOHANG);

	return w == pid || (w < 0 && errno != EINTR);
}

static void run_job(int n, char *line)
{
	char *f[MAX_ARGS + 6];
	int count = split(line, f, MAX_ARGS + 5);
	unsigned char *output = malloc(MAX_OUTPUT + 128);
	long long start, end = 0, deadline, kill_after;
	int pipefd[2], status = 0, stopped = 0, left = 0;
	size_t len = 0, lost = 0;
	char tail[160];
	pid_t pid;

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
	/* Its output until the pipe closes: when the job's process ends, what it left (and holds the pipe) is killed;
	 * or a second after the KILL at its timeout. */
	for (;;) {
		struct pollfd p = { pipefd[0], POLLIN, 0 };
		ssize_t r;

		if (end == 0)
			police(pid, deadline, kill_after, &stopped);
		if (end == 0 && ended(pid, &status)) {
			end = now_ns();
			left = kill_left(n);
		}
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
	/* Then the job itself, still under its timeout, and what it left. */
	while (end == 0) {
		struct timespec pause_20ms = { 0, 20000000 };

		if (ended(pid, &status)) {
			end = now_ns();
			left = kill_left(n);
			break;
		}
		police(pid, deadline, kill_after, &stopped);
		nanosleep(&pause_20ms, NULL);
	}
	put_output(n, output, len);
	snprintf(tail, sizeof(tail), "@reviewer %d rc %d %lld %lld %zu %d\n", n,
		 stopped == 2 ? 137 : stopped ? 124 : status_code(status), start, end, len, left);
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
	prctl(PR_SET_CHILD_SUBREAPER, 1);  /* what a job leaves becomes ours (PID 1 is a reaper anyway) */
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
