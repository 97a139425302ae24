/* probe_chunk: shows how `distribute` hands iterations to teams. A
 * `target teams distribute parallel for` over n iterations records, for each
 * iteration, omp_get_team_num() and omp_get_thread_num(); iteration 0 also
 * records omp_get_num_teams() and omp_get_num_threads() (this is the one
 * program that reads them). Each iteration also atomically counts its own
 * executions. The host then prints one summary line:
 *   gridsel-bench: prog=probe_chunk n=.. teams_used=.. max_iters_per_team=..
 *     max_iters_per_thread=.. launched_teams=.. launched_threads=..
 * (from the last launch). With clang 19's default cap of 128, teams_used is
 * ceil(n/128) and max_iters_per_team 128 whatever the launch geometry.
 * Check: every iteration ran exactly once per launch, i.e. its count equals
 * WARMUP + REPS. (The team/thread record is geometry-dependent by design; the
 * counts are not, for a fixed number of launches.)
 * N is the trip count. */
#include "common.h"

static void chunk_record(long n, int *team, int *thr, int *hits, int *launch) {
#pragma omp target teams distribute parallel for \
    map(tofrom : team[0:n], thr[0:n], hits[0:n], launch[0:2])
  for (long i = 0; i < n; i++) {
    team[i] = omp_get_team_num();
    thr[i] = omp_get_thread_num();
    if (i == 0) {
      launch[0] = omp_get_num_teams();
      launch[1] = omp_get_num_threads();
    }
#pragma omp atomic update
    hits[i] += 1;
  }
}

int main(int argc, char **argv) {
  gs_args a = gs_parse(argc, argv, "probe_chunk", 16896);
  const long n = a.n;
  int *team = calloc(n, sizeof(int)), *thr = calloc(n, sizeof(int));
  int *hits = calloc(n, sizeof(int)), launch[2] = {0, 0};

#pragma omp target data map(tofrom : team[0:n], thr[0:n], hits[0:n], launch[0:2])
  {
    GS_TIME(a, "chunk_record", { chunk_record(n, team, thr, hits, launch); });
  }

  int maxteam = 0, maxthr = 0;
  for (long i = 0; i < n; i++) {
    if (team[i] > maxteam) maxteam = team[i];
    if (thr[i] > maxthr) maxthr = thr[i];
  }
  long *per_team = calloc((size_t)maxteam + 1, sizeof(long));
  long *per_thr = calloc(((size_t)maxteam + 1) * ((size_t)maxthr + 1), sizeof(long));
  for (long i = 0; i < n; i++) {
    if (team[i] < 0 || thr[i] < 0) continue; /* cannot happen */
    per_team[team[i]]++;
    per_thr[(long)team[i] * (maxthr + 1) + thr[i]]++;
  }
  long used = 0, mteam = 0, mthr = 0;
  for (long t = 0; t <= maxteam; t++) {
    used += per_team[t] > 0;
    if (per_team[t] > mteam) mteam = per_team[t];
  }
  for (long k = 0; k < (long)(maxteam + 1) * (maxthr + 1); k++)
    if (per_thr[k] > mthr) mthr = per_thr[k];
  printf("gridsel-bench: prog=probe_chunk n=%ld teams_used=%ld "
         "max_iters_per_team=%ld max_iters_per_thread=%ld launched_teams=%d "
         "launched_threads=%d\n",
         n, used, mteam, mthr, launch[0], launch[1]);

  double *got = malloc(sizeof(double) * n), *ref = malloc(sizeof(double) * n);
  for (long i = 0; i < n; i++) {
    got[i] = hits[i];
    ref[i] = a.warmup + a.reps;
  }
  gs_check(&a, got, ref, n, 0.0);
  free(team); free(thr); free(hits); free(per_team); free(per_thr);
  free(got); free(ref);
  return 0;
}
