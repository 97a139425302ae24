/* conv2d: 3x3 convolution of an N x N image with fixed coefficients.
 * One kernel ("conv2d"): a collapse(2) loop over all N x N points; interior
 * points get the 9-point weighted sum, border points copy the input. Reads
 * only the input, so it is idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "conv2d: out of memory\n"); exit(2); }
  return p;
}

/* Fixed 3x3 coefficients, row-major (di, dj) = (-1..1, -1..1). */
#define K00 0.05
#define K01 (-0.15)
#define K02 0.25
#define K10 0.35
#define K11 0.60
#define K12 (-0.45)
#define K20 0.10
#define K21 0.30
#define K22 (-0.20)

#define CONV2D_POINT(I, O, i, j, n)                                            \
  do {                                                                         \
    if ((i) > 0 && (i) < (n) - 1 && (j) > 0 && (j) < (n) - 1) {                \
      const double *u = (I) + ((i) - 1) * (n) + (j);                           \
      const double *c = (I) + (i) * (n) + (j);                                 \
      const double *d = (I) + ((i) + 1) * (n) + (j);                           \
      (O)[(i) * (n) + (j)] = K00 * u[-1] + K01 * u[0] + K02 * u[1] +           \
                             K10 * c[-1] + K11 * c[0] + K12 * c[1] +           \
                             K20 * d[-1] + K21 * d[0] + K22 * d[1];            \
    } else {                                                                   \
      (O)[(i) * (n) + (j)] = (I)[(i) * (n) + (j)];                             \
    }                                                                          \
  } while (0)

static void kernel_conv2d(long n, const double *restrict in,
                          double *restrict out) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) CONV2D_POINT(in, out, i, j, n);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "conv2d", 8000);
  long n = a.n;
  size_t nn = (size_t)n * (size_t)n;
  double *in = xalloc(nn), *out = xalloc(nn), *ref = xalloc(nn);
  unsigned long st = 131;
  for (size_t i = 0; i < nn; i++) in[i] = gs_rand(&st);

#pragma omp target data map(to: in[0:nn]) map(from: out[0:nn])
  {
    GS_TIME(a, "conv2d", kernel_conv2d(n, in, out));
  }

  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) CONV2D_POINT(in, ref, i, j, n);
  gs_check(&a, out, ref, (long)nn, 1e-9);
  free(in); free(out); free(ref);
  return 0;
}
