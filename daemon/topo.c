/*
 * Machine topology via hwloc 2.x (see topo.h). The topology is loaded once at
 * startup; afterwards it is only read, and the one call that goes back to hwloc
 * (binding a thread) is serialised by a mutex, since hwloc documents no
 * thread-safety guarantee for concurrent calls on one topology.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>
#ifdef HAVE_CUDA
#include <hwloc/cudart.h>
#endif

#include <gexec/status.h>

#include "daemon/topo.h"
#include "core/internal.h"

/* Largest OS CPU number a "cpus" list may name: bounds the bitmap we build. */
#define S_CPU_MAX 65535

struct gxd_topo {
    hwloc_topology_t topo;
    pthread_mutex_t bind_lock;
    int ncores;
    hwloc_bitmap_t *pin;  /* per owned core: its allowed PUs */
    int *os_index;        /* per owned core: first PU that is allowed and selected */
    int nnuma;
    int ngpus;
};

/* ---- the "cpus" list ---------------------------------------------------- */

static const char *s_skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* A decimal CPU number at *pp (no sign); advances *pp. False if there is no
 * digit there or the number exceeds S_CPU_MAX (*too_big tells which). */
static bool s_cpu_number(const char **pp, unsigned *out, bool *too_big)
{
    const char *p = *pp;
    unsigned v = 0;
    *too_big = false;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (unsigned)(*p - '0');
        if (v > S_CPU_MAX) {
            *too_big = true;
            return false;
        }
        p++;
    }
    *pp = p;
    *out = v;
    return true;
}

/* Parse "all" or "N[-M][,N[-M]]..." (spaces around tokens allowed) into set
 * (may be NULL to only check). "all" fills the set. */
static int s_cpulist_parse(const char *cpus, hwloc_bitmap_t set, char *err, size_t errlen)
{
#define S_BAD(...)                                                                               \
    do {                                                                                         \
        char why_[128];                                                                          \
        snprintf(why_, sizeof why_, __VA_ARGS__);                                                \
        return gx_errf(err, errlen, GX_ECONFIG,                                                  \
                       "'%.64s' is not a CPU list (\"all\" or numbers like \"0-3,6\"): %s", cpus, \
                       why_);                                                                    \
    } while (0)

    if (!cpus)
        cpus = "all";
    const char *p = s_skip_space(cpus);
    if (strncmp(p, "all", 3) == 0 && *s_skip_space(p + 3) == '\0') {
        if (set)
            hwloc_bitmap_fill(set);
        return GX_OK;
    }
    if (*p == '\0')
        S_BAD("it is empty");
    if (set)
        hwloc_bitmap_zero(set);
    for (;;) {
        unsigned lo, hi;
        bool too_big;
        p = s_skip_space(p);
        if (!s_cpu_number(&p, &lo, &too_big)) {
            if (too_big)
                S_BAD("CPU number at offset %td is above %d", p - cpus, S_CPU_MAX);
            S_BAD("expected a CPU number at offset %td", p - cpus);
        }
        hi = lo;
        p = s_skip_space(p);
        if (*p == '-') {
            p = s_skip_space(p + 1);
            if (!s_cpu_number(&p, &hi, &too_big)) {
                if (too_big)
                    S_BAD("CPU number at offset %td is above %d", p - cpus, S_CPU_MAX);
                S_BAD("expected a CPU number after '-' at offset %td", p - cpus);
            }
            if (hi < lo)
                S_BAD("range %u-%u runs backwards", lo, hi);
            p = s_skip_space(p);
        }
        if (set && hwloc_bitmap_set_range(set, lo, (int)hi) < 0)
            return gx_errf(err, errlen, GX_ENOMEM, "cpus: out of memory");
        if (*p == '\0')
            return GX_OK;
        if (*p != ',')
            S_BAD("unexpected '%c' at offset %td", *p, p - cpus);
        p++;
    }
#undef S_BAD
}

int gxd_topo_cpus_check(const char *cpus, char *err, size_t errlen)
{
    return s_cpulist_parse(cpus, NULL, err, errlen);
}

