/* red_argmin: argmin/argmax-style cross-team reductions on a struct
 * {value, index} with a user-defined reduction whose combiner keeps the
 * smaller value and, on ties, the smaller index (so the answer does not
 * depend on the grid), as nearest-neighbour, k-means and optimisation codes
 * write them. `target teams distribute parallel for reduction(udr : best)`
 * over N points (structure of arrays, double):
 *   argmin_nearest: the point nearest a query q: min over i of |p_i - q|^2
 *                   with its index (16 B per partial)
 *   minmaxloc:      min and max of the cost f_i = sum_d (p_id - c_d)^2 w_d
 *                   + 0.1 cos(7 p_ix) together with their indices in one
 *                   32-B struct (MINLOC and MAXLOC at once)
 * Indices are checked exactly, values to 1e-12 (the CPU evaluates the same
 * expressions, shared through declare target; a planted duplicate of the
 * nearest point checks the tie rule).
 * N is the point count; memory 3 N doubles (1.6 GB at N = 2^26).
 * Pattern: cross-team reduction, argmin with a struct (user-defined). */
#include "common.h"

typedef struct { double v; long i; } vloc;
typedef struct { double vmin; long imin; double vmax; long imax; } mmloc;

#pragma omp declare target
static inline vloc vloc_min(vloc a, vloc b) {
  return (b.v < a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}
static inline mmloc mm_merge(mmloc a, mmloc b) {
  if (b.vmin < a.vmin || (b.vmin == a.vmin && b.imin < a.imin)) a.vmin = b.vmin, a.imin = b.imin;
  if (b.vmax > a.vmax || (b.vmax == a.vmax && b.imax < a.imax)) a.vmax = b.vmax, a.imax = b.imax;
  return a;
}
static inline double dist2(double x, double y, double z) {
  const double dx = x - 0.3, dy = y - 0.7, dz = z - 0.5;
  return dx * dx + dy * dy + dz * dz;
}
static inline double cost(double x, double y, double z) {
  const double dx = x - 0.25, dy = y - 0.5, dz = z - 0.75;
  return 1.0 * dx * dx + 2.0 * dy * dy + 0.5 * dz * dz + 0.1 * cos(7.0 * x);
}
#pragma omp end declare target

#pragma omp declare reduction(vmin : vloc : omp_out = vloc_min(omp_out, omp_in)) \
    initializer(omp_priv = (vloc){INFINITY, -1})
#pragma omp declare reduction(mm : mmloc : omp_out = mm_merge(omp_out, omp_in)) \
    initializer(omp_priv = (mmloc){INFINITY, -1, -INFINITY, -1})

static vloc argmin_nearest(long n, const double *px, const double *py, const double *pz) {
  vloc best = {INFINITY, -1};
#pragma omp target teams distribute parallel for reduction(vmin : best) \
    map(to : px[0:n], py[0:n], pz[0:n]) map(tofrom : best)
  for (long i = 0; i < n; i++) {
    const vloc c = {dist2(px[i], py[i], pz[i]), i};
    best = vloc_min(best, c);
  }
  return best;
}

static mmloc minmaxloc(long n, const double *px, const double *py, const double *pz) {
  mmloc r = {INFINITY, -1, -INFINITY, -1};
#pragma omp target teams distribute parallel for reduction(mm : r) \
    map(to : px[0:n], py[0:n], pz[0:n]) map(tofrom : r)
  for (long i = 0; i < n; i++) {
    const double f = cost(px[i], py[i], pz[i]);
    const mmloc c = {f, i, f, i};
    r = mm_merge(r, c);
  }
  return r;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "red_argmin", 33554432);
  const long n = a.n < 4 ? 4 : a.n;
  double *buf = malloc(sizeof(double) * 3 * (size_t)n);
  double *px = buf, *py = buf + n, *pz = buf + 2 * n;
  unsigned long st = 555;
  for (long i = 0; i < 3 * n; i++) buf[i] = gs_rand(&st);
  /* a duplicated nearest point: the smaller index must win */
  const long d1 = n / 3, d2 = (2 * n) / 3;
  px[d1] = px[d2] = 0.3 + 1e-9;
  py[d1] = py[d2] = 0.7;
  pz[d1] = pz[d2] = 0.5;
  vloc nb;
  mmloc mm;

#pragma omp target data map(to : buf[0:3 * n])
  {
    GS_TIME(a, "argmin_nearest", { nb = argmin_nearest(n, px, py, pz); });
    GS_TIME(a, "minmaxloc", { mm = minmaxloc(n, px, py, pz); });
  }

  vloc rb = {INFINITY, -1};
  mmloc rm = {INFINITY, -1, -INFINITY, -1};
  for (long i = 0; i < n; i++) {
    const vloc c = {dist2(px[i], py[i], pz[i]), i};
    rb = vloc_min(rb, c);
    const double f = cost(px[i], py[i], pz[i]);
    const mmloc cm = {f, i, f, i};
    rm = mm_merge(rm, cm);
  }
  printf("gridsel-bench: prog=%s n=%ld nearest=%ld (%.3e) argmin=%ld argmax=%ld\n",
         a.prog, a.n, nb.i, nb.v, mm.imin, mm.imax);
  if (nb.i != rb.i || mm.imin != rm.imin || mm.imax != rm.imax) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL indices nearest %ld want %ld, "
           "argmin %ld want %ld, argmax %ld want %ld\n", a.prog, a.n, nb.i, rb.i,
           mm.imin, rm.imin, mm.imax, rm.imax);
    return 1;
  }
  double got[3] = {nb.v, mm.vmin, mm.vmax}, ref[3] = {rb.v, rm.vmin, rm.vmax};
  gs_check(&a, got, ref, 3, 1e-12);
  free(buf);
  return 0;
}
