/* cg: ITERS = 8 iterations of the conjugate-gradient method on A x = b, A an
 * N x N symmetric, strictly diagonally dominant (so positive definite) sparse
 * matrix in CSR form: couplings at offsets +-1 and +-BAND with weights from a
 * hash of the (min, max) index pair, so A is exactly symmetric.
 * Timed kernels, each idempotent on its own:
 *   cg_spmv   q = A p                          (CSR, one row per iteration)
 *   cg_dot    r . r                            (reduction(+))
 *   cg_axpy   z = x + alpha p                  (streaming, out of place)
 *   cg_solve  the whole solve: x = x0, r = b - A x0, p = r, then ITERS
 *             iterations of spmv, two dots and the x/r and p updates. It
 *             restarts from x0 every repetition, so the result never drifts.
 * The CPU runs the same iterations; x and the final |r|^2 are checked.
 * N is the number of rows. */
#include "common.h"

#define ITERS 8
#define BAND 64

static double coupling(long i, long j) { /* symmetric in (i, j) */
  unsigned long lo = (unsigned long)(i < j ? i : j), hi = (unsigned long)(i < j ? j : i);
  unsigned long h = lo * 0x9e3779b97f4a7c15UL ^ (hi + 0x632be59bd9b4e019UL);
  h ^= h >> 29; h *= 0xbf58476d1ce4e5b9UL; h ^= h >> 32;
  return -0.25 - 0.75 * (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

static void k_spmv(long n, long nnz, const long *rp, const int *ci,
                   const double *va, const double *p, double *q) {
#pragma omp target teams distribute parallel for \
    map(to : rp[0:n + 1], ci[0:nnz], va[0:nnz], p[0:n]) map(tofrom : q[0:n])
  for (long i = 0; i < n; i++) {
    double s = 0.0;
    for (long e = rp[i]; e < rp[i + 1]; e++) s += va[e] * p[ci[e]];
    q[i] = s;
  }
}

static double k_dot(long n, const double *u, const double *v) {
  double s = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : s) \
    map(to : u[0:n], v[0:n]) map(tofrom : s)
  for (long i = 0; i < n; i++) s += u[i] * v[i];
  return s;
}

static void k_axpy(long n, double alpha, const double *x, const double *y,
                   double *z) {
#pragma omp target teams distribute parallel for \
    map(to : x[0:n], y[0:n]) map(tofrom : z[0:n])
  for (long i = 0; i < n; i++) z[i] = x[i] + alpha * y[i];
}

/* x = x0; r = b - A x0 (A x0 passed in as ax0); p = r */
static void k_init(long n, const double *x0, const double *b,
                   const double *ax0, double *x, double *r, double *p) {
#pragma omp target teams distribute parallel for \
    map(to : x0[0:n], b[0:n], ax0[0:n]) map(tofrom : x[0:n], r[0:n], p[0:n])
  for (long i = 0; i < n; i++) {
    x[i] = x0[i];
    r[i] = b[i] - ax0[i];
    p[i] = r[i];
  }
}

/* x += alpha p; r -= alpha q */
static void k_update_xr(long n, double alpha, const double *p, const double *q,
                        double *x, double *r) {
#pragma omp target teams distribute parallel for \
    map(to : p[0:n], q[0:n]) map(tofrom : x[0:n], r[0:n])
  for (long i = 0; i < n; i++) {
    x[i] += alpha * p[i];
    r[i] -= alpha * q[i];
  }
}

/* p = r + beta p */
static void k_update_p(long n, double beta, const double *r, double *p) {
#pragma omp target teams distribute parallel for \
    map(to : r[0:n]) map(tofrom : p[0:n])
  for (long i = 0; i < n; i++) p[i] = r[i] + beta * p[i];
}

static double cg_solve(long n, long nnz, const long *rp, const int *ci,
                       const double *va, const double *b, const double *x0,
                       double *x, double *r, double *p, double *q) {
  k_spmv(n, nnz, rp, ci, va, x0, q);
  k_init(n, x0, b, q, x, r, p);
  double rr = k_dot(n, r, r);
  for (int it = 0; it < ITERS && rr > 0.0; it++) { /* stop if converged exactly */
    k_spmv(n, nnz, rp, ci, va, p, q);
    double alpha = rr / k_dot(n, p, q);
    k_update_xr(n, alpha, p, q, x, r);
    double rr_new = k_dot(n, r, r);
    k_update_p(n, rr_new / rr, r, p);
    rr = rr_new;
  }
  return rr;
}

static double cpu_dot(long n, const double *u, const double *v) {
  double s = 0.0;
  for (long i = 0; i < n; i++) s += u[i] * v[i];
  return s;
}
static void cpu_spmv(long n, const long *rp, const int *ci, const double *va,
                     const double *p, double *q) {
  for (long i = 0; i < n; i++) {
    double s = 0.0;
    for (long e = rp[i]; e < rp[i + 1]; e++) s += va[e] * p[ci[e]];
    q[i] = s;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "cg", 4194304);
  const long n = a.n;
  const long offs[5] = {-BAND, -1, 0, 1, BAND};
  long *rp = malloc(sizeof(long) * (n + 1));
  rp[0] = 0;
  for (long i = 0; i < n; i++) {
    long c = 0;
    for (int k = 0; k < 5; k++) c += (i + offs[k] >= 0 && i + offs[k] < n);
    rp[i + 1] = rp[i] + c;
  }
  const long nnz = rp[n];
  int *ci = malloc(sizeof(int) * nnz);
  double *va = malloc(sizeof(double) * nnz);
  for (long i = 0; i < n; i++) {
    long e = rp[i], diag_e = -1;
    double off = 0.0;
    for (int k = 0; k < 5; k++) {
      long j = i + offs[k];
      if (j < 0 || j >= n) continue;
      ci[e] = (int)j;
      if (j == i) { diag_e = e; va[e] = 0.0; }
      else { va[e] = coupling(i, j); off += fabs(va[e]); }
      e++;
    }
    va[diag_e] = off + 1.0;
  }
  double *b = malloc(sizeof(double) * n), *x0 = malloc(sizeof(double) * n);
  double *x = calloc(n, sizeof(double)), *r = calloc(n, sizeof(double));
  double *p = calloc(n, sizeof(double)), *q = calloc(n, sizeof(double));
  double *z = calloc(n, sizeof(double));
  unsigned long s = 31337;
  for (long i = 0; i < n; i++) { b[i] = gs_rand(&s); x0[i] = 0.0; }
  double rr = 0.0, dot = 0.0;

#pragma omp target data map(to : rp[0:n + 1], ci[0:nnz], va[0:nnz], b[0:n], \
                                x0[0:n]) \
    map(tofrom : x[0:n], r[0:n], p[0:n], q[0:n], z[0:n])
  {
    /* p = r = b, so the single kernels see real data */
    k_spmv(n, nnz, rp, ci, va, x0, q);
    k_init(n, x0, b, q, x, r, p);
    GS_TIME(a, "cg_spmv", { k_spmv(n, nnz, rp, ci, va, p, q); });
    GS_TIME(a, "cg_dot", { dot = k_dot(n, r, r); });
    GS_TIME(a, "cg_axpy", { k_axpy(n, 0.5, x0, p, z); });
    GS_TIME(a, "cg_solve",
            { rr = cg_solve(n, nnz, rp, ci, va, b, x0, x, r, p, q); });
  }

  /* CPU: the same iterations */
  double *cx = malloc(sizeof(double) * n), *cr = malloc(sizeof(double) * n);
  double *cp = malloc(sizeof(double) * n), *cq = malloc(sizeof(double) * n);
  cpu_spmv(n, rp, ci, va, x0, cq);
  for (long i = 0; i < n; i++) { cx[i] = x0[i]; cr[i] = b[i] - cq[i]; cp[i] = cr[i]; }
  double crr = cpu_dot(n, cr, cr);
  const double cdot = crr;
  for (int it = 0; it < ITERS && crr > 0.0; it++) {
    cpu_spmv(n, rp, ci, va, cp, cq);
    double alpha = crr / cpu_dot(n, cp, cq);
    for (long i = 0; i < n; i++) { cx[i] += alpha * cp[i]; cr[i] -= alpha * cq[i]; }
    double crr_new = cpu_dot(n, cr, cr);
    for (long i = 0; i < n; i++) cp[i] = cr[i] + crr_new / crr * cp[i];
    crr = crr_new;
  }
  /* got/ref: x[n], z[n] (= x0 + 0.5 b), dot, relative final |r|^2 */
  double *got = malloc(sizeof(double) * (2 * n + 2));
  double *ref = malloc(sizeof(double) * (2 * n + 2));
  for (long i = 0; i < n; i++) {
    got[i] = x[i]; ref[i] = cx[i];
    got[n + i] = z[i]; ref[n + i] = x0[i] + 0.5 * b[i];
  }
  got[2 * n] = dot / cdot; ref[2 * n] = 1.0;
  got[2 * n + 1] = rr / cdot; ref[2 * n + 1] = crr / cdot;
  gs_check(&a, got, ref, 2 * n + 2, 1e-9);
  free(rp); free(ci); free(va); free(b); free(x0); free(x); free(r); free(p);
  free(q); free(z); free(cx); free(cr); free(cp); free(cq); free(got); free(ref);
  return 0;
}
