/* gspmd_rowsoftmax: `target teams distribute` over the N rows of an N x C
 * matrix (C = 4096 columns, row-major double), each row handled by one team
 * whose threads share the long inner loops through nested `parallel for`
 * regions (implicit barrier between them). LLVM 19 runs these as
 * Generic-SPMD; the host knows the row count (trip count N at the launch).
 *   row_softmax: three nested loops per row: m = max_j x (reduction(max)),
 *                s = sum_j exp(x - m) written to out (reduction(+)), then
 *                out /= s
 *   row_l2norm:  two nested loops per row: q = sum_j x^2 (reduction(+)),
 *                then out2 = x / sqrt(q)
 * N is the number of rows; memory 3 N C doubles (1.5 GB at N = 16384).
 * Pattern: Generic-SPMD, team per row, long inner parallel loops. */
#include "common.h"

#define C 4096

static void row_softmax(long n, const double *x, double *out) {
#pragma omp target teams distribute map(to : x[0:n * C]) map(tofrom : out[0:n * C])
  for (long r = 0; r < n; r++) {
    const double *xr = x + r * C;
    double *o = out + r * C;
    double m = -INFINITY, s = 0.0;
#pragma omp parallel for reduction(max : m)
    for (int j = 0; j < C; j++) m = xr[j] > m ? xr[j] : m;
#pragma omp parallel for reduction(+ : s)
    for (int j = 0; j < C; j++) {
      const double e = exp(xr[j] - m);
      o[j] = e;
      s += e;
    }
    const double inv = 1.0 / s;
#pragma omp parallel for
    for (int j = 0; j < C; j++) o[j] *= inv;
  }
}

static void row_l2norm(long n, const double *x, double *out) {
#pragma omp target teams distribute map(to : x[0:n * C]) map(tofrom : out[0:n * C])
  for (long r = 0; r < n; r++) {
    const double *xr = x + r * C;
    double *o = out + r * C;
    double q = 0.0;
#pragma omp parallel for reduction(+ : q)
    for (int j = 0; j < C; j++) q += xr[j] * xr[j];
    const double inv = 1.0 / sqrt(q);
#pragma omp parallel for
    for (int j = 0; j < C; j++) o[j] = xr[j] * inv;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "gspmd_rowsoftmax", 4096);
  const long n = a.n, total = n * C;
  double *x = malloc(sizeof(double) * total);
  double *got = calloc(2 * (size_t)total, sizeof(double));
  double *sm = got, *nm = got + total;
  unsigned long st = 77;
  for (long p = 0; p < total; p++) x[p] = 8.0 * gs_rand(&st) - 4.0;

#pragma omp target data map(to : x[0:total]) map(tofrom : sm[0:total], nm[0:total])
  {
    GS_TIME(a, "row_softmax", { row_softmax(n, x, sm); });
    GS_TIME(a, "row_l2norm", { row_l2norm(n, x, nm); });
  }

  double *ref = malloc(sizeof(double) * 2 * total);
  for (long r = 0; r < n; r++) {
    const double *xr = x + r * C;
    double m = -INFINITY, s = 0.0, q = 0.0;
    for (int j = 0; j < C; j++) m = xr[j] > m ? xr[j] : m;
    for (int j = 0; j < C; j++) s += exp(xr[j] - m), q += xr[j] * xr[j];
    for (int j = 0; j < C; j++) {
      ref[r * C + j] = exp(xr[j] - m) / s;
      ref[total + r * C + j] = xr[j] / sqrt(q);
    }
  }
  /* softmax entries are ~1/C: check them scaled by C so the relative
   * tolerance bites */
  for (long p = 0; p < total; p++) got[p] *= C, ref[p] *= C;
  gs_check(&a, got, ref, 2 * total, 1e-10);
  free(x); free(got); free(ref);
  return 0;
}
