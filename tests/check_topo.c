/*
 * Topology: discovery, the "cpus" list, and pinning threads to owned cores
 * (checked against the kernel's view with sched_getaffinity, and against an
 * independent hwloc topology for which PUs belong to which core).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET */
#endif
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include <gexec/status.h>

#include "daemon/topo.h"
#include "tests/testutil.h"

/* Lowest CPU the calling thread may run on. */
static int s_first_allowed_cpu(void)
{
    cpu_set_t set;
    ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set))
            return i;
    ck_abort_msg("empty affinity mask");
    return -1;
}

START_TEST(test_discover)
{
    gxd_topo *t = NULL;
    char err[256], desc[256];
    int rc = gxd_topo_new("all", &t, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_int_ge(gxd_topo_ncores(t), 1);
    ck_assert_int_ge(gxd_topo_nnuma(t), 1);
    ck_assert_int_ge(gxd_topo_ngpus(t), 0);
    for (int i = 0; i < gxd_topo_ncores(t); i++)
        ck_assert_int_ge(gxd_topo_core_os_index(t, i), 0);
    ck_assert_int_eq(gxd_topo_core_os_index(t, gxd_topo_ncores(t)), -1);
    gxd_topo_describe(t, desc, sizeof desc);
    ck_assert_msg(strstr(desc, " core") && strstr(desc, "NUMA node") && strstr(desc, "GPU"),
                  "describe: %s", desc);

    /* NULL means "all" */
    gxd_topo *u = NULL;
    ck_assert_int_eq(gxd_topo_new(NULL, &u, err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_topo_ncores(u), gxd_topo_ncores(t));

    gxd_topo_destroy(&t);
    ck_assert_ptr_null(t);
    gxd_topo_destroy(&t); /* NULL is fine */
    gxd_topo_destroy(&u);
}
END_TEST

/* GPUs as hwloc shows them (an XML topology): an NVIDIA 3D controller with
 * no OS device (hwloc without its CUDA/NVML plugins, in a container), one
 * whose OS devices are cuda1 and nvml1, an AMD card with two DRM devices
 * (one GPU), a BMC's display adapter with a DRM device and a network card
 * (none), and a compute OS device on no PCI device: 4 GPUs. */
static const char s_gpu_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    " <object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\""
    " allowed_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\""
    " allowed_nodeset=\"0x1\" gp_index=\"1\">\n"
    "  <object type=\"Package\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\""
    " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"2\">\n"
    "   <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\""
    " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"3\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"Core\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\""
    " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"4\">\n"
    "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\""
    " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"5\"/>\n"
    "   </object>\n"
    "  </object>\n"
    "  <object type=\"Bridge\" gp_index=\"6\" bridge_type=\"0-1\" depth=\"0\""
    " bridge_pci=\"0000:[00-06]\">\n"
    "   <object type=\"PCIDev\" gp_index=\"7\" pci_busid=\"0000:01:00.0\""
    " pci_type=\"0302 [10de:2335] [10de:18be] a1\" pci_link_speed=\"0.000000\"/>\n"
    "   <object type=\"PCIDev\" gp_index=\"8\" pci_busid=\"0000:02:00.0\""
    " pci_type=\"0302 [10de:2335] [10de:18be] a1\" pci_link_speed=\"0.000000\">\n"
    "    <object type=\"OSDev\" gp_index=\"9\" name=\"cuda1\" osdev_type=\"5\"/>\n"
    "    <object type=\"OSDev\" gp_index=\"10\" name=\"nvml1\" osdev_type=\"1\"/>\n"
    "   </object>\n"
    "   <object type=\"PCIDev\" gp_index=\"11\" pci_busid=\"0000:03:00.0\""
    " pci_type=\"0380 [1002:740f] [1002:0c34] 02\" pci_link_speed=\"0.000000\">\n"
    "    <object type=\"OSDev\" gp_index=\"12\" name=\"card1\" osdev_type=\"1\"/>\n"
    "    <object type=\"OSDev\" gp_index=\"13\" name=\"renderD128\" osdev_type=\"1\"/>\n"
    "   </object>\n"
    "   <object type=\"PCIDev\" gp_index=\"14\" pci_busid=\"0000:04:00.0\""
    " pci_type=\"0300 [1a03:2000] [1a03:2000] 41\" pci_link_speed=\"0.000000\">\n"
    "    <object type=\"OSDev\" gp_index=\"15\" name=\"card0\" osdev_type=\"1\"/>\n"
    "   </object>\n"
    "   <object type=\"PCIDev\" gp_index=\"16\" pci_busid=\"0000:05:00.0\""
    " pci_type=\"0200 [15b3:1021] [15b3:0041] 00\" pci_link_speed=\"0.000000\">\n"
    "    <object type=\"OSDev\" gp_index=\"17\" name=\"ib0\" osdev_type=\"2\"/>\n"
    "   </object>\n"
    "  </object>\n"
    "  <object type=\"OSDev\" gp_index=\"18\" name=\"opencl0d0\" osdev_type=\"5\"/>\n"
    " </object>\n"
    "</topology>\n";

START_TEST(test_count_gpus)
{
    char *dir = gxt_tmpdir(), path[512], err[256], desc[256];
    snprintf(path, sizeof path, "%s/topo.xml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(s_gpu_xml, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    setenv("HWLOC_XMLFILE", path, 1);
    gxd_topo *t = NULL;
    int rc = gxd_topo_new("all", &t, err, sizeof err);
    unsetenv("HWLOC_XMLFILE");
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_int_eq(gxd_topo_ncores(t), 1);
    ck_assert_int_eq(gxd_topo_ngpus(t), 4);
    gxd_topo_describe(t, desc, sizeof desc);
    ck_assert_msg(strstr(desc, "4 GPUs"), "describe: %s", desc);
    gxd_topo_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_one_cpu)
{
    int first = s_first_allowed_cpu();
    char cpus[32], err[256];
    snprintf(cpus, sizeof cpus, "%d", first);
    gxd_topo *t = NULL;
    int rc = gxd_topo_new(cpus, &t, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_int_eq(gxd_topo_ncores(t), 1);
    ck_assert_int_eq(gxd_topo_core_os_index(t, 0), first);
    gxd_topo_destroy(&t);

    /* a list naming only CPUs that do not exist selects nothing */
    rc = gxd_topo_new("65000-65535", &t, err, sizeof err);
    ck_assert_int_eq(rc, GX_ECONFIG);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, "names none of the CPUs this process may use"), "%s", err);
}
END_TEST

START_TEST(test_bad_lists)
{
    static const char *const bad[] = {"0-", "a", "3-1", "", " ", ",", "0,", ",0", "0,,1",
                                      "1-2-3", "0 1", "-1", "0x1", "all,0", "All", "99999999",
                                      "65536"};
    char err[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gxd_topo *t = (gxd_topo *)&err; /* must be reset to NULL */
        int rc = gxd_topo_new(bad[i], &t, err, sizeof err);
        ck_assert_msg(rc == GX_ECONFIG, "'%s' accepted", bad[i]);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(err, "is not a CPU list"), "'%s': %s", bad[i], err);
        ck_assert_int_eq(gxd_topo_cpus_check(bad[i], err, sizeof err), GX_ECONFIG);
    }
    ck_assert_int_eq(gxd_topo_cpus_check("0-", err, sizeof err), GX_ECONFIG);
    ck_assert_str_eq(err, "'0-' is not a CPU list (\"all\" or numbers like \"0-3,6\"): "
                          "expected a CPU number after '-' at offset 2");
    ck_assert_int_eq(gxd_topo_cpus_check("3-1", err, sizeof err), GX_ECONFIG);
    ck_assert_str_eq(err, "'3-1' is not a CPU list (\"all\" or numbers like \"0-3,6\"): "
                          "range 3-1 runs backwards");
    ck_assert_int_eq(gxd_topo_cpus_check("0,,1", err, sizeof err), GX_ECONFIG);
    ck_assert_str_eq(err, "'0,,1' is not a CPU list (\"all\" or numbers like \"0-3,6\"): "
                          "expected a CPU number at offset 2");
    ck_assert_int_eq(gxd_topo_cpus_check("99999999", err, sizeof err), GX_ECONFIG);
    ck_assert_str_eq(err, "'99999999' is not a CPU list (\"all\" or numbers like \"0-3,6\"): "
                          "CPU number at offset 0 is above 65535");

    static const char *const good[] = {"all", " all ", "0", "0-3,6", " 0 - 3 , 6 ", "7,3,5",
                                       "2-2", "65535"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(gxd_topo_cpus_check(good[i], err, sizeof err) == GX_OK, "'%s': %s",
                      good[i], err);
}
END_TEST

/* PUs of the core containing PU os_index, from a topology of our own. */
static hwloc_bitmap_t s_core_pus(hwloc_topology_t topo, int os_index)
{
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, (unsigned)os_index);
    ck_assert_ptr_nonnull(pu);
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
    return hwloc_bitmap_dup(core ? core->cpuset : pu->cpuset);
}

/* After pinning to core i, the thread's mask holds that core's first owned PU
 * and nothing outside the core. */
static void s_check_pinned(gxd_topo *t, hwloc_topology_t topo, int i)
{
    cpu_set_t set;
    ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int os = gxd_topo_core_os_index(t, i);
    ck_assert_msg(CPU_ISSET(os, &set), "core %d: PU %d not in the mask", i, os);
    hwloc_bitmap_t core = s_core_pus(topo, os);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &set))
            ck_assert_msg(hwloc_bitmap_isset(core, (unsigned)cpu),
                          "core %d: CPU %d of the mask is on another core", i, cpu);
    for (int j = 0; j < gxd_topo_ncores(t); j++)
        if (j != i)
            ck_assert(!CPU_ISSET(gxd_topo_core_os_index(t, j), &set));
    hwloc_bitmap_free(core);
}