/* ---- GPUs --------------------------------------------------------------- */

/* GPU vendors: a display-class PCI device of another vendor is a server's BMC
 * display adapter (ASPEED, Matrox), not a GPU. */
static bool s_gpu_vendor(hwloc_obj_t pci)
{
    unsigned vendor = pci->attr->pcidev.vendor_id;
    return vendor == 0x10de /* NVIDIA */ || vendor == 0x1002 /* AMD */;
}

/* DRM device files (card0, renderD128) and GL displays (":0.0") also appear as
 * GPU OS devices, but so does a BMC display adapter; those count only on a GPU
 * vendor's PCI device. Compute OS devices (cuda0, nvml0, opencl0d0, rsmi0,
 * ze0, ...) always count. */
static bool s_is_gpu_osdev(hwloc_obj_t osdev)
{
    hwloc_obj_osdev_type_t ty = osdev->attr->osdev.type;
    if (ty != HWLOC_OBJ_OSDEV_GPU && ty != HWLOC_OBJ_OSDEV_COPROC)
        return false;
    const char *n = osdev->name ? osdev->name : "";
    bool display = strncmp(n, "card", 4) == 0 || strncmp(n, "renderD", 7) == 0 ||
                   strncmp(n, "controlD", 8) == 0 || n[0] == ':';
    if (!display)
        return true;
    hwloc_obj_t pci = osdev->parent;
    return pci && pci->type == HWLOC_OBJ_PCI_DEVICE && s_gpu_vendor(pci);
}

/* A PCI device is a GPU when it is a GPU vendor's display-class device (class
 * 0x03xx: VGA, 3D or other display controller) or carries a GPU OS device. The
 * class counts on its own because hwloc names NVIDIA GPUs' OS devices only
 * through its CUDA/NVML plugins or DRM, none of which a container or a plain
 * Debian install may have, while its Linux backend always lists PCI devices. */
static bool s_is_gpu_pci(hwloc_obj_t pci)
{
    if ((pci->attr->pcidev.class_id >> 8) == 0x03 && s_gpu_vendor(pci))
        return true;
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_OS_DEVICE && s_is_gpu_osdev(c))
            return true;
    return false;
}

/* One GPU may show up as several OS devices (card0, renderD128, cuda0,
 * nvml0, opencl0d0), all children of one PCI device: count PCI devices, and
 * an OS device hwloc could not attach to a PCI device on its own. */
static int s_count_gpus(hwloc_topology_t topo)
{
    int n = 0;
    for (hwloc_obj_t p = NULL; (p = hwloc_get_next_pcidev(topo, p)) != NULL;)
        n += s_is_gpu_pci(p);
    for (hwloc_obj_t d = NULL; (d = hwloc_get_next_osdev(topo, d)) != NULL;)
        n += s_is_gpu_osdev(d) && !(d->parent && d->parent->type == HWLOC_OBJ_PCI_DEVICE);
    return n;
}

/* ---- discovery ---------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
/* AddressSanitizer builds only. hwloc's PCI plugin loads libpciaccess and
 * unloads it again when the last topology is destroyed; memory libpciaccess
 * still points to from its globals then becomes unreachable, and LeakSanitizer
 * reports it at exit from a module it can no longer name (so no suppression
 * matches). Keeping libpciaccess mapped for good keeps that memory reachable. */
static void s_sanitizer_keep_pciaccess(void)
{
    (void)dlopen("libpciaccess.so.0", RTLD_LAZY | RTLD_NODELETE);
}
#else
static void s_sanitizer_keep_pciaccess(void)
{
}
#endif

