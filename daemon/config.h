/*
 * gexecd configuration. Every key is one row of the table in config.c
 * (name, type, range, default, doc); conf/gexecd.yaml documents each with its
 * default. The YAML file uses nested maps ("queue: {max_jobs: 64}") that map
 * onto dotted keys ("queue.max_jobs"). Command line flags are applied with
 * gxd_config_set after the file.
 */
#ifndef GXD_CONFIG_H
#define GXD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "daemon/log.h"

#define GXD_MAX_ENDPOINTS 8

typedef struct gxd_config {
    char *socket;                    /* "socket": main endpoint; NULL = gx_default_endpoint() */
    char *socket_mode;               /* "socket_mode": octal mode of the ipc socket file */
    char *socket_group;              /* "socket_group": its group; NULL = the daemon's */
    char *tcp[GXD_MAX_ENDPOINTS];    /* "tcp": extra endpoints, list of strings */
    int n_tcp;
    char *cpus;                      /* "cpus": "all" or a list of OS CPU numbers "0-3,6" */
    char *gpus[GXD_MAX_ENDPOINTS];   /* "gpus": all, none or CUDA device numbers ([1]); */
    int n_gpus;                      /* one entry today (multi-GPU is not built) */
    int64_t gpu_memory_percent;      /* "gpu_memory_percent": of a GPU's memory for arenas */
    bool gpu_tf32;                   /* "gpu_tf32": MatMul, Gemm, Conv may use TF32 on a GPU */
    gxd_log_level log_level;         /* "log_level" */
    char *log_file;                  /* "log_file": a detached daemon's log; "" syslog */
    int64_t queue_max_jobs;          /* "queue.max_jobs" */
    int64_t queue_max_bytes;         /* "queue.max_bytes": input bytes held by queued jobs */
    int64_t limits_max_message_bytes;/* "limits.max_message_bytes": one frame */
    int64_t limits_max_tensor_bytes; /* "limits.max_tensor_bytes": one tensor (inputs, values) */
    int64_t limits_max_nodes;        /* "limits.max_nodes" per graph */
    int64_t limits_max_arena_bytes;  /* "limits.max_arena_bytes" per job */
    int64_t limits_max_compile_ms;   /* "limits.max_compile_ms": one compile; 0 = none */
    int64_t limits_max_nesting;      /* "limits.max_nesting": levels of subgraphs in a graph */
    int64_t limits_max_client_priority; /* "limits.max_client_priority": above it, users only */
    char *limits_priority_users[GXD_MAX_ENDPOINTS]; /* "limits.priority_users": who may */
    int n_limits_priority_users;
    int64_t limits_shm_regions_per_client; /* "limits.shm_regions_per_client": 0 = no shm */
    int64_t limits_shm_bytes;        /* "limits.shm_bytes": clients' regions mapped, in all */
    int64_t limits_shm_regions_per_uid; /* "limits.shm_regions_per_uid": 0 = no bound */
    int64_t limits_shm_bytes_per_uid;   /* "limits.shm_bytes_per_uid": 0 = no bound */
    int64_t graphs_max;              /* "graphs.max": loaded graphs kept (LRU beyond) */
    char *graphs_preload[GXD_MAX_ENDPOINTS]; /* "graphs.preload": [NAME=]PATH, warmed at start */
    int n_graphs_preload;
    int64_t limits_max_memory_bytes; /* "limits.max_memory_bytes": graphs and plans; 0 = auto */
    int64_t limits_client_graphs;    /* "limits.client_graphs": loaded, per client; 0 = none */
    int64_t limits_client_memory_bytes; /* "limits.client_memory_bytes": per client; 0 = auto */
    int64_t limits_client_jobs;      /* "limits.client_jobs": queued, per client; 0 = none */
    int64_t limits_uid_jobs;         /* "limits.uid_jobs": queued, per uid (ipc); 0 = none */
    int64_t shutdown_grace_ms;       /* "shutdown_grace_ms": wait for running jobs on SIGTERM */
    int64_t client_heartbeat_ms;     /* "client_heartbeat_ms": ZMTP heartbeats; 0 off */
    int64_t sched_split_min_ns;      /* "scheduler.split_min_ns": -1 = from the measured sync */
    int64_t sched_spin_us;           /* "scheduler.spin_us": idle workers spin before sleeping */
    int64_t sched_batch_max;         /* "scheduler.batch_max": jobs merged into one (1: off) */
    int64_t sched_batch_delay_us;    /* "scheduler.batch_delay_us": wait for more to merge */
    bool sched_device_graphs;        /* "scheduler.device_graphs": runs of GPU steps as graphs */
    bool sched_device_time;          /* "scheduler.device_time": jobs' GPU time measured */
    char *partition_prefer[GXD_MAX_ENDPOINTS]; /* "partition.prefer": backend names */
    int n_partition_prefer;
    int64_t partition_min_nodes;     /* "partition.min_nodes" */
    bool partition_cost_check;       /* "partition.cost_check" */
    bool compiler_rewrite;           /* "compiler.rewrite": the rewrite pass runs */
    bool compiler_fuse;              /* "compiler.fuse": the fuse pass runs */
    bool compiler_layout;            /* "compiler.layout": the layout pass runs */
    bool compiler_layout_measured;   /* "compiler.layout_measured": it uses measured times */
    bool compiler_replan;            /* "compiler.replan": background re-plans */
    int64_t compiler_replan_ms;      /* "compiler.replan_ms": how often models are checked */
    int64_t compiler_replan_min_jobs;/* "compiler.replan_min_jobs": jobs between checks */
    char *profile_dir;               /* "profile.dir": "default", "" (off) or a path */
    int64_t profile_max_entries;     /* "profile.max_entries": files kept (LRU beyond) */
    int64_t profile_max_bytes;       /* "profile.max_bytes": their bytes (LRU beyond) */
    char *artifacts_dir;             /* "artifacts.dir": "default", "" (off) or a path */
    int64_t artifacts_max_files;     /* "artifacts.max_files": files kept (LRU beyond) */
    int64_t artifacts_max_bytes;     /* "artifacts.max_bytes": their bytes (LRU beyond) */
    char *tune_mode;                 /* "tune.mode": off, cache, explore (NULL: default) */
    char *tune_dir;                  /* "tune.dir": "default", "" (memory only) or a path */
    int64_t tune_budget_ms;          /* "tune.budget_ms": measuring time per signature */
    int64_t tune_max_records;        /* "tune.max_records": rows of tune.db */
    char *tune_upstream;             /* "tune.upstream": PostgreSQL URL, "" none */
    int64_t tune_upstream_max_records; /* "tune.upstream_max_records": rows kept there */
    char *metrics_listen;            /* "metrics.listen": Prometheus over HTTP; NULL off */
    char *security_server_secret_key; /* "security.server_secret_key": CURVE key file */
    char *security_client_keys;      /* "security.client_keys": allowed keys, file or dir */
} gxd_config;

