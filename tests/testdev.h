/* "testdev", a device for tests: the CPU's kernels over memory of its own
 * (tests/testdev.c). Registered when the program starts. */
#ifndef GX_TESTS_TESTDEV_H
#define GX_TESTS_TESTDEV_H

#include <stdint.h>

#include "ops/backend.h"

typedef struct gx_testdev_stats {
    uint64_t kernels;            /* kernel steps run */
    uint64_t to_device, to_host; /* copies (to_device counts copies within it too) */
    uint64_t allocs, live;       /* arenas and constants given out, and not yet freed */
    uint64_t queues;             /* queues made */
} gx_testdev_stats;

const gx_backend *gx_testdev(void);
gx_testdev_stats gx_testdev_stats_get(void);

#endif
