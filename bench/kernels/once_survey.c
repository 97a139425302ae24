/* once_survey: kernels launched once per program run, around one repeated
 * kernel, as in a code that builds its input on the device, iterates, and
 * analyses the result once at the end (a terrain survey, written here from
 * the task: a height field made of Gaussian hills, smoothed, then profiled):
 *   os_init:    ONCE per run: h(x, y) = sum of K = 48 Gaussian hills over the
 *               N x N grid (collapse(2), 48 exp per cell: a long loop of
 *               heavy-ish iterations)
 *   os_smooth:  REPS x (1 + WARMUP) times: one 9-point smoothing sweep
 *               h -> g (collapse(2), out of place, so repetitions leave the
 *               same g)
 *   os_profile: ONCE per run: per row of g (trip count N: few heavy
 *               iterations), its maximum, where it is, its mean and the
 *               number of cells above the row's mean
 *   os_total:   ONCE per run: reduction(+) of g and reduction(max) of the
 *               slope |g(i+1) - g(i)| over the grid
 * The once-per-run kernels are timed once each (reps=1), as ts_shallow_water
 * times its initialisation. The CPU reference runs the same regions on the
 * host (`if(target: 0)`: the region's host version, same code), so a grid
 * that changes a result is caught. Checked to 1e-12 (per-cell arithmetic
 * only, FMA contraction) and the sums relative to their value to 1e-12 (N^2
 * positive terms reassociated by the team reduction).
 * N is the grid edge (1024, 2048, 4096); memory 2 N^2 doubles + 4 N. Pattern:
 * kernels launched once per run (a setup and two analysis kernels). */
#include "common.h"

#define HILLS 48

static void os_init(long n, const double *hill, double *h, int dev) {
  const long t = n * n;
#pragma omp target teams distribute parallel for collapse(2) if (target : dev) \
    map(to : hill[0:4 * HILLS]) map(tofrom : h[0:t])
  for (long j = 0; j < n; j++)
    for (long i = 0; i < n; i++) {
      const double x = (i + 0.5) / n, y = (j + 0.5) / n;
      double z = 0.0;
      for (int k = 0; k < HILLS; k++) {
        const double dx = x - hill[4 * k], dy = y - hill[4 * k + 1];
        z += hill[4 * k + 2] * exp(-(dx * dx + dy * dy) / hill[4 * k + 3]);
      }
      h[j * n + i] = z;
    }
}

static void os_smooth(long n, const double *h, double *g, int dev) {
  const long t = n * n;
#pragma omp target teams distribute parallel for collapse(2) if (target : dev) \
    map(to : h[0:t]) map(tofrom : g[0:t])
  for (long j = 0; j < n; j++)
    for (long i = 0; i < n; i++) {
      const long jm = j > 0 ? j - 1 : 0, jp = j + 1 < n ? j + 1 : n - 1;
      const long im = i > 0 ? i - 1 : 0, ip = i + 1 < n ? i + 1 : n - 1;
      g[j * n + i] = (4.0 * h[j * n + i] + 2.0 * (h[j * n + im] + h[j * n + ip] + h[jm * n + i] +
                                                  h[jp * n + i]) +
                      h[jm * n + im] + h[jm * n + ip] + h[jp * n + im] + h[jp * n + ip]) / 16.0;
    }
}

/* prof: per row max, argmax (as a double), mean, count above the mean */
static void os_profile(long n, const double *g, double *prof, int dev) {
  const long t = n * n;
#pragma omp target teams distribute parallel for if (target : dev) map(to : g[0:t]) \
    map(tofrom : prof[0:4 * n])
  for (long j = 0; j < n; j++) {
    const double *row = g + j * n;
    double mx = row[0], sum = 0.0;
    long at = 0;
    for (long i = 0; i < n; i++) {
      if (row[i] > mx) mx = row[i], at = i;
      sum += row[i];
    }
    const double mean = sum / n;
    long above = 0;
    for (long i = 0; i < n; i++) above += row[i] > mean;
    prof[4 * j] = mx, prof[4 * j + 1] = (double)at, prof[4 * j + 2] = mean;
    prof[4 * j + 3] = (double)above;
  }
}

