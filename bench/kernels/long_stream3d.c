/* long_stream3d: streaming kernels over N^3 double arrays as collapse(3)
 * loop nests (z, y, x; x fastest), the bulk field operations of 3-D codes:
 * long memory-bound loops with trivial bodies.
 *   s3_copy:      o1 = a
 *   s3_triad:     o2 = a + s b
 *   s3_transpose: o3[x][y][z] = a[z][y][x] (writes coalesced, reads strided
 *                 by N^2)
 *   s3_lincomb:   o4 = 0.5 a - 0.25 b + 2 c  (four streams)
 * Checked exactly (copy, transpose) and to 1e-14 (the arithmetic ones).
 * N is the edge (real codes: 256); memory 7 N^3 doubles (3.2 GB at
 * N = 384). Pattern: long loop, collapse(3) streaming, no reuse. */
#include "common.h"

static void s3_copy(long n, const double *a, double *o) {
  const long t = n * n * n;
#pragma omp target teams distribute parallel for collapse(3) \
    map(to : a[0:t]) map(tofrom : o[0:t])
  for (long z = 0; z < n; z++)
    for (long y = 0; y < n; y++)
      for (long x = 0; x < n; x++) o[(z * n + y) * n + x] = a[(z * n + y) * n + x];
}

static void s3_triad(long n, double s, const double *a, const double *b, double *o) {
  const long t = n * n * n;
#pragma omp target teams distribute parallel for collapse(3) \
    map(to : a[0:t], b[0:t]) map(tofrom : o[0:t])
  for (long z = 0; z < n; z++)
    for (long y = 0; y < n; y++)
      for (long x = 0; x < n; x++) {
        const long p = (z * n + y) * n + x;
        o[p] = a[p] + s * b[p];
      }
}

static void s3_transpose(long n, const double *a, double *o) {
  const long t = n * n * n;
#pragma omp target teams distribute parallel for collapse(3) \
    map(to : a[0:t]) map(tofrom : o[0:t])
  for (long x = 0; x < n; x++)
    for (long y = 0; y < n; y++)
      for (long z = 0; z < n; z++) o[(x * n + y) * n + z] = a[(z * n + y) * n + x];
}

static void s3_lincomb(long n, const double *a, const double *b, const double *c,
                       double *o) {
  const long t = n * n * n;
#pragma omp target teams distribute parallel for collapse(3) \
    map(to : a[0:t], b[0:t], c[0:t]) map(tofrom : o[0:t])
  for (long z = 0; z < n; z++)
    for (long y = 0; y < n; y++)
      for (long x = 0; x < n; x++) {
        const long p = (z * n + y) * n + x;
        o[p] = 0.5 * a[p] - 0.25 * b[p] + 2.0 * c[p];
      }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "long_stream3d", 256);
  const long n = a.n, t = n * n * n;
  double *in = malloc(sizeof(double) * 3 * t);
  double *A = in, *B = in + t, *Cc = in + 2 * t;
  double *out = calloc(4 * (size_t)t, sizeof(double));
  double *o1 = out, *o2 = out + t, *o3 = out + 2 * t, *o4 = out + 3 * t;
  unsigned long st = 3;
  for (long p = 0; p < 3 * t; p++) in[p] = gs_rand(&st);

#pragma omp target data map(to : in[0:3 * t]) map(tofrom : out[0:4 * t])
  {
    GS_TIME(a, "s3_copy", { s3_copy(n, A, o1); });
    GS_TIME(a, "s3_triad", { s3_triad(n, 3.0, A, B, o2); });
    GS_TIME(a, "s3_transpose", { s3_transpose(n, A, o3); });
    GS_TIME(a, "s3_lincomb", { s3_lincomb(n, A, B, Cc, o4); });
  }

  double *ref = malloc(sizeof(double) * 4 * t);
#pragma omp parallel for
  for (long z = 0; z < n; z++)
    for (long y = 0; y < n; y++)
      for (long x = 0; x < n; x++) {
        const long p = (z * n + y) * n + x;
        ref[p] = A[p];
        ref[t + p] = A[p] + 3.0 * B[p];
        ref[2 * t + (x * n + y) * n + z] = A[p];
        ref[3 * t + p] = 0.5 * A[p] - 0.25 * B[p] + 2.0 * Cc[p];
      }
  for (long p = 0; p < t; p++)
    if (o1[p] != ref[p] || o3[p] != ref[2 * t + p]) {
      printf("gridsel-bench: prog=%s n=%ld check=FAIL copy/transpose differ at %ld\n", a.prog,
             a.n, p);
      return 1;
    }
  gs_check(&a, out, ref, 4 * t, 1e-14);
  free(in); free(out); free(ref);
  return 0;
}
