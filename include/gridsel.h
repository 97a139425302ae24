/*
 * gridsel.h: the C API of libgridsel.so.
 *
 * libgridsel.so is normally loaded with LD_PRELOAD under an unmodified clang
 * OpenMP offload program, where it interposes libomptarget's
 * __tgt_register_lib, __tgt_unregister_lib and __tgt_target_kernel and needs
 * no header at all. This header exposes the decision itself, so tools and
 * runtimes can ask which grid a policy gives a kernel without launching it.
 *
 * Link with -lgridsel. Every function is thread-safe, never aborts, and
 * reports bad arguments through its return value.
 *
 * Linking -lgridsel into an OpenMP offload program also interposes its own
 * launches: the library exports __tgt_register_lib, __tgt_unregister_lib and
 * __tgt_target_kernel, so when it comes before libomptarget in the link order
 * (as -lgridsel on clang's command line does), every target region of the
 * program takes gridsel's launch path, with GRIDSEL_POLICY or the default
 * policy choosing its grid, exactly as under LD_PRELOAD. Set
 * GRIDSEL_POLICY=llvm to keep libomptarget's own grids.
 */
#ifndef GRIDSEL_H
#define GRIDSEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; gridsel_version() gives the library's. */
#define GRIDSEL_VERSION_MAJOR 0
#define GRIDSEL_VERSION_MINOR 1
#define GRIDSEL_VERSION_PATCH 0
#define GRIDSEL_VERSION_STRING "0.1.0"

/* Return codes. */
#define GRIDSEL_OK 0
#define GRIDSEL_ERR_NULL (-1)     /* a required pointer was NULL */
#define GRIDSEL_ERR_POLICY (-2)   /* unknown policy, or one that decides only at run time (sweep) */
#define GRIDSEL_ERR_DEVICE (-3)   /* unknown preset, or a device with a zero limit */
#define GRIDSEL_ERR_INTERNAL (-4) /* an internal error was caught; nothing was written */

/* Loop classes of Lloyd et al. 2018. */
#define GRIDSEL_CLASS_NONE 0  /* no trip count */
#define GRIDSEL_CLASS_SHORT 1 /* trip count <= SM count */
#define GRIDSEL_CLASS_IDEAL 2 /* fits on the device without queuing blocks */
#define GRIDSEL_CLASS_LONG 3  /* more blocks than the device holds at once */

/* Execution modes, as in the kernel environment. */
#define GRIDSEL_MODE_UNKNOWN 0
#define GRIDSEL_MODE_GENERIC 1
#define GRIDSEL_MODE_SPMD 2
#define GRIDSEL_MODE_GENERIC_SPMD 3

/* Whether a kernel's parallel regions may nest (the kernel environment's
 * MayUseNestedParallelism). Unknown is treated as "may": such kernels keep at
 * most LLVM's own grid, since more threads per block can exhaust the device
 * runtime's heap and make the launch fail. The single-level `parallel for` kernels of Lloyd et
 * al. (and `gridsel select`'s kernels described by flags) are GRIDSEL_NESTING_NONE. */
#define GRIDSEL_NESTING_UNKNOWN 0
#define GRIDSEL_NESTING_NONE 1
#define GRIDSEL_NESTING_MAY 2

/* A GPU's limits. Fill it with gridsel_device_preset() and adjust. */
typedef struct gridsel_device {
  uint32_t sm_arch;                   /* compute capability, major*10+minor */
  uint32_t sm_count;
  uint32_t max_threads_per_sm;
  uint32_t max_registers_per_sm;
  uint32_t max_shared_mem_per_sm;     /* bytes */
  uint32_t max_blocks_per_sm;
  uint32_t max_threads_per_block;
  uint32_t warp_size;
  uint32_t threads_per_block;         /* the paper's experimental ThreadsPerBlock */
  uint32_t register_alloc_unit;       /* registers per warp allocation unit */
  uint32_t shared_alloc_unit;         /* bytes */
  uint32_t reserved_shared_per_block; /* bytes */
  uint32_t waves;                     /* auto: waves of resident blocks for long loops */
} gridsel_device;

/* A kernel's compiled resources; 0 in any field means unknown. */
typedef struct gridsel_kernel {
  uint32_t registers;   /* per thread */
  uint32_t shared_mem;  /* static, bytes per block */
  uint32_t local_mem;   /* stack frame, bytes per thread */
  uint32_t max_threads; /* compiled thread cap (clang's default is 128) */
  uint32_t exec_mode;   /* GRIDSEL_MODE_* */
  uint32_t nesting;     /* GRIDSEL_NESTING_* */
} gridsel_kernel;

/* A decision, with what LLVM 19 would launch. */
typedef struct gridsel_grid {
  uint32_t threads;      /* threads per block */
  uint32_t blocks;       /* blocks (teams) */
  uint32_t llvm_threads;
  uint32_t llvm_blocks;
  uint32_t loop_class;   /* GRIDSEL_CLASS_* */
} gridsel_grid;

/* Fills *out with a shipped preset: "titanx-pascal", "v100", "a100", "h100".
 * Returns GRIDSEL_OK, GRIDSEL_ERR_NULL or GRIDSEL_ERR_DEVICE. */
int gridsel_device_preset(const char *name, gridsel_device *out);

/* Chooses the grid `policy` ("auto", "lloyd", "llvm", "occupancy", "forest", "fixed:T,B") gives
 * a kernel whose launch over trip_count iterations left the grid open ("sweep" and "tune" decide
 * per launch at run time and give GRIDSEL_ERR_POLICY; "forest" uses the embedded H100 model,
 * whatever GRIDSEL_MODEL says). A trip_count of 0 (a `target teams` region without a
 * distribute loop) gets LLVM's grid from every policy but "fixed".
 * Returns GRIDSEL_OK, GRIDSEL_ERR_NULL, GRIDSEL_ERR_POLICY or GRIDSEL_ERR_DEVICE. */
int gridsel_select(const gridsel_device *device, const gridsel_kernel *kernel,
                   uint64_t trip_count, const char *policy, gridsel_grid *out);

/* The library version, e.g. "0.1.0"; a static string. */
const char *gridsel_version(void);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSEL_H */
