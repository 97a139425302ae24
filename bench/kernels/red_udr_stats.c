/* red_udr_stats: cross-team reductions with user-defined reductions
 * (`declare reduction` over structs), as statistics, signal-processing and
 * geometry codes write them. `target teams distribute parallel for
 * reduction(udr : acc)` over N points:
 *   udr_moments: struct {sum, sumsq, min, max} of the samples x_i
 *                (32 B per partial; mean, variance and range on the host)
 *   udr_phasor:  complex struct {re, im}: sum_i w_i (cos t_i, sin t_i), the
 *                phase-coherence sum of N weighted phasors (16 B, sin/cos)
 *   udr_bbox:    axis-aligned bounding box {min x, y, z, max x, y, z} of N
 *                points (48 B; combiner is a componentwise min/max)
 * Extremes are exact; sums are checked to 1e-10 relative.
 * N is the point count; memory 6 N doubles (3.2 GB at N = 2^26).
 * Pattern: cross-team reduction, user-defined reduction on a struct. */
#include "common.h"

typedef struct { double sum, sumsq, mn, mx; } moments;
typedef struct { double re, im; } cplx;
typedef struct { double lo[3], hi[3]; } bbox;

#pragma omp declare target
static inline moments moments_merge(moments a, moments b) {
  moments r = {a.sum + b.sum, a.sumsq + b.sumsq, a.mn < b.mn ? a.mn : b.mn,
               a.mx > b.mx ? a.mx : b.mx};
  return r;
}
static inline bbox bbox_merge(bbox a, bbox b) {
  for (int d = 0; d < 3; d++) {
    a.lo[d] = b.lo[d] < a.lo[d] ? b.lo[d] : a.lo[d];
    a.hi[d] = b.hi[d] > a.hi[d] ? b.hi[d] : a.hi[d];
  }
  return a;
}
#pragma omp end declare target

#pragma omp declare reduction(mom : moments : omp_out = moments_merge(omp_out, omp_in)) \
    initializer(omp_priv = (moments){0.0, 0.0, INFINITY, -INFINITY})
#pragma omp declare reduction(csum : cplx : omp_out.re += omp_in.re, omp_out.im += omp_in.im) \
    initializer(omp_priv = (cplx){0.0, 0.0})
#pragma omp declare reduction(box : bbox : omp_out = bbox_merge(omp_out, omp_in)) \
    initializer(omp_priv = (bbox){{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}})

static moments udr_moments(long n, const double *x) {
  moments m = {0.0, 0.0, INFINITY, -INFINITY};
#pragma omp target teams distribute parallel for reduction(mom : m) \
    map(to : x[0:n]) map(tofrom : m)
  for (long i = 0; i < n; i++) {
    const double v = x[i];
    m.sum += v;
    m.sumsq += v * v;
    m.mn = v < m.mn ? v : m.mn;
    m.mx = v > m.mx ? v : m.mx;
  }
  return m;
}

static cplx udr_phasor(long n, const double *t, const double *w) {
  cplx z = {0.0, 0.0};
#pragma omp target teams distribute parallel for reduction(csum : z) \
    map(to : t[0:n], w[0:n]) map(tofrom : z)
  for (long i = 0; i < n; i++) {
    z.re += w[i] * cos(t[i]);
    z.im += w[i] * sin(t[i]);
  }
  return z;
}

static bbox udr_bbox(long n, const double *px, const double *py, const double *pz) {
  bbox b = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
#pragma omp target teams distribute parallel for reduction(box : b) \
    map(to : px[0:n], py[0:n], pz[0:n]) map(tofrom : b)
  for (long i = 0; i < n; i++) {
    const double p[3] = {px[i], py[i], pz[i]};
    for (int d = 0; d < 3; d++) {
      b.lo[d] = p[d] < b.lo[d] ? p[d] : b.lo[d];
      b.hi[d] = p[d] > b.hi[d] ? p[d] : b.hi[d];
    }
  }
  return b;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "red_udr_stats", 33554432);
  const long n = a.n < 8 ? 8 : a.n;
  double *buf = malloc(sizeof(double) * 6 * (size_t)n);
  double *x = buf, *t = buf + n, *w = buf + 2 * n;
  double *px = buf + 3 * n, *py = buf + 4 * n, *pz = buf + 5 * n;
  unsigned long st = 99;
  for (long i = 0; i < 6 * n; i++) buf[i] = gs_rand(&st);
  for (long i = 0; i < n; i++) {
    x[i] = 10.0 * x[i] - 3.0;
    t[i] = 6.283185307179586 * t[i] + 0.5 * sin((double)i * 1e-3); /* a slight coherence */
    px[i] = 2.0 * px[i] - 1.0; py[i] = 3.0 * py[i]; pz[i] = -pz[i];
  }
  px[n / 5] = -4.0; py[n - 1] = 7.5; pz[3] = 2.25; x[n / 2] = 42.0;
  moments m;
  cplx z;
  bbox b;

#pragma omp target data map(to : buf[0:6 * n])
  {
    GS_TIME(a, "udr_moments", { m = udr_moments(n, x); });
    GS_TIME(a, "udr_phasor", { z = udr_phasor(n, t, w); });
    GS_TIME(a, "udr_bbox", { b = udr_bbox(n, px, py, pz); });
  }

  moments rm = {0.0, 0.0, INFINITY, -INFINITY};
  cplx rz = {0.0, 0.0};
  double az = 0.0; /* sum |w|: the scale of the phasor sum */
  bbox rb = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
  for (long i = 0; i < n; i++) {
    moments one = {x[i], x[i] * x[i], x[i], x[i]};
    rm = moments_merge(rm, one);
    rz.re += w[i] * cos(t[i]);
    rz.im += w[i] * sin(t[i]);
    az += w[i];
    bbox pb = {{px[i], py[i], pz[i]}, {px[i], py[i], pz[i]}};
    rb = bbox_merge(rb, pb);
  }
  /* exact: extremes; relative: sums (phasor relative to sum |w|) */
  int exact = m.mn == rm.mn && m.mx == rm.mx;
  for (int d = 0; d < 3; d++) exact = exact && b.lo[d] == rb.lo[d] && b.hi[d] == rb.hi[d];
  if (!exact) {
    printf("gridsel-bench: prog=%s n=%ld check=FAIL extremes differ\n", a.prog, a.n);
    return 1;
  }
  double got[4] = {m.sum / rm.sum, m.sumsq / rm.sumsq, z.re / az, z.im / az};
  double ref[4] = {1.0, 1.0, rz.re / az, rz.im / az};
  printf("gridsel-bench: prog=%s n=%ld mean=%.6f var=%.6f coherence=%.6f\n", a.prog, a.n,
         rm.sum / n, rm.sumsq / n - (rm.sum / n) * (rm.sum / n),
         sqrt(rz.re * rz.re + rz.im * rz.im) / az);
  gs_check(&a, got, ref, 4, 1e-10);
  free(buf);
  return 0;
}
