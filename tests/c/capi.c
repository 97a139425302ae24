/* Exercises include/gridsel.h against libgridsel.so; tests/capi.rs checks
 * the printed lines. One line per check: `<name> <rc> [<fields>...]`. */
#include "gridsel.h"

#include <stdint.h>
#include <stdio.h>

static void select_and_print(const char *name, const gridsel_device *d, const gridsel_kernel *k,
                             uint64_t trip, const char *policy) {
  gridsel_grid g = {0, 0, 0, 0, 99};
  int rc = gridsel_select(d, k, trip, policy, &g);
  printf("%s %d threads %u blocks %u llvm_threads %u llvm_blocks %u class %u\n", name, rc, g.threads,
         g.blocks, g.llvm_threads, g.llvm_blocks, g.loop_class);
}

int main(void) {
  printf("version %s\n", gridsel_version());
  printf("header_version %s %d %d %d\n", GRIDSEL_VERSION_STRING, GRIDSEL_VERSION_MAJOR,
         GRIDSEL_VERSION_MINOR, GRIDSEL_VERSION_PATCH);

  gridsel_device titan;
  int rc = gridsel_device_preset("titanx-pascal", &titan);
  printf("preset_titan %d sm_count %u sm_arch %u\n", rc, titan.sm_count, titan.sm_arch);
  titan.threads_per_block = 64;
  gridsel_kernel k64 = {64, 0, 0, 0, GRIDSEL_MODE_SPMD, GRIDSEL_NESTING_NONE};
  select_and_print("titan_trip10", &titan, &k64, 10, "lloyd");
  select_and_print("titan_trip131072", &titan, &k64, 128 * 1024, "lloyd");
  /* Lloyd et al.'s Fig. 7 (`gridsel select`'s default for a kernel described by flags), and
   * the same kernel stated to nest. */
  gridsel_device titan_paper;
  gridsel_device_preset("titanx-pascal", &titan_paper);
  gridsel_kernel fig7 = {32, 0, 0, 0, GRIDSEL_MODE_SPMD, GRIDSEL_NESTING_NONE};
  select_and_print("titan_fig7", &titan_paper, &fig7, 10, "lloyd");
  fig7.nesting = GRIDSEL_NESTING_MAY;
  select_and_print("titan_fig7_nested", &titan_paper, &fig7, 10, "lloyd");

  gridsel_device h100;
  rc = gridsel_device_preset("h100", &h100);
  printf("preset_h100 %d sm_count %u\n", rc, h100.sm_count);
  gridsel_kernel unknown = {0, 0, 0, 0, GRIDSEL_MODE_UNKNOWN, GRIDSEL_NESTING_UNKNOWN};
  gridsel_kernel flat = {0, 0, 0, 0, GRIDSEL_MODE_UNKNOWN, GRIDSEL_NESTING_NONE};
  select_and_print("h100_lloyd_1000", &h100, &flat, 1000, "lloyd");
  select_and_print("h100_fixed", &h100, &flat, 1000, "fixed:64,7");
  select_and_print("h100_unknown_lloyd_1000", &h100, &unknown, 1000, "lloyd");
  select_and_print("h100_unknown_fixed", &h100, &unknown, 1000, "fixed:64,7");
  gridsel_kernel spmd128 = {32, 0, 0, 128, GRIDSEL_MODE_SPMD, GRIDSEL_NESTING_NONE};
  select_and_print("h100_forest", &h100, &spmd128, 1 << 20, "forest");
  select_and_print("h100_auto_trip0", &h100, &spmd128, 0, "auto");
  select_and_print("h100_fixed_trip0", &h100, &spmd128, 0, "fixed:64,7");

  gridsel_grid g;
  printf("null_device %d\n", gridsel_select(NULL, &unknown, 10, "lloyd", &g));
  printf("null_kernel %d\n", gridsel_select(&h100, NULL, 10, "lloyd", &g));
  printf("null_policy %d\n", gridsel_select(&h100, &unknown, 10, NULL, &g));
  printf("null_out %d\n", gridsel_select(&h100, &unknown, 10, "lloyd", NULL));
  printf("null_preset_name %d\n", gridsel_device_preset(NULL, &h100));
  printf("null_preset_out %d\n", gridsel_device_preset("h100", NULL));
  printf("policy_nope %d\n", gridsel_select(&h100, &unknown, 10, "nope", &g));
  printf("policy_sweep %d\n", gridsel_select(&h100, &unknown, 10, "sweep", &g));
  printf("preset_unknown %d\n", gridsel_device_preset("gtx9000", &titan));
  gridsel_device broken = h100;
  broken.sm_count = 0;
  printf("sm_count_0 %d\n", gridsel_select(&broken, &unknown, 10, "lloyd", &g));
  return 0;
}
