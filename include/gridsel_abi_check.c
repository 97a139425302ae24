/* Compiled by build.rs: fails the build if gridsel.h drifts from the Rust
 * definitions in src/api.rs (CDevice, CKernel, CGrid). */
#include "gridsel.h"

_Static_assert(sizeof(gridsel_device) == 13 * 4, "gridsel_device layout");
_Static_assert(sizeof(gridsel_kernel) == 6 * 4, "gridsel_kernel layout");
_Static_assert(sizeof(gridsel_grid) == 5 * 4, "gridsel_grid layout");

/* A symbol, so the archive is not empty. */
int gridsel_abi_check_marker;
