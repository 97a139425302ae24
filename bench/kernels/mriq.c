/* mriq: the Q matrix of non-Cartesian MRI reconstruction. For each of N voxels
 * at (x,y,z):  Q[v] = sum_k |phi_k|^2 * exp(i*2*pi*(kx_k*x + ky_k*y + kz_k*z)),
 * stored as real and imaginary parts, over K = 2048 k-space samples (fixed).
 * Kernel 1 (mriq_phimag): |phi_k|^2 for the K samples (a tiny loop).
 * Kernel 2 (mriq_q): the voxel loop, a compute-heavy body with a long inner
 * loop of sin/cos over all samples. Loop class: compute-bound, long inner loop,
 * moderate outer trip count. N is the number of voxels. */
#include "common.h"

#define KS 2048
#define TWO_PI 6.283185307179586

static void phimag(long k, const double *pr, const double *pi, double *pm) {
#pragma omp target teams distribute parallel for \
    map(to : pr[0:k], pi[0:k]) map(tofrom : pm[0:k])
  for (long i = 0; i < k; i++) pm[i] = pr[i] * pr[i] + pi[i] * pi[i];
}

static void computeq(long n, long k, const double *kx, const double *ky,
                     const double *kz, const double *pm, const double *x,
                     const double *y, const double *z, double *qr,
                     double *qi) {
#pragma omp target teams distribute parallel for \
    map(to : kx[0:k], ky[0:k], kz[0:k], pm[0:k], x[0:n], y[0:n], z[0:n]) \
    map(tofrom : qr[0:n], qi[0:n])
  for (long v = 0; v < n; v++) {
    double sr = 0.0, si = 0.0;
    const double xv = x[v], yv = y[v], zv = z[v];
    for (long j = 0; j < k; j++) {
      double arg = TWO_PI * (kx[j] * xv + ky[j] * yv + kz[j] * zv);
      sr += pm[j] * cos(arg);
      si += pm[j] * sin(arg);
    }
    qr[v] = sr;
    qi[v] = si;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "mriq", 32768);
  const long n = a.n, k = KS;
  double *kx = malloc(sizeof(double) * k), *ky = malloc(sizeof(double) * k),
         *kz = malloc(sizeof(double) * k), *pr = malloc(sizeof(double) * k),
         *pi = malloc(sizeof(double) * k), *pm = calloc(k, sizeof(double));
  double *x = malloc(sizeof(double) * n), *y = malloc(sizeof(double) * n),
         *z = malloc(sizeof(double) * n);
  double *q = calloc(2 * (size_t)n, sizeof(double)); /* qr then qi */
  double *ref = malloc(sizeof(double) * 2 * n);
  double *qr = q, *qi = q + n;
  unsigned long s = 4242;
  for (long j = 0; j < k; j++) {
    kx[j] = gs_rand(&s) - 0.5; ky[j] = gs_rand(&s) - 0.5;
    kz[j] = gs_rand(&s) - 0.5; pr[j] = gs_rand(&s); pi[j] = gs_rand(&s);
  }
  for (long v = 0; v < n; v++) {
    x[v] = 4.0 * gs_rand(&s) - 2.0; y[v] = 4.0 * gs_rand(&s) - 2.0;
    z[v] = 4.0 * gs_rand(&s) - 2.0;
  }

#pragma omp target data map(to : kx[0:k], ky[0:k], kz[0:k], pr[0:k], pi[0:k], \
                                x[0:n], y[0:n], z[0:n]) \
    map(tofrom : pm[0:k], qr[0:n], qi[0:n])
  {
    GS_TIME(a, "mriq_phimag", { phimag(k, pr, pi, pm); });
    GS_TIME(a, "mriq_q", { computeq(n, k, kx, ky, kz, pm, x, y, z, qr, qi); });
  }

  for (long v = 0; v < n; v++) {
    double sr = 0.0, si = 0.0;
    for (long j = 0; j < k; j++) {
      double m = pr[j] * pr[j] + pi[j] * pi[j];
      double arg = TWO_PI * (kx[j] * x[v] + ky[j] * y[v] + kz[j] * z[v]);
      sr += m * cos(arg);
      si += m * sin(arg);
    }
    ref[v] = sr;
    ref[n + v] = si;
  }
  gs_check(&a, q, ref, 2 * n, 1e-9);
  free(kx); free(ky); free(kz); free(pr); free(pi); free(pm);
  free(x); free(y); free(z); free(q); free(ref);
  return 0;
}
