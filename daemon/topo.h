/*
 * Machine topology via hwloc: the cores gexecd owns (one worker each), and
 * the GPUs it sees. A core is owned when one of its PUs is both allowed to
 * the process and named by the "cpus" config value. Allowed means in hwloc's
 * allowed cpuset (cgroup cpuset) and in the affinity of the thread calling
 * gxd_topo_new (so `taskset` or systemd's CPUAffinity= are respected).
 */
#ifndef GXD_TOPO_H
#define GXD_TOPO_H

#include <stddef.h>

typedef struct gxd_topo gxd_topo;

/* Discover the machine. cpus is "all" (or NULL) or a list of OS CPU numbers
 * like "0-3,6". Caller owns *out. GX_ECONFIG if the list is malformed or
 * selects no allowed CPU (message in err), GX_EINTERNAL if hwloc fails. */
int gxd_topo_new(const char *cpus, gxd_topo **out, char *err, size_t errlen);
void gxd_topo_destroy(gxd_topo **t);
/* Syntax check of a "cpus" value without looking at the machine (the config
 * loader uses it so a bad list is reported with its file position). GX_OK, or
 * GX_ECONFIG with "'0-' is not a CPU list ...: reason" in err. */
int gxd_topo_cpus_check(const char *cpus, char *err, size_t errlen);

/* Number of owned cores (>= 1). */
int gxd_topo_ncores(const gxd_topo *t);
/* OS index of the first owned PU of owned core i. */
int gxd_topo_core_os_index(const gxd_topo *t, int i);
/* Bind the calling thread to owned core i (all its allowed PUs). GX_OK or
 * GX_EINTERNAL; the daemon logs and goes on unpinned on failure. Thread-safe. */
int gxd_topo_pin_thread(gxd_topo *t, int i);
/* Number of NUMA nodes, and of GPUs: devices carrying a GPU or coprocessor
 * OS device (DRM, CUDA, OpenCL, NVML), each device counted once. */
int gxd_topo_nnuma(const gxd_topo *t);
int gxd_topo_ngpus(const gxd_topo *t);
/* The owned cores near CUDA device cuda_index (its PCI slot's locality,
 * hwloc's cudart helper) into buf as a list of worker numbers ("0-7");
 * the number of them, or a negative status (no such device, a build
 * without CUDA) with buf saying why. */
int gxd_topo_gpu_near(const gxd_topo *t, int cuda_index, char *buf, size_t len);
/* One-line summary: "2 cores (PUs 0-1), 1 NUMA node, 0 GPUs". Returns buf. */
char *gxd_topo_describe(const gxd_topo *t, char *buf, size_t len);

#endif
