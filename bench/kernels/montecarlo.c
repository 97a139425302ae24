/* montecarlo: N independent paths of a geometric random walk (an option-style
 * Monte Carlo). Path p draws its normals from a counter-based generator: the
 * uniform for step t is splitmix64(seed ^ (p * 256 + t)), so every path is a
 * pure function of its index, on the GPU and on the CPU alike. Each path runs
 * 256 steps of S *= exp(mu*dt + sigma*sqrt(dt)*z) (z by Box-Muller) and writes
 * its discounted payoff max(S - K, 0) and its running average price.
 * Kernel 1 (mc_paths): the path loop, embarrassingly parallel, compute-bound.
 * Kernel 2 (mc_sum): reduction(+:sum) over the N payoffs.
 * N is the number of paths. */
#include "common.h"

#define STEPS 256
#define SEED 0x9e3779b97f4a7c15UL

#pragma omp declare target
static inline unsigned long splitmix64(unsigned long x) {
  x += 0x9e3779b97f4a7c15UL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9UL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebUL;
  return x ^ (x >> 31);
}
/* uniform in (0, 1]: never 0, so log() is finite */
static inline double u01(unsigned long ctr) {
  return ((double)(splitmix64(SEED ^ ctr) >> 11) + 1.0) *
         (1.0 / 9007199254740992.0);
}
static inline void mc_path(long p, double *payoff, double *avg) {
  const double s0 = 100.0, strike = 105.0, mu = 0.05, sigma = 0.2;
  const double dt = 1.0 / STEPS, drift = (mu - 0.5 * sigma * sigma) * dt;
  const double vol = sigma * sqrt(dt);
  double s = s0, acc = 0.0;
  for (int t = 0; t < STEPS; t += 2) {
    unsigned long c = (unsigned long)p * STEPS + (unsigned long)t;
    double r = sqrt(-2.0 * log(u01(c))), th = 6.283185307179586 * u01(c + 1);
    s *= exp(drift + vol * r * cos(th));
    acc += s;
    s *= exp(drift + vol * r * sin(th));
    acc += s;
  }
  *payoff = exp(-mu) * (s > strike ? s - strike : 0.0);
  *avg = acc / STEPS;
}
#pragma omp end declare target

static void mc_paths(long n, double *payoff, double *avg) {
#pragma omp target teams distribute parallel for \
    map(tofrom : payoff[0:n], avg[0:n])
  for (long p = 0; p < n; p++) mc_path(p, &payoff[p], &avg[p]);
}

static void mc_sum(long n, const double *payoff, double *sum) {
  double s = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : s) \
    map(to : payoff[0:n]) map(tofrom : s)
  for (long p = 0; p < n; p++) s += payoff[p];
  *sum = s;
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "montecarlo", 1048576);
  const long n = a.n;
  /* got/ref layout: payoff[n], avg[n], sum */
  double *got = calloc(2 * (size_t)n + 1, sizeof(double));
  double *ref = calloc(2 * (size_t)n + 1, sizeof(double));
  double *payoff = got, *avg = got + n, sum = 0.0;

#pragma omp target data map(tofrom : payoff[0:n], avg[0:n])
  {
    GS_TIME(a, "mc_paths", { mc_paths(n, payoff, avg); });
    GS_TIME(a, "mc_sum", { mc_sum(n, payoff, &sum); });
  }
  got[2 * n] = sum;

  double rs = 0.0;
  for (long p = 0; p < n; p++) {
    mc_path(p, &ref[p], &ref[n + p]);
    rs += ref[p];
  }
  ref[2 * n] = rs;
  gs_check(&a, got, ref, 2 * n + 1, 1e-9);
  free(got); free(ref);
  return 0;
}