static void os_total(long n, const double *g, double *tot, int dev) {
  const long t = n * n;
  double sum = 0.0, slope = 0.0;
#pragma omp target teams distribute parallel for collapse(2) if (target : dev) \
    reduction(+ : sum) reduction(max : slope) map(to : g[0:t]) map(tofrom : sum, slope)
  for (long j = 0; j < n; j++)
    for (long i = 0; i < n; i++) {
      sum += g[j * n + i];
      const double d = i + 1 < n ? fabs(g[j * n + i + 1] - g[j * n + i]) : 0.0;
      slope = d > slope ? d : slope;
    }
  tot[0] = sum, tot[1] = slope;
}

/* times a once-per-run kernel's only launch */
#define OS_ONCE(args, label, body)                                                       \
  do {                                                                                   \
    const double os_t0 = gs_now_ms();                                                    \
    body;                                                                                \
    const double os_ms = gs_now_ms() - os_t0;                                            \
    printf("gridsel-bench: prog=%s n=%ld kernel=%s reps=1 median_ms=%.6f min_ms=%.6f "   \
           "max_ms=%.6f\n", (args).prog, (args).n, (label), os_ms, os_ms, os_ms);        \
  } while (0)

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "once_survey", 2048);
  const long n = a.n < 2 ? 2 : a.n, t = n * n;
  double hill[4 * HILLS];
  unsigned long st = 37;
  for (int k = 0; k < HILLS; k++) {
    hill[4 * k] = gs_rand(&st), hill[4 * k + 1] = gs_rand(&st);
    hill[4 * k + 2] = 0.2 + gs_rand(&st), hill[4 * k + 3] = 0.002 + 0.02 * gs_rand(&st);
  }
  double *h = calloc((size_t)t, sizeof(double)), *g = calloc((size_t)t, sizeof(double));
  double *prof = calloc(4 * (size_t)n, sizeof(double)), tot[2] = {0.0, 0.0};

#pragma omp target data map(alloc : h[0:t], g[0:t], prof[0:4 * n])
  {
    OS_ONCE(a, "os_init", { os_init(n, hill, h, 1); });
    GS_TIME(a, "os_smooth", { os_smooth(n, h, g, 1); });
    OS_ONCE(a, "os_profile", { os_profile(n, g, prof, 1); });
    OS_ONCE(a, "os_total", { os_total(n, g, tot, 1); });
#pragma omp target update from(h[0:t], g[0:t], prof[0:4 * n])
  }

  /* CPU: the same regions on the host */
  double *ch = malloc(sizeof(double) * t), *cg = malloc(sizeof(double) * t);
  double *cprof = malloc(sizeof(double) * 4 * n), ctot[2];
  os_init(n, hill, ch, 0);
  os_smooth(n, ch, cg, 0);
  os_profile(n, cg, cprof, 0);
  os_total(n, cg, ctot, 0);
  const long k = 2 * t + 4 * n + 2;
  double *got = malloc(sizeof(double) * k), *ref = malloc(sizeof(double) * k);
  memcpy(got, h, sizeof(double) * t), memcpy(ref, ch, sizeof(double) * t);
  memcpy(got + t, g, sizeof(double) * t), memcpy(ref + t, cg, sizeof(double) * t);
  memcpy(got + 2 * t, prof, sizeof(double) * 4 * n);
  memcpy(ref + 2 * t, cprof, sizeof(double) * 4 * n);
  got[k - 2] = tot[0] / ctot[0], ref[k - 2] = 1.0; /* the sum: relative */
  got[k - 1] = tot[1], ref[k - 1] = ctot[1];
  printf("gridsel-bench: prog=%s n=%ld mean_height=%.6f max_slope=%.6f\n", a.prog, a.n,
         ctot[0] / t, ctot[1]);
  gs_check(&a, got, ref, k, 1e-12);
  free(h); free(g); free(prof); free(ch); free(cg); free(cprof); free(got); free(ref);
  return 0;
}
