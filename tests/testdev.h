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
    uint64_t captures, replays;  /* graphs recorded, and replayed */
    uint64_t marks, marks_live;  /* marks made (device time), and not yet freed */
    uint64_t pins, pins_live;    /* host memory pinned, and not yet unpinned */
    uint64_t readied;            /* steps readied by the plan pass */
} gx_testdev_stats;

const gx_backend *gx_testdev(void);
gx_testdev_stats gx_testdev_stats_get(void);

/* How its graphs behave from now on: as a GPU's (NORMAL), every recording
 * fails (FAIL), every replay but a graph's first finds it stale (STALE). */
enum { GX_TESTDEV_GRAPH_NORMAL, GX_TESTDEV_GRAPH_FAIL, GX_TESTDEV_GRAPH_STALE };
void gx_testdev_graph_mode(int mode);

#endif