START_TEST(test_pin)
{
    cpu_set_t saved;
    ck_assert_int_eq(sched_getaffinity(0, sizeof saved, &saved), 0);
    hwloc_topology_t topo;
    ck_assert_int_eq(hwloc_topology_init(&topo), 0);
    ck_assert_int_eq(hwloc_topology_load(topo), 0);

    gxd_topo *t = NULL;
    char err[256];
    ck_assert_int_eq(gxd_topo_new("all", &t, err, sizeof err), GX_OK);
    int n = gxd_topo_ncores(t);
    for (int i = n - 1; i >= 0; i--) { /* last first: unlike the unpinned default */
        ck_assert_int_eq(gxd_topo_pin_thread(t, i), GX_OK);
        s_check_pinned(t, topo, i);
    }
    ck_assert_int_eq(gxd_topo_pin_thread(t, n), GX_EINTERNAL);
    ck_assert_int_eq(gxd_topo_pin_thread(t, -1), GX_EINTERNAL);

    /* A topology made by a pinned thread owns only what that thread may use
     * (as `taskset` would restrict the daemon). */
    if (n > 1) {
        ck_assert_int_eq(gxd_topo_pin_thread(t, n - 1), GX_OK);
        gxd_topo *u = NULL;
        ck_assert_int_eq(gxd_topo_new("all", &u, err, sizeof err), GX_OK);
        ck_assert_int_eq(gxd_topo_ncores(u), 1);
        ck_assert_int_eq(gxd_topo_core_os_index(u, 0), gxd_topo_core_os_index(t, n - 1));
        gxd_topo_destroy(&u);
    }

    ck_assert_int_eq(sched_setaffinity(0, sizeof saved, &saved), 0);
    gxd_topo_destroy(&t);
    hwloc_topology_destroy(topo);
}
END_TEST

