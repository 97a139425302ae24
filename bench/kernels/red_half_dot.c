/* red_half_dot: half-precision dot products and reductions over N elements
 * stored as `_Float16` (which clang 19 supports both for nvptx and for the
 * x86-64 host), `target teams distribute parallel for reduction(...)`:
 *   hdot_f32acc: sum_i x_i y_i, the product formed in _Float16 and
 *                accumulated in a float reduction variable (the usual
 *                mixed-precision dot; 4 B per partial)
 *   hmask_f32acc: a sparse signed count, sum_i m_i s_i with m_i in
 *                {-1, 0, 1} (at most 1024 nonzeros) and s_i in {-1, 1}, half
 *                products accumulated in float: exact for any grid
 *   hmaxabs_f32: max_i |x_i y_i| and min_i |x_i y_i| of the half products,
 *                reduced as floats (half -> float is exact, so the result is)
 * Why float reduction variables: with 2-byte (_Float16) reduction variables
 * LLVM 19.1.7's cross-team reduction gave wrong results on the H100 under
 * LLVM's own grid (a NaN sum, max 0.997 for 1, min 6e-8 for 0; right on the
 * host plugin; bench/results/h100/NOTES.md §10), so this program reduces
 * into floats, as mixed-precision codes do; the data and the products stay
 * in half precision.
 * x, y are uniform in [-1, 1) rounded to half; the float dot is checked
 * against a double reference relative to sum |x_i y_i| (1e-5).
 * N is the element count; memory 4 halves per element (2 GB at N = 2^28).
 * Pattern: cross-team reduction over half-precision data. */
#include "common.h"

typedef _Float16 half;

static float hdot_f32acc(long n, const half *x, const half *y) {
  float s = 0.0f;
#pragma omp target teams distribute parallel for reduction(+ : s) \
    map(to : x[0:n], y[0:n]) map(tofrom : s)
  for (long i = 0; i < n; i++) {
    const half p = x[i] * y[i];
    s += (float)p;
  }
  return s;
}

static float hmask_f32acc(long n, const half *m, const half *sg) {
  float s = 0.0f;
#pragma omp target teams distribute parallel for reduction(+ : s) \
    map(to : m[0:n], sg[0:n]) map(tofrom : s)
  for (long i = 0; i < n; i++) s += (float)(m[i] * sg[i]);
  return s;
}

static void hmaxabs_f32(long n, const half *x, const half *y, float *mx, float *mn) {
  float hi = 0.0f, lo = 65504.0f;
#pragma omp target teams distribute parallel for reduction(max : hi) \
    reduction(min : lo) map(to : x[0:n], y[0:n]) map(tofrom : hi, lo)
  for (long i = 0; i < n; i++) {
    half p = x[i] * y[i];
    const float q = p < (half)0.0f ? -(float)p : (float)p;
    hi = q > hi ? q : hi;
    lo = q < lo ? q : lo;
  }
  *mx = hi;
  *mn = lo;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "red_half_dot", 134217728);
  const long n = a.n < 2 ? 2 : a.n;
  half *buf = malloc(sizeof(half) * 4 * (size_t)n);
  half *x = buf, *y = buf + n, *m = buf + 2 * n, *sg = buf + 3 * n;
  unsigned long st = 16;
  const long stride = n > 1024 ? n / 1024 : 1;
  for (long i = 0; i < n; i++) {
    x[i] = (half)(2.0 * gs_rand(&st) - 1.0);
    y[i] = (half)(2.0 * gs_rand(&st) - 1.0);
    const double r = gs_rand(&st);
    sg[i] = (half)(r < 0.5 ? -1.0f : 1.0f);
    /* sparse mask: one slot in every `stride`, nonzero in 3 of 4 slots */
    m[i] = (half)((i % stride == 0 && r < 0.75) ? (r < 0.375 ? 1.0f : -1.0f) : 0.0f);
  }
  float d32 = 0.0f, dmask = 0.0f, mx = 0.0f, mn = 0.0f;

#pragma omp target data map(to : buf[0:4 * n])
  {
    GS_TIME(a, "hdot_f32acc", { d32 = hdot_f32acc(n, x, y); });
    GS_TIME(a, "hmask_f32acc", { dmask = hmask_f32acc(n, m, sg); });
    GS_TIME(a, "hmaxabs_f32", { hmaxabs_f32(n, x, y, &mx, &mn); });
  }

  double rd = 0.0, scale = 0.0, rmask = 0.0;
  float rmx = 0.0f, rmn = 65504.0f;
  for (long i = 0; i < n; i++) {
    const half p = x[i] * y[i]; /* rounded to half as on the device */
    rd += (double)p;
    scale += fabs((double)p);
    rmask += (double)m[i] * (double)sg[i];
    const float q = p < (half)0.0f ? -(float)p : (float)p;
    rmx = q > rmx ? q : rmx;
    rmn = q < rmn ? q : rmn;
  }
  if ((double)dmask != rmask || mx != rmx || mn != rmn) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL exact results: mask sum %g want %g, "
           "max %g want %g, min %g want %g\n", a.prog, a.n, (double)dmask, rmask,
           (double)mx, (double)rmx, (double)mn, (double)rmn);
    return 1;
  }
  double got[1] = {(double)d32 / scale}, ref[1] = {rd / scale};
  gs_check(&a, got, ref, 1, 1e-5);
  free(buf);
  return 0;
}
