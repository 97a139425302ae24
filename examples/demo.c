/* gridsel demo: one kernel of each loop class, with results checked.
 *   short: 100 iterations of a heavy dependent recurrence (fewer than the SMs)
 *   ideal: 20 000 iterations of moderate work
 *   long:  8 000 000 iterations of a streaming triad
 * plus a plain `target` region, which gridsel must leave alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const int ns = 100, ni = 20000, nl = 8000000;
  double *s = malloc(sizeof(double) * ns), *x = malloc(sizeof(double) * ni);
  double *a = malloc(sizeof(double) * nl), *b = malloc(sizeof(double) * nl);
  for (int i = 0; i < nl; i++) b[i] = i * 0.5;
  double one = 0.0;

#pragma omp target teams distribute parallel for map(from : s[0:ns])
  for (int i = 0; i < ns; i++) {
    double v = i;
    for (int k = 0; k < 20000; k++) v = v * 0.999 + 1.0;
    s[i] = v;
  }
#pragma omp target teams distribute parallel for map(from : x[0:ni])
  for (int i = 0; i < ni; i++) {
    double v = 0;
    for (int k = 1; k <= 64; k++) v += sin(i * 1e-3 * k) / k;
    x[i] = v;
  }
#pragma omp target teams distribute parallel for map(to : b[0:nl]) map(from : a[0:nl])
  for (int i = 0; i < nl; i++) a[i] = 2.0 * b[i] + 1.0;
#pragma omp target map(tofrom : one)
  one += 1.0;

  int bad = 0;
  for (int i = 0; i < ns; i++) {
    double v = i;
    for (int k = 0; k < 20000; k++) v = v * 0.999 + 1.0;
    bad += fabs(s[i] - v) > 1e-9 * fabs(v);
  }
  for (int i = 0; i < ni; i += 997) {
    double v = 0;
    for (int k = 1; k <= 64; k++) v += sin(i * 1e-3 * k) / k;
    bad += fabs(x[i] - v) > 1e-12;
  }
  for (int i = 0; i < nl; i += 4099) bad += a[i] != 2.0 * b[i] + 1.0;
  bad += one != 1.0;
  printf("demo: %s\n", bad ? "WRONG RESULTS" : "results correct");
  return bad != 0;
}
