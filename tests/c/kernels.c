/* Offload program for tests/preload.rs: one kernel per construct, each in
 * its own function so the kernel names (`..._<function>_l<line>`) tell them
 * apart. stdout carries only results, never anything grid-dependent, so it
 * must be identical with and without gridsel.
 *
 *   kernels [all|loop N]   all: every construct once; loop N: one open loop */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 4096
static uint64_t a[MAXN], b[MAXN];

static void init(int n) {
  for (int i = 0; i < n; i++) {
    a[i] = (uint64_t)i * 2654435761u % 1000003u;
    b[i] = (uint64_t)i * 40503u % 65521u;
  }
}

static uint64_t checksum(int n) {
  uint64_t s = 0;
  for (int i = 0; i < n; i++) s = s * 31 + a[i];
  return s;
}

/* Open grid: gridsel may choose. */
static void teams_loop(int n) {
#pragma omp target teams distribute parallel for map(tofrom : a[0:n]) map(to : b[0:n])
  for (int i = 0; i < n; i++) a[i] = a[i] * 3 + b[i] + (uint64_t)i;
}

/* The program fixed the grid: gridsel keeps it (unless told to override). */
static void clause_loop(int n) {
#pragma omp target teams distribute parallel for num_teams(7) thread_limit(3) map(tofrom : a[0:n]) map(to : b[0:n])
  for (int i = 0; i < n; i++) a[i] = a[i] ^ (b[i] << 3);
}

/* `target` without teams: one team. */
static void single_region(int n) {
#pragma omp target map(tofrom : a[0:n])
  for (int i = 0; i < n; i++) a[i] += 7;
}

/* `target parallel for`: one team. */
static void parallel_for(int n) {
#pragma omp target parallel for map(tofrom : a[0:n]) map(to : b[0:n])
  for (int i = 0; i < n; i++) a[i] = a[i] + b[i] * 5;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "loop") == 0) {
    int n = atoi(argv[2]);
    if (n < 1 || n > MAXN) return 2;
    init(n);
    teams_loop(n);
    printf("loop %d: %llu\n", n, (unsigned long long)checksum(n));
    return 0;
  }
  const int n = 1000;
  init(n);
  teams_loop(n);
  printf("teams_loop %d: %llu\n", n, (unsigned long long)checksum(n));
  teams_loop(20);
  printf("teams_loop 20: %llu\n", (unsigned long long)checksum(n));
  clause_loop(n);
  printf("clause_loop %d: %llu\n", n, (unsigned long long)checksum(n));
  single_region(n);
  printf("single_region %d: %llu\n", n, (unsigned long long)checksum(n));
  parallel_for(n);
  printf("parallel_for %d: %llu\n", n, (unsigned long long)checksum(n));
  return 0;
}
