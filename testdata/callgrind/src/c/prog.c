/*
 * prog is the C program behind hotbudget's callgrind test files: recursion
 * (fib), mutual recursion (is_even/is_odd), a callback called from libc
 * (qsort's cmp), inlined code from a header (mix, in inline.h), and, on
 * request, threads or several dumps (parts).
 *
 *   prog          one run of every phase
 *   prog parts    the same, dumping callgrind's counters after each phase
 *   prog threads  the phases on two threads besides main
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "inline.h"

static int dump; /* dump counters after each phase (prog parts) */

static void phase_done(const char *name) {
	if (dump) {
		CALLGRIND_DUMP_STATS_AT(name);
	}
}

__attribute__((noinline)) long fib(int n) {
	if (n < 2) {
		return n;
	}
	return fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) int is_odd(unsigned n);

__attribute__((noinline)) int is_even(unsigned n) {
	return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noinline)) int is_odd(unsigned n) {
	return n == 0 ? 0 : is_even(n - 1);
}

static int cmp(const void *a, const void *b) {
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) unsigned checksum(const unsigned *v, int n) {
	unsigned h = 2166136261u;
	for (int i = 0; i < n; i++) {
		h = mix(h, v[i]);
	}
	return h;
}

__attribute__((noinline)) void fill(unsigned *v, int n, unsigned seed) {
	for (int i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		v[i] = mix(seed, (unsigned)i);
	}
}

__attribute__((noinline)) unsigned sort_phase(int n) {
	unsigned *v = malloc(n * sizeof *v);
	fill(v, n, 42);
	qsort(v, n, sizeof *v, cmp);
	unsigned h = checksum(v, n);
	free(v);
	return h;
}

__attribute__((noinline)) long recursion_phase(void) {
	long s = fib(15);
	for (unsigned i = 0; i < 40; i++) {
		s += is_even(i);
	}
	return s;
}

static void *worker(void *arg) {
	long n = (long)arg;
	unsigned long *out = malloc(sizeof *out);
	*out = sort_phase((int)n) + (unsigned long)fib(12);
	return out;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "";
	dump = strcmp(mode, "parts") == 0;
	if (strcmp(mode, "threads") == 0) {
		pthread_t t1, t2;
		pthread_create(&t1, NULL, worker, (void *)500L);
		pthread_create(&t2, NULL, worker, (void *)1500L);
		void *r1, *r2;
		pthread_join(t1, &r1);
		pthread_join(t2, &r2);
		printf("%lu %lu %ld\n", *(unsigned long *)r1, *(unsigned long *)r2, recursion_phase());
		free(r1);
		free(r2);
		return 0;
	}
	unsigned h = sort_phase(2000);
	phase_done("sort");
	long r = recursion_phase();
	phase_done("recursion");
	printf("%u %ld\n", h, r);
	return 0;
}
