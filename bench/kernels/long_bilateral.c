/* long_bilateral: per-pixel image kernels with heavier float bodies on an
 * N x N image (row-major float, clamp-to-edge), `target teams distribute
 * parallel for collapse(2)` over the N^2 pixels:
 *   bilateral5: 5x5 bilateral filter: out = sum_q ws(q) wr(I_q - I_p) I_q /
 *               sum_q ws(q) wr(I_q - I_p), spatial weights ws from a device
 *               array, range weight wr = expf(-(dI)^2 / (2 sigma_r^2)):
 *               25 expf per pixel
 *   tonemap:    RGB planes -> luminance L, Reinhard L / (1 + L), gamma
 *               powf(., 1 / 2.2), the colour scaled by the luminance ratio
 *               (3 planes in, 3 out; powf per pixel)
 * Checked against a double CPU reference to 1e-5.
 * N is the image edge (real codes: 2048); memory 8 N^2 floats (2.1 GB at
 * N = 8192). Pattern: long loop, compute-heavier float body (expf, powf),
 * collapse(2). */
#include "common.h"

#define SIGMA_R 0.1f

#pragma omp declare target
static inline long clampi(long v, long n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }
#pragma omp end declare target

static void bilateral5(long n, const float *ws, const float *in, float *out) {
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : ws[0:25], in[0:n * n]) map(tofrom : out[0:n * n])
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      const float ip = in[y * n + x];
      float num = 0.0f, den = 0.0f;
      for (int dy = -2; dy <= 2; dy++) {
        const float *row = in + clampi(y + dy, n) * n;
        for (int dx = -2; dx <= 2; dx++) {
          const float iq = row[clampi(x + dx, n)], d = iq - ip;
          const float wgt = ws[(dy + 2) * 5 + dx + 2] *
                            expf(-d * d * (1.0f / (2.0f * SIGMA_R * SIGMA_R)));
          num += wgt * iq;
          den += wgt;
        }
      }
      out[y * n + x] = num / den;
    }
}

static void tonemap(long n, const float *rgb, float *res) {
  const long np = n * n;
#pragma omp target teams distribute parallel for collapse(2) \
    map(to : rgb[0:3 * np]) map(tofrom : res[0:3 * np])
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      const long p = y * n + x;
      const float r = rgb[p], g = rgb[np + p], b = rgb[2 * np + p];
      const float l = 0.2126f * r + 0.7152f * g + 0.0722f * b;
      const float ld = powf(l / (1.0f + l), 1.0f / 2.2f);
      const float s = ld / l;
      res[p] = r * s;
      res[np + p] = g * s;
      res[2 * np + p] = b * s;
    }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "long_bilateral", 4096);
  const long n = a.n, np = n * n;
  float ws[25];
  for (int dy = -2; dy <= 2; dy++)
    for (int dx = -2; dx <= 2; dx++) ws[(dy + 2) * 5 + dx + 2] = (float)exp(-(dx * dx + dy * dy) / 4.5);
  float *in = malloc(sizeof(float) * np), *out = calloc((size_t)np, sizeof(float));
  float *rgb = malloc(sizeof(float) * 3 * np), *res = calloc(3 * (size_t)np, sizeof(float));
  unsigned long st = 7;
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      /* piecewise-constant blocks (edges to preserve) plus noise */
      const double base = ((x / 37 + y / 53) % 3) * 0.3 + 0.1;
      in[y * n + x] = (float)(base + 0.05 * (gs_rand(&st) - 0.5));
    }
  for (long p = 0; p < 3 * np; p++) rgb[p] = (float)(0.05 + 4.0 * gs_rand(&st)); /* HDR */

#pragma omp target data map(to : ws[0:25], in[0:np], rgb[0:3 * np]) \
    map(tofrom : out[0:np], res[0:3 * np])
  {
    GS_TIME(a, "bilateral5", { bilateral5(n, ws, in, out); });
    GS_TIME(a, "tonemap", { tonemap(n, rgb, res); });
  }

  double *got = malloc(sizeof(double) * 4 * np), *ref = malloc(sizeof(double) * 4 * np);
#pragma omp parallel for
  for (long y = 0; y < n; y++)
    for (long x = 0; x < n; x++) {
      const double ip = in[y * n + x];
      double num = 0.0, den = 0.0;
      for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx++) {
          const double iq = in[clampi(y + dy, n) * n + clampi(x + dx, n)], d = iq - ip;
          const double wgt = ws[(dy + 2) * 5 + dx + 2] *
                             exp(-d * d / (2.0 * (double)SIGMA_R * (double)SIGMA_R));
          num += wgt * iq;
          den += wgt;
        }
      ref[y * n + x] = num / den;
      const long p = y * n + x;
      const double r = rgb[p], g = rgb[np + p], b = rgb[2 * np + p];
      const double l = 0.2126 * r + 0.7152 * g + 0.0722 * b;
      const double s = pow(l / (1.0 + l), 1.0 / 2.2) / l;
      ref[np + p] = r * s;
      ref[2 * np + p] = g * s;
      ref[3 * np + p] = b * s;
    }
  for (long p = 0; p < np; p++) got[p] = out[p];
  for (long p = 0; p < 3 * np; p++) got[np + p] = res[p];
  gs_check(&a, got, ref, 4 * np, 1e-5);
  free(in); free(out); free(rgb); free(res); free(got); free(ref);
  return 0;
}
