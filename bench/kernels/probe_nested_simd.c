/* probe_nested_simd: nested parallelism inside the combined construct, the
 * pattern of a real program that gridsel once made crash. A
 * `target teams distribute parallel for` over N samples holds, per sample, a
 * nested `parallel for simd reduction(+ : re, im)` over K = 1024 terms
 * (float sin/cos of a 3-D dot product: a direct Fourier sum, as in MRI-Q's
 * Q computation). The outer region's reduction variables are shared with the
 * nested region, so clang globalizes them (`__kmpc_alloc_shared`), and the
 * nested region needs a thread state in the device runtime: with more threads
 * per block these come from the device heap, which is small by default.
 *   nested_fourier: re[s], im[s] = sum_k mag[k] * (cos, sin)(2 pi k.x[s])
 *                   also records each sample's team (the distribute chunk)
 *   nested_fourier4: the same with four double accumulators (more globalized
 *                   bytes per thread)
 *   plain_saxpy:    y = a x + y, no nesting, in the same translation unit:
 *                   the device module as a whole may use nested parallelism
 * Prints, besides the timings, one line with the teams that did work and the
 * samples per team and per consecutive run of one team (the chunk).
 * N is the number of samples. */
#include "common.h"

#define K_TERMS 1024

static void nested_fourier(long n, const float *kx, const float *ky,
                           const float *kz, const float *mag, const float *x,
                           const float *y, const float *z, float *re,
                           float *im, int *team) {
#pragma omp target teams distribute parallel for                            \
    map(to : kx[0:K_TERMS], ky[0:K_TERMS], kz[0:K_TERMS], mag[0:K_TERMS],   \
            x[0:n], y[0:n], z[0:n]) map(tofrom : re[0:n], im[0:n], team[0:n])
  for (long s = 0; s < n; s++) {
    float r = 0.0f, i = 0.0f;
    const float xs = x[s], ys = y[s], zs = z[s];
#pragma omp parallel for simd reduction(+ : r, i)
    for (int k = 0; k < K_TERMS; k++) {
      const float arg = 6.2831853f * (kx[k] * xs + ky[k] * ys + kz[k] * zs);
      r += mag[k] * cosf(arg);
      i += mag[k] * sinf(arg);
    }
    re[s] = r;
    im[s] = i;
    team[s] = omp_get_team_num();
  }
}

static void nested_fourier4(long n, const float *kx, const float *mag,
                            const float *x, double *acc4) {
#pragma omp target teams distribute parallel for \
    map(to : kx[0:K_TERMS], mag[0:K_TERMS], x[0:n]) map(tofrom : acc4[0:4 * n])
  for (long s = 0; s < n; s++) {
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    const float xs = x[s];
#pragma omp parallel for simd reduction(+ : a0, a1, a2, a3)
    for (int k = 0; k < K_TERMS; k++) {
      const float arg = 6.2831853f * kx[k] * xs;
      const float c = cosf(arg), sn = sinf(arg);
      a0 += mag[k] * c;
      a1 += mag[k] * sn;
      a2 += mag[k] * c * c;
      a3 += mag[k] * c * sn;
    }
    acc4[4 * s] = a0;
    acc4[4 * s + 1] = a1;
    acc4[4 * s + 2] = a2;
    acc4[4 * s + 3] = a3;
  }
}