int gxd_topo_new(const char *cpus, gxd_topo **out, char *err, size_t errlen)
{
    int rc = GX_OK;
    hwloc_bitmap_t want = NULL, allowed = NULL, bound = NULL, use = NULL;
    *out = NULL;

    gxd_topo *t = calloc(1, sizeof *t);
    want = hwloc_bitmap_alloc();
    allowed = hwloc_bitmap_alloc();
    bound = hwloc_bitmap_alloc();
    use = hwloc_bitmap_alloc();
    if (!t || !want || !allowed || !bound || !use) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "topology: out of memory");
        goto free_bitmaps;
    }
    rc = s_cpulist_parse(cpus, want, err, errlen);
    if (rc < 0)
        goto free_bitmaps;
    pthread_mutex_init(&t->bind_lock, NULL);

    s_sanitizer_keep_pciaccess();
    if (hwloc_topology_init(&t->topo) < 0) {
        rc = gx_errf(err, errlen, GX_EINTERNAL, "hwloc: cannot initialise: %s", strerror(errno));
        goto free_t;
    }
    /* PCI and OS devices are not discovered by default; GPUs are among the
     * "important" ones (bridges and uninteresting devices stay out). */
    hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t->topo) < 0) {
        rc = gx_errf(err, errlen, GX_EINTERNAL, "hwloc: cannot discover the machine: %s",
                     strerror(errno));
        goto destroy_topo;
    }

    /* Allowed PUs: hwloc's (cgroup) allowed set, narrowed to the affinity we
     * were started with unless that leaves nothing. */
    hwloc_bitmap_copy(allowed, hwloc_topology_get_allowed_cpuset(t->topo));
    if (hwloc_get_cpubind(t->topo, bound, HWLOC_CPUBIND_THREAD) == 0 &&
        hwloc_bitmap_intersects(allowed, bound))
        hwloc_bitmap_and(allowed, allowed, bound);

    hwloc_obj_type_t unit = HWLOC_OBJ_CORE;
    int n = hwloc_get_nbobjs_by_type(t->topo, unit);
    if (n <= 0) { /* some virtual machines and architectures report no cores */
        unit = HWLOC_OBJ_PU;
        n = hwloc_get_nbobjs_by_type(t->topo, unit);
    }
    if (n <= 0) {
        rc = gx_errf(err, errlen, GX_EINTERNAL, "hwloc: found no cores and no PUs");
        goto destroy_topo;
    }
    t->pin = calloc((size_t)n, sizeof *t->pin);
    t->os_index = calloc((size_t)n, sizeof *t->os_index);
    if (!t->pin || !t->os_index) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "topology: out of memory");
        goto free_cores;
    }
    for (int i = 0; i < n; i++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(t->topo, unit, (unsigned)i);
        if (!core || !core->cpuset)
            continue;
        hwloc_bitmap_and(use, core->cpuset, allowed);
        if (hwloc_bitmap_iszero(use) || !hwloc_bitmap_intersects(use, want))
            continue;
        hwloc_bitmap_t sel = hwloc_bitmap_alloc();
        hwloc_bitmap_t pin = hwloc_bitmap_dup(use);
        if (!sel || !pin) {
            hwloc_bitmap_free(sel);
            hwloc_bitmap_free(pin);
            rc = gx_errf(err, errlen, GX_ENOMEM, "topology: out of memory");
            goto free_cores;
        }
        hwloc_bitmap_and(sel, use, want);
        t->os_index[t->ncores] = hwloc_bitmap_first(sel);
        t->pin[t->ncores++] = pin;
        hwloc_bitmap_free(sel);
    }
    if (t->ncores == 0) {
        char have[256];
        hwloc_bitmap_list_snprintf(have, sizeof have, allowed);
        rc = gx_errf(err, errlen, GX_ECONFIG,
                     "cpus '%.64s' names none of the CPUs this process may use (%s)",
                     cpus ? cpus : "all", have);
        goto free_cores;
    }

    t->nnuma = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE);
    if (t->nnuma < 1)
        t->nnuma = 1;
    t->ngpus = s_count_gpus(t->topo);
    *out = t;
    t = NULL;
    goto free_bitmaps;

free_cores:
    for (int i = 0; i < t->ncores; i++)
        hwloc_bitmap_free(t->pin[i]);
    free(t->pin);
    free(t->os_index);
destroy_topo:
    hwloc_topology_destroy(t->topo);
free_t:
    pthread_mutex_destroy(&t->bind_lock);
