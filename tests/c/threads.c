/* Eight host threads launching the same kernel with different trip counts,
 * ROUNDS times each. Prints one checksum per thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define THREADS 8
#define ROUNDS 25
#define MAXN 800

static uint64_t data[THREADS][MAXN];

static void work(uint64_t *v, int n) {
#pragma omp target teams distribute parallel for map(tofrom : v[0:n])
  for (int i = 0; i < n; i++) v[i] = v[i] * 5 + (uint64_t)i + 1;
}

static void *run(void *arg) {
  int t = (int)(intptr_t)arg;
  int n = 100 * (t + 1); /* trip counts 100, 200, ..., 800 */
  for (int r = 0; r < ROUNDS; r++) work(data[t], n);
  return NULL;
}

int main(void) {
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, run, (void *)(intptr_t)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < THREADS; t++) {
    uint64_t s = 0;
    for (int i = 0; i < 100 * (t + 1); i++) s = s * 31 + data[t][i];
    printf("thread %d: %llu\n", t, (unsigned long long)s);
  }
  printf("launches %d\n", THREADS * ROUNDS);
  return 0;
}
