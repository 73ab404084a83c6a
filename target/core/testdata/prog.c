/* Test program for target/core: starts three threads that record their
 * kernel thread id, pthread_self(), and the addresses and values of
 * thread-local variables in an output file, then stops in stopme() with
 * every thread alive so that gdb can dump a core.
 *
 * usage: prog OUTFILE /path/to/libdyn.so
 * With PROG_ABORT=1 in the environment it aborts instead of calling
 * stopme(), for a core written by the kernel. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libtls.h"

#define NTHREADS 3

__thread long exe_tls;

static int out_fd;
static long *(*dyn_tls_addr)(void);
static pthread_barrier_t ready;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int release;

static void emit(const char *buf, int n) {
	if (write(out_fd, buf, n) != n)
		exit(3);
}

/* report writes one "thread" line; idx 2 never touches libdyn's TLS. */
static void report(int idx) {
	char buf[512];
	long *lt = lib_tls_addr();
	*lt = 1000 + idx;
	exe_tls = 3000 + idx;
	int n = snprintf(buf, sizeof buf,
	                 "thread %d tid=%ld self=%#lx lib_tls=%#lx lib_val=%ld exe_tls=%#lx exe_val=%ld",
	                 idx, (long)syscall(SYS_gettid), (unsigned long)pthread_self(),
	                 (unsigned long)lt, *lt, (unsigned long)&exe_tls, exe_tls);
	if (idx != 2) {
		long *dt = dyn_tls_addr();
		*dt = 2000 + idx;
		n += snprintf(buf + n, sizeof buf - n, " dyn_tls=%#lx dyn_val=%ld", (unsigned long)dt, *dt);
	} else {
		n += snprintf(buf + n, sizeof buf - n, " dyn_tls=0 dyn_val=0");
	}
	n += snprintf(buf + n, sizeof buf - n, "\n");
	emit(buf, n);
}

static void *worker(void *arg) {
	report((int)(long)arg);
	pthread_barrier_wait(&ready);
	pthread_mutex_lock(&mu);
	while (!release)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

__attribute__((noinline)) void stopme(void) { __asm__ volatile("" ::: "memory"); }

int main(int argc, char **argv) {
	if (argc != 3)
		return 2;
	mallopt(M_ARENA_MAX, 1); /* keep the core small: one malloc arena */
	out_fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out_fd < 0)
		return 1;
	void *h = dlopen(argv[2], RTLD_NOW);
	if (!h)
		return 4;
	dyn_tls_addr = (long *(*)(void))dlsym(h, "dyn_tls_addr");
	if (!dyn_tls_addr)
		return 5;

	char buf[512];
	int *local = lib_local_addr();
	*local = 0xC0FFEE;
	lib_fill();
	tls_struct_t s;
	memset(&s, 0, sizeof s);
	s.f2 = 31;
	int f2bit = -1;
	for (int i = 0; i < (int)sizeof s * 8 && f2bit < 0; i++)
		if (((unsigned char *)&s)[i / 8] & (1 << (i % 8)))
			f2bit = i;
	int n = snprintf(buf, sizeof buf,
	                 "local addr=%#lx val=%d\n"
	                 "layout size=%zu b=%zu in=%zu in.y=%zu u2=%zu s2=%zu f2bit=%d\n",
	                 (unsigned long)local, *local, sizeof(tls_struct_t), offsetof(tls_struct_t, b),
	                 offsetof(tls_struct_t, in), offsetof(tls_struct_t, in.y),
	                 offsetof(tls_struct_t, u2), offsetof(tls_struct_t, s2), f2bit);
	emit(buf, n);

	pthread_barrier_init(&ready, NULL, NTHREADS + 1);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_t th[NTHREADS];
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], &attr, worker, (void *)i) != 0)
			return 6;
	report(NTHREADS); /* the main thread is thread 3 */
	pthread_barrier_wait(&ready);
	close(out_fd);

	/* PROG_ABORT=1: let the kernel dump the core instead of gdb. */
	if (getenv("PROG_ABORT"))
		abort();
	stopme();

	pthread_mutex_lock(&mu);
	release = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	return 0;
}