free_bitmaps:
    free(t);
    hwloc_bitmap_free(want);
    hwloc_bitmap_free(allowed);
    hwloc_bitmap_free(bound);
    hwloc_bitmap_free(use);
    return rc;
}

void gxd_topo_destroy(gxd_topo **tp)
{
    if (!tp || !*tp)
        return;
    gxd_topo *t = *tp;
    for (int i = 0; i < t->ncores; i++)
        hwloc_bitmap_free(t->pin[i]);
    free(t->pin);
    free(t->os_index);
    hwloc_topology_destroy(t->topo);
    pthread_mutex_destroy(&t->bind_lock);
    free(t);
    *tp = NULL;
}

int gxd_topo_ncores(const gxd_topo *t)
{
    return t->ncores;
}

int gxd_topo_core_os_index(const gxd_topo *t, int i)
{
    if (i < 0 || i >= t->ncores)
        return -1;
    return t->os_index[i];
}

int gxd_topo_pin_thread(gxd_topo *t, int i)
{
    if (i < 0 || i >= t->ncores)
        return GX_EINTERNAL;
    pthread_mutex_lock(&t->bind_lock);
    int r = hwloc_set_cpubind(t->topo, t->pin[i], HWLOC_CPUBIND_THREAD);
    pthread_mutex_unlock(&t->bind_lock);
    return r == 0 ? GX_OK : GX_EINTERNAL;
}

int gxd_topo_nnuma(const gxd_topo *t)
{
    return t->nnuma;
}

int gxd_topo_ngpus(const gxd_topo *t)
{
    return t->ngpus;
}

int gxd_topo_gpu_near(const gxd_topo *t, int cuda_index, char *buf, size_t len)
{
#ifdef HAVE_CUDA
    hwloc_bitmap_t near = hwloc_bitmap_alloc();
    if (!near)
        return gx_errf(buf, len, GX_ENOMEM, "out of memory");
    if (hwloc_cudart_get_device_cpuset(t->topo, cuda_index, near) != 0) {
        hwloc_bitmap_free(near);
        return gx_errf(buf, len, GX_ENOTFOUND, "hwloc cannot place CUDA device %d", cuda_index);
    }
    int n = 0, o = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->ncores; i++) {
        if (!hwloc_bitmap_intersects(near, t->pin[i]))
            continue;
        const bool run = i > 0 && hwloc_bitmap_intersects(near, t->pin[i - 1]) &&
                         i + 1 < t->ncores && hwloc_bitmap_intersects(near, t->pin[i + 1]);
        if (!run && o >= 0 && (size_t)o < len) /* the ends of each run of workers */
            o += snprintf(buf + o, len - (size_t)o, "%s%d",
                          n && i > 0 && hwloc_bitmap_intersects(near, t->pin[i - 1]) ? "-"
                          : n                                                         ? ","
                                                                                      : "",
                          i);
        n++;
    }
    hwloc_bitmap_free(near);
    return n;
#else
    (void)t;
    return gx_errf(buf, len, GX_EUNSUPPORTED, "CUDA device %d: built without CUDA", cuda_index);
#endif
}

char *gxd_topo_describe(const gxd_topo *t, char *buf, size_t len)
{
    if (!buf || len == 0)
        return buf;
    char pus[128] = "?";
    hwloc_bitmap_t all = hwloc_bitmap_alloc();
    if (all) {
        for (int i = 0; i < t->ncores; i++)
            hwloc_bitmap_or(all, all, t->pin[i]);
        if (hwloc_bitmap_list_snprintf(pus, sizeof pus, all) >= (int)sizeof pus)
            memcpy(pus + sizeof pus - 4, "...", 4);
        hwloc_bitmap_free(all);
    }
    snprintf(buf, len, "%d core%s (PU%s %s), %d NUMA node%s, %d GPU%s", t->ncores,
             t->ncores == 1 ? "" : "s", strpbrk(pus, ",-") ? "s" : "", pus, t->nnuma,
             t->nnuma == 1 ? "" : "s", t->ngpus, t->ngpus == 1 ? "" : "s");
    return buf;
}
