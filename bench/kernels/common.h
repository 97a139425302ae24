/* Shared scaffolding for the gridsel benchmark programs.
 *
 * Every program follows one contract so the harness can drive any of them:
 *
 *   prog [N] [REPS] [WARMUP]
 *
 * N is the problem size (each program documents what it means), REPS the timed
 * repetitions of every kernel, WARMUP the untimed ones. Kernels are idempotent
 * (outputs are a pure function of inputs), so any number of repetitions under any
 * grid leaves the same result, which is checked against a CPU reference at the end.
 *
 * Output, one line per kernel and one for the check, all prefixed "gridsel-bench:":
 *   gridsel-bench: prog=gemm n=1024 kernel=gemm reps=10 median_ms=1.234 min_ms=1.200 max_ms=1.300
 *   gridsel-bench: prog=gemm n=1024 check=pass max_err=1.2e-12
 * A failed check exits with status 1 ("check=FAIL"), so a grid that breaks a
 * result cannot go unnoticed.
 */
#ifndef GRIDSEL_BENCH_COMMON_H
#define GRIDSEL_BENCH_COMMON_H

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *prog;
  long n;
  int reps;
  int warmup;
} gs_args;

static inline gs_args gs_parse(int argc, char **argv, const char *prog,
                               long default_n) {
  gs_args a = {prog, default_n, 10, 2};
  if (argc > 1) a.n = atol(argv[1]);
  if (argc > 2) a.reps = atoi(argv[2]);
  if (argc > 3) a.warmup = atoi(argv[3]);
  if (a.n <= 0 || a.reps <= 0 || a.warmup < 0) {
    fprintf(stderr, "usage: %s [N>0] [REPS>0] [WARMUP>=0]\n", prog);
    exit(2);
  }
  return a;
}

static inline double gs_now_ms(void) { return omp_get_wtime() * 1e3; }

static int gs_cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Times `body` (a statement, usually one target region) WARMUP + REPS times and
 * prints the median, min and max of the timed repetitions. */
#define GS_TIME(args, label, body)                                            \
  do {                                                                        \
    for (int gs_w = 0; gs_w < (args).warmup; gs_w++) { body; }                \
    double *gs_t = malloc(sizeof(double) * (size_t)(args).reps);              \
    for (int gs_r = 0; gs_r < (args).reps; gs_r++) {                          \
      double gs_t0 = gs_now_ms();                                             \
      body;                                                                   \
      gs_t[gs_r] = gs_now_ms() - gs_t0;                                       \
    }                                                                         \
    qsort(gs_t, (size_t)(args).reps, sizeof(double), gs_cmp_double);         \
    printf("gridsel-bench: prog=%s n=%ld kernel=%s reps=%d median_ms=%.6f "   \
           "min_ms=%.6f max_ms=%.6f\n",                                       \
           (args).prog, (args).n, (label), (args).reps,                       \
           gs_t[(args).reps / 2], gs_t[0], gs_t[(args).reps - 1]);            \
    free(gs_t);                                                               \
  } while (0)

/* Compares `got` with `ref` elementwise with a mixed absolute/relative
 * tolerance; prints the check line and exits 1 on failure. */
static inline void gs_check(const gs_args *a, const double *got,
                            const double *ref, long count, double tol) {
  double max_err = 0.0;
  long bad = -1;
  for (long i = 0; i < count; i++) {
    double err = fabs(got[i] - ref[i]) / (1.0 + fabs(ref[i]));
    if (!(err <= tol)) { /* also catches NaN */
      if (bad < 0) bad = i;
      if (err > max_err || err != err) max_err = err;
    } else if (err > max_err) {
      max_err = err;
    }
  }
  if (bad >= 0) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL first_bad=%ld got=%.17g "
           "want=%.17g max_err=%.3e\n",
           a->prog, a->n, bad, got[bad], ref[bad], max_err);
    fflush(stdout);
    exit(1);
  }
  printf("gridsel-bench: prog=%s n=%ld check=pass max_err=%.3e\n", a->prog,
         a->n, max_err);
}

/* Deterministic pseudo-random inputs in [0, 1), identical on every run. */
static inline double gs_rand(unsigned long *state) {
  *state = *state * 6364136223846793005UL + 1442695040888963407UL;
  return (double)(*state >> 11) * (1.0 / 9007199254740992.0);
}

#endif
