/* conv3d: 3x3x3 convolution of an N x N x N volume with fixed coefficients.
 * One kernel ("conv3d"): a collapse(3) loop over all N^3 points (the
 * contiguous k index innermost); interior points get the 27-point weighted
 * sum, border points copy the input. Reads only the input: idempotent. */
#include "common.h"

static double *xalloc(size_t count) {
  double *p = malloc(count * sizeof(double));
  if (!p) { fprintf(stderr, "conv3d: out of memory\n"); exit(2); }
  return p;
}

/* Fixed coefficient for offset (a, b, c) in {-1, 0, 1}^3: distinct
 * magnitudes 0.01 .. 0.27 with alternating signs. */
#define W3(a, b, c)                                                            \
  (0.01 * (double)(((a) + 1) * 9 + ((b) + 1) * 3 + ((c) + 1) + 1) *           \
   ((((a) + (b) + (c) + 3) & 1) ? -1.0 : 1.0))

#define CONV3D_POINT(I, O, i, j, k, n)                                         \
  do {                                                                         \
    long idx_ = ((i) * (n) + (j)) * (n) + (k);                                 \
    if ((i) > 0 && (i) < (n) - 1 && (j) > 0 && (j) < (n) - 1 && (k) > 0 &&     \
        (k) < (n) - 1) {                                                       \
      double s_ = 0.0;                                                         \
      for (int a_ = -1; a_ <= 1; a_++)                                         \
        for (int b_ = -1; b_ <= 1; b_++)                                       \
          for (int c_ = -1; c_ <= 1; c_++)                                     \
            s_ += W3(a_, b_, c_) * (I)[idx_ + (a_ * (n) + b_) * (n) + c_];     \
      (O)[idx_] = s_;                                                          \
    } else {                                                                   \
      (O)[idx_] = (I)[idx_];                                                   \
    }                                                                          \
  } while (0)

static void kernel_conv3d(long n, const double *restrict in,
                          double *restrict out) {
#pragma omp target teams distribute parallel for collapse(3)
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      for (long k = 0; k < n; k++) CONV3D_POINT(in, out, i, j, k, n);
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "conv3d", 256);
  long n = a.n;
  size_t nnn = (size_t)n * (size_t)n * (size_t)n;
  double *in = xalloc(nnn), *out = xalloc(nnn), *ref = xalloc(nnn);
  unsigned long st = 141;
  for (size_t i = 0; i < nnn; i++) in[i] = gs_rand(&st);

#pragma omp target data map(to: in[0:nnn]) map(from: out[0:nnn])
  {
    GS_TIME(a, "conv3d", kernel_conv3d(n, in, out));
  }

#pragma omp parallel for
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      for (long k = 0; k < n; k++) CONV3D_POINT(in, ref, i, j, k, n);
  gs_check(&a, out, ref, (long)nnn, 1e-9);
  free(in); free(out); free(ref);
  return 0;
}
