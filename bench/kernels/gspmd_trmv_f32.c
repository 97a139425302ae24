/* gspmd_trmv_f32: float matrix-vector products in `target teams` regions
 * with team-level code and inner `distribute parallel for` loops (Generic-
 * SPMD, trip count 0 at the launch), as GPU ports of Polybench (which use
 * float) write them:
 *   tr_bicg: Polybench's bicg in ONE teams region with two independent
 *            loops: q = A p (rows) and s = A^T r (columns)
 *   tr_trmv: y = L x for the lower triangle of A, one row per iteration: row
 *            i has i + 1 terms, so the iterations are unbalanced (the last
 *            rows do N times the work of the first)
 *   tr_gemv_t: y = alpha A^T x + y0 with alpha read at team level, columns
 * Accumulation is in float, the reference in double: each result is checked
 * relative to the sum of the magnitudes of its terms, S = sum |a_ij x_j|,
 * |got - ref| <= 1e-3 S. Recursive float summation of n terms is off by at
 * most n u S (u = 2^-24), 4.9e-4 S at n = 8192, so 1e-3 holds for every size
 * listed (the error seen is ~1e-6 S: rounding errors cancel).
 * N is the matrix edge (2048, 4096, 8192); memory N^2 + 8 N floats (268 MB
 * at N = 8192). Pattern: Generic-SPMD, trip count 0 at the launch. */
#include "common.h"

static void tr_bicg(int n, const float *A, const float *p, const float *r, float *q,
                    float *s) {
  const long nn = (long)n * n;
#pragma omp target teams map(to : A[0:nn], p[0:n], r[0:n]) map(tofrom : q[0:n], s[0:n])
  {
#pragma omp distribute parallel for
    for (int i = 0; i < n; i++) {
      float acc = 0.0f;
      for (int j = 0; j < n; j++) acc += A[(long)i * n + j] * p[j];
      q[i] = acc;
    }
#pragma omp distribute parallel for
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int i = 0; i < n; i++) acc += r[i] * A[(long)i * n + j];
      s[j] = acc;
    }
  }
}

static void tr_trmv(int n, const float *coef, const float *A, const float *x, float *y) {
  const long nn = (long)n * n;
#pragma omp target teams map(to : coef[0:1], A[0:nn], x[0:n]) map(tofrom : y[0:n])
  {
    const float alpha = coef[0];
#pragma omp distribute parallel for
    for (int i = 0; i < n; i++) {
      float acc = 0.0f;
      for (int j = 0; j <= i; j++) acc += A[(long)i * n + j] * x[j];
      y[i] = alpha * acc;
    }
  }
}

static void tr_gemv_t(int n, const float *coef, const float *A, const float *x,
                      const float *y0, float *y) {
  const long nn = (long)n * n;
#pragma omp target teams map(to : coef[0:1], A[0:nn], x[0:n], y0[0:n]) map(tofrom : y[0:n])
  {
    const float alpha = coef[0];
#pragma omp distribute parallel for
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int i = 0; i < n; i++) acc += A[(long)i * n + j] * x[i];
      y[j] = y0[j] + alpha * acc;
    }
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "gspmd_trmv_f32", 4096);
  const int n = (int)a.n;
  const long nn = (long)n * n;
  float *A = malloc(sizeof(float) * nn), coef[1] = {0.75f};
  float *in = malloc(sizeof(float) * 4 * n), *p = in, *r = in + n, *x = in + 2 * n, *y0 = in + 3 * n;
  float *out = calloc(4 * (size_t)n, sizeof(float));
  float *q = out, *s = out + n, *y = out + 2 * n, *yt = out + 3 * n;
  unsigned long st = 19;
  for (long k = 0; k < nn; k++) A[k] = (float)(gs_rand(&st) - 0.5);
  for (int k = 0; k < 4 * n; k++) in[k] = (float)gs_rand(&st);

#pragma omp target data map(to : A[0:nn], in[0:4 * n], coef[0:1]) map(tofrom : out[0:4 * n])
  {
    GS_TIME(a, "tr_bicg", { tr_bicg(n, A, p, r, q, s); });
    GS_TIME(a, "tr_trmv", { tr_trmv(n, coef, A, x, y); });
    GS_TIME(a, "tr_gemv_t", { tr_gemv_t(n, coef, A, x, y0, yt); });
  }

  /* reference and magnitude sums in double: [value, |terms|] per output */
  double *ref = calloc(8 * (size_t)n, sizeof(double));
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    double vq = 0, mq = 0, vy = 0, my = 0;
    for (int j = 0; j < n; j++) {
      const double t = (double)A[(long)i * n + j] * p[j];
      vq += t, mq += fabs(t);
      if (j <= i) {
        const double u = 0.75 * (double)A[(long)i * n + j] * x[j];
        vy += u, my += fabs(u);
      }
    }
    ref[2 * i] = vq, ref[2 * i + 1] = mq;
    ref[2 * (2 * n + i)] = vy, ref[2 * (2 * n + i) + 1] = my;
  }
#pragma omp parallel for
  for (int j = 0; j < n; j++) {
    double vs = 0, ms = 0, vt = 0, mt = 0;
    for (int i = 0; i < n; i++) {
      const double t = (double)r[i] * A[(long)i * n + j];
      vs += t, ms += fabs(t);
      const double u = 0.75 * (double)A[(long)i * n + j] * x[i];
      vt += u, mt += fabs(u);
    }
    ref[2 * (n + j)] = vs, ref[2 * (n + j) + 1] = ms;
    ref[2 * (3 * n + j)] = y0[j] + vt, ref[2 * (3 * n + j) + 1] = mt + fabs(y0[j]);
  }
  double *g = malloc(sizeof(double) * 4 * n), *want = malloc(sizeof(double) * 4 * n);
  for (long k = 0; k < 4 * n; k++) {
    const double scale = ref[2 * k + 1] > 0 ? ref[2 * k + 1] : 1.0;
    g[k] = out[k] / scale;
    want[k] = ref[2 * k] / scale;
  }
  gs_check(&a, g, want, 4 * n, 1e-3);
  free(A); free(in); free(out); free(ref); free(g); free(want);
  return 0;
}
