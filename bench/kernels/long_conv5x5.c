/* long_conv5x5: image filters on an N x N float image (row-major, pixels in
 * [0, 1), clamp-to-edge borders), each a `target teams distribute parallel
 * for collapse(2)` over all N^2 pixels: long loops with light bodies where
 * no one grid wins everywhere.
 *   conv5x5:  out = 25-tap 2-D convolution, weights read from a small
 *             device array (an arbitrary, non-separable 5x5 kernel)
 *   gauss_h:  tmp = horizontal 5-tap binomial (1 4 6 4 1)/16 pass
 *   gauss_v:  blur = vertical 5-tap binomial pass over tmp (strided reads)
 *   sobel:    edge magnitude sqrt(gx^2 + gy^2) of the 3x3 Sobel operators
 * Checked against a double CPU reference to 1e-5 (float arithmetic).
 * N is the image edge (real codes: 2048); memory 5 N^2 floats (1.3 GB at
 * N = 8192). Pattern: long loop, light float body, collapse(2). */
#include "common.h"

#pragma omp declare target
static inline long clampi(long v, long n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }
#pragma omp end declare target

static void conv5x5(long n, const float *w25, const float *in, float *out) {
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : w25[0:25], in[0:n * n]) map(tofrom : out[0:n * n])
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      float acc = 0.0f;
      for (int dy = -2; dy <= 2; dy++) {
        const float *row = in + clampi(y + dy, n) * n;
        for (int dx = -2; dx <= 2; dx++)
          acc += w25[(dy + 2) * 5 + dx + 2] * row[clampi(x + dx, n)];
      }
      out[y * n + x] = acc;
    }
}

static void gauss_h(long n, const float *in, float *tmp) {
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : in[0:n * n]) map(tofrom : tmp[0:n * n])
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      const float *row = in + y * n;
      tmp[y * n + x] = (row[clampi(x - 2, n)] + 4.0f * row[clampi(x - 1, n)] + 6.0f * row[x] +
                        4.0f * row[clampi(x + 1, n)] + row[clampi(x + 2, n)]) * (1.0f / 16.0f);
    }
}

static void gauss_v(long n, const float *tmp, float *blur) {
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : tmp[0:n * n]) map(tofrom : blur[0:n * n])
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      blur[y * n + x] = (tmp[clampi(y - 2, n) * n + x] + 4.0f * tmp[clampi(y - 1, n) * n + x] +
                         6.0f * tmp[y * n + x] + 4.0f * tmp[clampi(y + 1, n) * n + x] +
                         tmp[clampi(y + 2, n) * n + x]) * (1.0f / 16.0f);
    }
}

static void sobel(long n, const float *in, float *mag) {
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : in[0:n * n]) map(tofrom : mag[0:n * n])
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      const float *u = in + clampi(y - 1, n) * n, *c = in + y * n, *d = in + clampi(y + 1, n) * n;
      const long xl = clampi(x - 1, n), xr = clampi(x + 1, n);
      const float gx = (u[xr] + 2.0f * c[xr] + d[xr]) - (u[xl] + 2.0f * c[xl] + d[xl]);
      const float gy = (d[xl] + 2.0f * d[x] + d[xr]) - (u[xl] + 2.0f * u[x] + u[xr]);
      mag[y * n + x] = sqrtf(gx * gx + gy * gy);
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "long_conv5x5", 4096);
  const long n = a.n, np = n * n;
  float w25[25];
  float *in = malloc(sizeof(float) * np), *tmp = calloc((size_t)np, sizeof(float));
  float *outs = calloc(3 * (size_t)np, sizeof(float));
  float *out = outs, *blur = outs + np, *mag = outs + 2 * np;
  unsigned long st = 55;
  double wsum = 0.0;
  for (int k = 0; k < 25; k++) w25[k] = (float)(gs_rand(&st) - 0.3), wsum += w25[k];
  for (int k = 0; k < 25; k++) w25[k] = (float)(w25[k] / wsum);
  /* smooth pattern plus noise, so the filters see structure */
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++)
      in[y * n + x] = (float)(0.5 + 0.3 * sin(0.01 * x) * cos(0.013 * y) + 0.19 * gs_rand(&st));

#pragma omp target data map(to : w25[0:25], in[0:np]) map(alloc : tmp[0:np]) \
    map(tofrom : out[0:np], blur[0:np], mag[0:np])
  {
    GS_TIME(a, "conv5x5", { conv5x5(n, w25, in, out); });
    GS_TIME(a, "gauss_h", { gauss_h(n, in, tmp); });
    GS_TIME(a, "gauss_v", { gauss_v(n, tmp, blur); });
    GS_TIME(a, "sobel", { sobel(n, in, mag); });
  }

  double *got = malloc(sizeof(double) * 3 * np), *ref = malloc(sizeof(double) * 3 * np);
  const double b5[5] = {1.0 / 16, 4.0 / 16, 6.0 / 16, 4.0 / 16, 1.0 / 16};
#define IN(yy, xx) ((double)in[clampi(yy, n) * n + clampi(xx, n)])
#pragma omp parallel for
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      double c = 0.0, b = 0.0;
      for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx++) {
          c += w25[(dy + 2) * 5 + dx + 2] * IN(y + dy, x + dx);
          b += b5[dy + 2] * b5[dx + 2] * IN(y + dy, x + dx);
        }
      const double gx = (IN(y - 1, x + 1) + 2 * IN(y, x + 1) + IN(y + 1, x + 1)) -
                        (IN(y - 1, x - 1) + 2 * IN(y, x - 1) + IN(y + 1, x - 1));
      const double gy = (IN(y + 1, x - 1) + 2 * IN(y + 1, x) + IN(y + 1, x + 1)) -
                        (IN(y - 1, x - 1) + 2 * IN(y - 1, x) + IN(y - 1, x + 1));
      ref[y * n + x] = c;
      ref[np + y * n + x] = b;
      ref[2 * np + y * n + x] = sqrt(gx * gx + gy * gy);
    }
#undef IN
  for (long p = 0; p < 3 * np; p++) got[p] = outs[p];
  gs_check(&a, got, ref, 3 * np, 1e-5);
  free(in); free(tmp); free(outs); free(got); free(ref);
  return 0;
}
