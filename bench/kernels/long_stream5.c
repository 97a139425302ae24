/* long_stream5: the five STREAM-style kernels over N doubles, each its own
 * `target teams distribute parallel for` (1-D, long indices), as the McCalpin
 * benchmark and the bulk vector updates of solvers write them:
 *   st_copy:  c = a
 *   st_scale: b = s c0            (c0: a second input, so every kernel reads
 *   st_add:   d = a + b0           only inputs and the program stays
 *   st_triad: e = b0 + s c0        idempotent)
 *   st_dot:   sum_i a_i b0_i      (reduction(+), 1 double: the large dot
 *                                  product of solver codes)
 * Bytes moved per element: 16, 16, 24, 24, 16.
 * Checked exactly (copy) and to 1e-15 relative (one rounding each, plus the
 * device contracting a multiply-add into an FMA: at most 1 ulp apart); the
 * dot to 1e-12 relative to sum |a_i b_i| (= the sum: every term is
 * positive). Both sums run in double; the CPU's long sequential partial sums
 * are the less accurate of the two, 1.7e-14 relative at N = 2^26 against a
 * long double sum (measured), the device's per-thread sums and reduction
 * tree much closer: either way far below 1e-12.
 * N is the element count (2^22 to 2^26); memory 7 N doubles (3.8 GB at
 * N = 2^26). Pattern: long streaming loop (and a large cross-team dot). */
#include "common.h"

#define SCALE 3.0

static void st_copy(long n, const double *a, double *c) {
#pragma omp target teams distribute parallel for map(to : a[0:n]) map(tofrom : c[0:n])
  for (long i = 0; i < n; i++) c[i] = a[i];
}

static void st_scale(long n, const double *c0, double *b) {
#pragma omp target teams distribute parallel for map(to : c0[0:n]) map(tofrom : b[0:n])
  for (long i = 0; i < n; i++) b[i] = SCALE * c0[i];
}

static void st_add(long n, const double *a, const double *b0, double *d) {
#pragma omp target teams distribute parallel for map(to : a[0:n], b0[0:n]) \
    map(tofrom : d[0:n])
  for (long i = 0; i < n; i++) d[i] = a[i] + b0[i];
}

static void st_triad(long n, const double *b0, const double *c0, double *e) {
#pragma omp target teams distribute parallel for map(to : b0[0:n], c0[0:n]) \
    map(tofrom : e[0:n])
  for (long i = 0; i < n; i++) e[i] = b0[i] + SCALE * c0[i];
}

static double st_dot(long n, const double *a, const double *b0) {
  double s = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : s) \
    map(to : a[0:n], b0[0:n]) map(tofrom : s)
  for (long i = 0; i < n; i++) s += a[i] * b0[i];
  return s;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "long_stream5", 33554432);
  const long n = a.n;
  double *in = malloc(sizeof(double) * 3 * n);
  double *A = in, *B0 = in + n, *C0 = in + 2 * n;
  double *out = calloc(4 * (size_t)n, sizeof(double));
  double *c = out, *b = out + n, *d = out + 2 * n, *e = out + 3 * n;
  unsigned long st = 5;
  for (long i = 0; i < 3 * n; i++) in[i] = gs_rand(&st) + 0.5;
  double dot = 0.0;

#pragma omp target data map(to : in[0:3 * n]) map(tofrom : out[0:4 * n])
  {
    GS_TIME(a, "st_copy", { st_copy(n, A, c); });
    GS_TIME(a, "st_scale", { st_scale(n, C0, b); });
    GS_TIME(a, "st_add", { st_add(n, A, B0, d); });
    GS_TIME(a, "st_triad", { st_triad(n, B0, C0, e); });
    GS_TIME(a, "st_dot", { dot = st_dot(n, A, B0); });
  }

  double *ref = malloc(sizeof(double) * 4 * n), rdot = 0.0;
#pragma omp parallel for reduction(+ : rdot)
  for (long i = 0; i < n; i++) {
    ref[i] = A[i];
    ref[n + i] = SCALE * C0[i];
    ref[2 * n + i] = A[i] + B0[i];
    ref[3 * n + i] = B0[i] + SCALE * C0[i];
    rdot += A[i] * B0[i]; /* all terms positive: sum |a b| = the sum */
  }
  if (memcmp(c, ref, sizeof(double) * n) != 0) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL copy differs\n", a.prog, a.n);
    return 1;
  }
  if (fabs(dot - rdot) > 1e-12 * rdot) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL dot=%.17g want=%.17g\n", a.prog, a.n, dot,
           rdot);
    return 1;
  }
  gs_check(&a, out, ref, 4 * n, 1e-15);
  free(in); free(out); free(ref);
  return 0;
}
