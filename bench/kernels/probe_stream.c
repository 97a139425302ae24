/* probe_stream: the STREAM triad a[i] = b[i] + s * c[i] over N elements,
 * N from 10^7 to 10^9 (double: 8 GB per array at 10^9, 24 GB in all on the
 * device and as much on the host). Indices and sizes are long. The inputs
 * are cheap closed-form values so that setting up 10^9 elements stays fast.
 * Loop class: long, light, purely memory-bound streaming loop.
 * N is the trip count. */
#include "common.h"

static void triad(long n, double sc, const double *b, const double *c,
                  double *out) {
#pragma omp target teams distribute parallel for \
    map(to : b[0:n], c[0:n]) map(tofrom : out[0:n])
  for (long i = 0; i < n; i++) out[i] = b[i] + sc * c[i];
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_stream", 100000000L);
  const long n = a.n;
  const double sc = 3.0;
  double *va = calloc((size_t)n, sizeof(double));
  double *vb = malloc(sizeof(double) * (size_t)n);
  double *vc = malloc(sizeof(double) * (size_t)n);
  for (long i = 0; i < n; i++) {
    vb[i] = (double)(i % 1000) * 1e-3;
    vc[i] = (double)(i % 777) * 1e-2;
  }

#pragma omp target data map(to : vb[0:n], vc[0:n]) map(tofrom : va[0:n])
  {
    GS_TIME(a, "triad", { triad(n, sc, vb, vc, va); });
  }

  /* reference in place of b, to avoid a fourth N-element array */
  for (long i = 0; i < n; i++) vb[i] = vb[i] + sc * vc[i];
  gs_check(&a, va, vb, n, 1e-14); /* device may fuse into an FMA */
  free(va); free(vb); free(vc);
  return 0;
}