typedef struct s_pin_arg {
    gxd_topo *t;
    hwloc_bitmap_t pus; /* the PUs of the core */
    int core;
    int rc;
    bool ok; /* the mask afterwards was right */
} s_pin_arg;

/* Runs on its own thread: no Check assertions here, results go in *a. */
static void *s_pin_main(void *p)
{
    s_pin_arg *a = p;
    for (int k = 0; k < 100 && a->rc == GX_OK; k++)
        a->rc = gxd_topo_pin_thread(a->t, a->core);
    cpu_set_t set;
    a->ok = sched_getaffinity(0, sizeof set, &set) == 0 &&
            CPU_ISSET(gxd_topo_core_os_index(a->t, a->core), &set);
    for (int cpu = 0; a->ok && cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &set) && !hwloc_bitmap_isset(a->pus, (unsigned)cpu))
            a->ok = false;
    return NULL;
}

/* Workers pin themselves concurrently, one per core. */
START_TEST(test_pin_threads)
{
    gxd_topo *t = NULL;
    char err[256];
    ck_assert_int_eq(gxd_topo_new("all", &t, err, sizeof err), GX_OK);
    hwloc_topology_t topo;
    ck_assert_int_eq(hwloc_topology_init(&topo), 0);
    ck_assert_int_eq(hwloc_topology_load(topo), 0);
    int n = gxd_topo_ncores(t);
    int nthreads = n < 2 ? 2 : n;
    s_pin_arg *args = calloc((size_t)nthreads, sizeof *args);
    pthread_t *th = calloc((size_t)nthreads, sizeof *th);
    ck_assert(args && th);
    for (int i = 0; i < nthreads; i++) {
        args[i] = (s_pin_arg){.t = t, .core = i % n, .rc = GX_OK};
        args[i].pus = s_core_pus(topo, gxd_topo_core_os_index(t, i % n));
        ck_assert_int_eq(pthread_create(&th[i], NULL, s_pin_main, &args[i]), 0);
    }
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].rc, GX_OK);
        ck_assert_msg(args[i].ok, "thread %d: wrong affinity after pinning to core %d", i,
                      args[i].core);
        hwloc_bitmap_free(args[i].pus);
    }
    free(args);
    free(th);
    hwloc_topology_destroy(topo);
    gxd_topo_destroy(&t);
}
END_TEST

Suite *topo_suite(void)
{
    Suite *s = suite_create("topo");
    TCase *tc = tcase_create("topo");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_discover);
    tcase_add_test(tc, test_one_cpu);
    tcase_add_test(tc, test_count_gpus);
    tcase_add_test(tc, test_bad_lists);
    tcase_add_test(tc, test_pin);
    tcase_add_test(tc, test_pin_threads);
    suite_add_tcase(s, tc);
    return s;
}