static void plain_saxpy(long n, float a, const float *x, float *y) {
#pragma omp target teams distribute parallel for map(to : x[0:n]) \
    map(tofrom : y[0:n])
  for (long s = 0; s < n; s++) y[s] = a * x[s] + y[s];
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_nested_simd", 24576);
  const long n = a.n;
  float *kx = malloc(sizeof(float) * K_TERMS), *ky = malloc(sizeof(float) * K_TERMS);
  float *kz = malloc(sizeof(float) * K_TERMS), *mag = malloc(sizeof(float) * K_TERMS);
  float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
  float *z = malloc(sizeof(float) * n);
  float *re = calloc((size_t)n, sizeof(float)), *im = calloc((size_t)n, sizeof(float));
  float *sy = malloc(sizeof(float) * n);
  double *acc4 = calloc((size_t)(4 * n), sizeof(double));
  int *team = calloc((size_t)n, sizeof(int));
  unsigned long st = 4242;
  for (int k = 0; k < K_TERMS; k++) {
    kx[k] = (float)(gs_rand(&st) - 0.5);
    ky[k] = (float)(gs_rand(&st) - 0.5);
    kz[k] = (float)(gs_rand(&st) - 0.5);
    mag[k] = (float)gs_rand(&st);
  }
  for (long s = 0; s < n; s++) {
    x[s] = (float)(gs_rand(&st) - 0.5);
    y[s] = (float)(gs_rand(&st) - 0.5);
    z[s] = (float)(gs_rand(&st) - 0.5);
    sy[s] = 0.0f;
  }
  /* Each saxpy run adds 0.5 x: the final value counts the launches. */
  const int runs = a.warmup + a.reps;

#pragma omp target data map(to : kx[0:K_TERMS], ky[0:K_TERMS], kz[0:K_TERMS], \
                                mag[0:K_TERMS], x[0:n], y[0:n], z[0:n])      \
    map(tofrom : re[0:n], im[0:n], team[0:n], acc4[0:4 * n], sy[0:n])
  {
    GS_TIME(a, "nested_fourier",
            { nested_fourier(n, kx, ky, kz, mag, x, y, z, re, im, team); });
    GS_TIME(a, "nested_fourier4", { nested_fourier4(n, kx, mag, x, acc4); });
    GS_TIME(a, "plain_saxpy", { plain_saxpy(n, 0.5f, x, sy); });
  }

  /* Teams that did work, samples per team, and the chunk: the longest run of
   * consecutive samples handled by one team. */
  int maxteam = 0;
  for (long s = 0; s < n; s++)
    if (team[s] > maxteam) maxteam = team[s];
  long *per_team = calloc((size_t)maxteam + 1, sizeof(long));
  long used = 0, most = 0, run = 0, longest = 0;
  for (long s = 0; s < n; s++) {
    if (team[s] >= 0) per_team[team[s]]++;
    run = (s > 0 && team[s] == team[s - 1]) ? run + 1 : 1;
    if (run > longest) longest = run;
  }
  for (long t = 0; t <= maxteam; t++) {
    used += per_team[t] > 0;
    if (per_team[t] > most) most = per_team[t];
  }
  printf("gridsel-bench: prog=probe_nested_simd n=%ld teams_used=%ld "
         "max_samples_per_team=%ld chunk=%ld\n",
         n, used, most, longest);

  const long m = 2 * n + 4 * n + n;
  double *got = malloc(sizeof(double) * m), *ref = malloc(sizeof(double) * m);
  for (long s = 0; s < n; s++) {
    double r = 0.0, i = 0.0, a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    for (int k = 0; k < K_TERMS; k++) {
      const double arg = 6.2831853 * ((double)kx[k] * x[s] + (double)ky[k] * y[s] +
                                      (double)kz[k] * z[s]);
      r += mag[k] * cos(arg);
      i += mag[k] * sin(arg);
      const double arg1 = 6.2831853 * (double)kx[k] * x[s];
      const double c = cos(arg1), sn = sin(arg1);
      a0 += mag[k] * c;
      a1 += mag[k] * sn;
      a2 += mag[k] * c * c;
      a3 += mag[k] * c * sn;
    }
    got[2 * s] = re[s];
    got[2 * s + 1] = im[s];
    ref[2 * s] = r;
    ref[2 * s + 1] = i;
    const double want4[4] = {a0, a1, a2, a3};
    for (int j = 0; j < 4; j++) {
      got[2 * n + 4 * s + j] = acc4[4 * s + j];
      ref[2 * n + 4 * s + j] = want4[j];
    }
    got[6 * n + s] = sy[s];
    ref[6 * n + s] = runs * 0.5 * x[s];
  }
  /* Float sums of 1024 terms of magnitude <= 1: absolute error well under
   * 1e-2 relative to 1 + |ref|. */
  gs_check(&a, got, ref, m, 1e-2);
  free(kx); free(ky); free(kz); free(mag); free(x); free(y); free(z);
  free(re); free(im); free(sy); free(acc4); free(team); free(per_team);
  free(got); free(ref);
  return 0;
}
