/* red_half_dot: half-precision dot products and reductions (`_Float16`,
 * which clang 19 supports both for nvptx and for the x86-64 host) over N
 * elements, `target teams distribute parallel for reduction(...)`:
 *   hdot_f32acc: sum_i x_i y_i with x, y stored in _Float16, the product
 *                formed in _Float16 and accumulated in a float reduction
 *                variable (the usual mixed-precision dot; 4 B per partial)
 *   hdot_f16acc: the same dot with a _Float16 reduction variable (2 B per
 *                partial). A half accumulator can only be exact for small
 *                integer sums (11-bit significand): here m_i in {-1, 0, 1}
 *                is a sparse mask (at most 1024 nonzeros) and s_i in
 *                {-1, 1}, so every partial sum, in any order, is an integer
 *                of magnitude <= 1024 and the result is exact for any grid.
 *                (A dense half accumulation stagnates and depends on the
 *                grid, so it cannot be checked.)
 *   hmaxabs_f16: max_i |x_i y_i| and min_i |x_i y_i| in _Float16
 *                (reduction(max), reduction(min) on 2-B variables; exact)
 * x, y are uniform in [-1, 1) rounded to half; the float dot is checked
 * against a double reference relative to sum |x_i y_i| (1e-5).
 * N is the element count; memory 4 halves per element (2 GB at N = 2^28).
 * Pattern: cross-team reduction in half precision. */
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

static half hdot_f16acc(long n, const half *m, const half *sg) {
  half s = (half)0.0f;
#pragma omp target teams distribute parallel for reduction(+ : s) \
    map(to : m[0:n], sg[0:n]) map(tofrom : s)
  for (long i = 0; i < n; i++) s += m[i] * sg[i];
  return s;
}

static void hmaxabs_f16(long n, const half *x, const half *y, half *mx, half *mn) {
  half hi = (half)0.0f, lo = (half)65504.0f;
#pragma omp target teams distribute parallel for reduction(max : hi) \
    reduction(min : lo) map(to : x[0:n], y[0:n]) map(tofrom : hi, lo)
  for (long i = 0; i < n; i++) {
    half p = x[i] * y[i];
    p = p < (half)0.0f ? -p : p;
    hi = p > hi ? p : hi;
    lo = p < lo ? p : lo;
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
  float d32 = 0.0f;
  half d16 = (half)0.0f, mx = (half)0.0f, mn = (half)0.0f;

#pragma omp target data map(to : buf[0:4 * n])
  {
    GS_TIME(a, "hdot_f32acc", { d32 = hdot_f32acc(n, x, y); });
    GS_TIME(a, "hdot_f16acc", { d16 = hdot_f16acc(n, m, sg); });
    GS_TIME(a, "hmaxabs_f16", { hmaxabs_f16(n, x, y, &mx, &mn); });
  }

  double rd = 0.0, scale = 0.0, r16 = 0.0;
  half rmx = (half)0.0f, rmn = (half)65504.0f;
  for (long i = 0; i < n; i++) {
    half p = x[i] * y[i]; /* rounded to half as on the device */
    rd += (double)p;
    scale += fabs((double)p);
    r16 += (double)m[i] * (double)sg[i];
    p = p < (half)0.0f ? -p : p;
    rmx = p > rmx ? p : rmx;
    rmn = p < rmn ? p : rmn;
  }
  if ((double)d16 != r16 || mx != rmx || mn != rmn) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL half results: dot16 %g want %g, "
           "max %g want %g, min %g want %g\n", a.prog, a.n, (double)d16, r16,
           (double)mx, (double)rmx, (double)mn, (double)rmn);
    return 1;
  }
  double got[1] = {(double)d32 / scale}, ref[1] = {rd / scale};
  gs_check(&a, got, ref, 1, 1e-5);
  free(buf);
  return 0;
}
