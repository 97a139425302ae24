/* nest_batched_mv: small per-sample linear algebra with nested parallelism
 * inside the combined construct: `target teams distribute parallel for` over
 * N samples, each with its own D x D matrix M_s (D = 16, row-major double)
 * and vector v_s, the body opening a nested parallel region over the
 * sample's rows or entries (batched finite-element / chemistry-kernel style):
 *   batch_mv:    y_s = M_s v_s; nested `parallel for` over the D rows, a
 *                sequential dot of length D per row
 *   batch_mtv:   z_s = M_s^T v_s; nested `parallel for simd` over the D
 *                columns (no reduction)
 *   batch_quad:  q_s = v_s^T M_s v_s; nested `parallel for simd
 *                reduction(+ : q)` over the D^2 entries
 * Idempotent; checked to 1e-12 against a CPU loop in the same order.
 * N is the sample count; memory N (D^2 + 3 D + 1) doubles (~0.6 GB at
 * N = 262144). Pattern: nested parallel for (+ simd, + reduction) inside
 * target teams distribute parallel for. */
#include "common.h"

#define D 16

static void batch_mv(long n, const double *M, const double *v, double *y) {
#pragma omp target teams distribute parallel for map(to : M[0:n * D * D], v[0:n * D]) \
    map(tofrom : y[0:n * D])
  for (long s = 0; s < n; s++) {
    const double *m = M + s * D * D, *vs = v + s * D;
#pragma omp parallel for
    for (int i = 0; i < D; i++) {
      double acc = 0.0;
      for (int j = 0; j < D; j++) acc += m[i * D + j] * vs[j];
      y[s * D + i] = acc;
    }
  }
}

static void batch_mtv(long n, const double *M, const double *v, double *z) {
#pragma omp target teams distribute parallel for map(to : M[0:n * D * D], v[0:n * D]) \
    map(tofrom : z[0:n * D])
  for (long s = 0; s < n; s++) {
    const double *m = M + s * D * D, *vs = v + s * D;
#pragma omp parallel for simd
    for (int j = 0; j < D; j++) {
      double acc = 0.0;
      for (int i = 0; i < D; i++) acc += m[i * D + j] * vs[i];
      z[s * D + j] = acc;
    }
  }
}

static void batch_quad(long n, const double *M, const double *v, double *q) {
#pragma omp target teams distribute parallel for map(to : M[0:n * D * D], v[0:n * D]) \
    map(tofrom : q[0:n])
  for (long s = 0; s < n; s++) {
    const double *m = M + s * D * D, *vs = v + s * D;
    double acc = 0.0;
#pragma omp parallel for simd reduction(+ : acc)
    for (int e = 0; e < D * D; e++) acc += vs[e / D] * m[e] * vs[e % D];
    q[s] = acc;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "nest_batched_mv", 65536);
  const long n = a.n;
  double *M = malloc(sizeof(double) * n * D * D), *v = malloc(sizeof(double) * n * D);
  double *got = calloc((size_t)n * (2 * D + 1), sizeof(double));
  double *y = got, *z = got + n * D, *q = got + 2 * n * D;
  unsigned long st = 1616;
  for (long p = 0; p < n * D * D; p++) M[p] = 2.0 * gs_rand(&st) - 1.0;
  for (long p = 0; p < n * D; p++) v[p] = gs_rand(&st);

#pragma omp target data map(to : M[0:n * D * D], v[0:n * D]) \
    map(tofrom : y[0:n * D], z[0:n * D], q[0:n])
  {
    GS_TIME(a, "batch_mv", { batch_mv(n, M, v, y); });
    GS_TIME(a, "batch_mtv", { batch_mtv(n, M, v, z); });
    GS_TIME(a, "batch_quad", { batch_quad(n, M, v, q); });
  }

  double *ref = malloc(sizeof(double) * n * (2 * D + 1));
  for (long s = 0; s < n; s++) {
    const double *m = M + s * D * D, *vs = v + s * D;
    double qq = 0.0;
    for (int i = 0; i < D; i++) {
      double ay = 0.0, az = 0.0;
      for (int j = 0; j < D; j++) {
        ay += m[i * D + j] * vs[j];
        az += m[j * D + i] * vs[j];
        qq += vs[i] * m[i * D + j] * vs[j];
      }
      ref[s * D + i] = ay;
      ref[n * D + s * D + i] = az;
    }
    ref[2 * n * D + s] = qq;
  }
  gs_check(&a, got, ref, n * (2 * D + 1), 1e-12);
  free(M); free(v); free(got); free(ref);
  return 0;
}