/* Fill with the built-in defaults. Pair with gxd_config_fini. */
void gxd_config_init(gxd_config *c);
void gxd_config_fini(gxd_config *c);
/* Apply a YAML file on top of c. On error returns GX_ECONFIG (or GX_EIO) and
 * writes "path:line:column: reason" to err; c may be partly updated. */
int gxd_config_load(gxd_config *c, const char *path, char *err, size_t errlen);
/* Set one dotted key from a string (command line flags). GX_ECONFIG with
 * "key: reason" in err for an unknown key or a bad value. */
int gxd_config_set(gxd_config *c, const char *key, const char *value, char *err,
                   size_t errlen);
/* The uid of one limits.priority_users entry: "self" (the daemon's own
 * user), a user name or a number. GX_OK, or GX_ECONFIG with why. */
int gxd_config_user_uid(const char *v, uid_t *uid, char *why, size_t whylen);

/* limits.max_memory_bytes in effect: the key, or when 0 three quarters of
 * the machine's physical memory. */
int64_t gxd_config_memory_budget(const gxd_config *c);
/* limits.client_memory_bytes in effect: the key, or when 0 half of
 * gxd_config_memory_budget. */
int64_t gxd_config_client_memory(const gxd_config *c);

/* socket_mode's value as a mode (0 to 0777, octal digits), and
 * socket_group's as a gid (a name or a number). GX_OK, or GX_ECONFIG with why. */
int gxd_config_socket_mode(const char *v, mode_t *mode, char *why, size_t whylen);
int gxd_config_group_gid(const char *v, gid_t *gid, char *why, size_t whylen);
/* Print every key with its current value as YAML (gexecd --print-config). */
void gxd_config_dump(const gxd_config *c, FILE *out);
/* The keys one by one, in table order: their count, the dotted name of
 * key i (static storage; NULL past the end), and its value in c as
 * --print-config writes it (NUL-terminated in buf; GX_ELIMIT when cut). */
size_t gxd_config_nkeys(void);
const char *gxd_config_key_name(size_t i);
int gxd_config_value_text(const gxd_config *c, size_t i, char *buf, size_t len);

#endif
