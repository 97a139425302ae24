/* A `target teams` region without a distribute loop on the construct, as
 * most OpenMP ports of Polybench write matrix-vector products
 * (bench/kernels/gspmd_matvec.c's mv_rows): team-level code (a scale read
 * from device memory) around an inner `distribute parallel for`. The host
 * launches it with trip count 0. Its results do not depend on the number of
 * teams, so GRIDSEL_TEAMS_REGIONS=change may change it; stdout carries only
 * the checksum and the check against the host, never anything grid-dependent.
 *
 *   teams_region [LAUNCHES [N]]   y = 3 y + alpha A x, LAUNCHES times */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXN 256
static uint64_t A[MAXN * MAXN], x[MAXN], y[MAXN], expected[MAXN], coef[1];

static void mv_rows(int n) {
#pragma omp target teams map(to : coef[0:1], A[0:n * n], x[0:n]) map(tofrom : y[0:n])
  {
    const uint64_t alpha = coef[0];
#pragma omp distribute parallel for
    for (int i = 0; i < n; i++) {
      uint64_t s = 0;
      for (int j = 0; j < n; j++) s += A[i * n + j] * x[j];
      y[i] = y[i] * 3 + alpha * s;
    }
  }
}

int main(int argc, char **argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 1;
  int n = argc > 2 ? atoi(argv[2]) : 200;
  if (launches < 1 || n < 1 || n > MAXN) return 2;
  coef[0] = 7;
  for (int i = 0; i < n * n; i++) A[i] = (uint64_t)i * 2654435761u % 1000003u;
  for (int i = 0; i < n; i++) x[i] = (uint64_t)i * 40503u % 65521u;
  for (int r = 0; r < launches; r++) mv_rows(n);
  /* The same on the host. */
  for (int r = 0; r < launches; r++)
    for (int i = 0; i < n; i++) {
      uint64_t s = 0;
      for (int j = 0; j < n; j++) s += A[i * n + j] * x[j];
      expected[i] = expected[i] * 3 + coef[0] * s;
    }
  uint64_t sum = 0;
  int ok = 1;
  for (int i = 0; i < n; i++) {
    sum = sum * 31 + y[i];
    ok &= y[i] == expected[i];
  }
  printf("teams_region %d x %d: %llu check=%s\n", launches, n,
         (unsigned long long)sum, ok ? "pass" : "FAIL");
  return ok ? 0 : 1;
}
