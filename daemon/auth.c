/*
 * CURVE and the ZAP handler (auth.h). The handler thread owns a REP socket
 * on inproc://zeromq.zap.01 and a PAIR socket on which gxd_auth_destroy
 * tells it to stop; it reads the allow-list under a mutex, which
 * gxd_auth_reload swaps.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include <gexec/status.h>

#include "core/curvekey.h"
#include "core/internal.h"
#include "daemon/auth.h"

#define S_ZAP_ENDPOINT "inproc://zeromq.zap.01"
/* The ZAP domains of the CURVE endpoints and, when the daemon has keys, of
 * the others (ipc: the socket file's mode decides; libzmq 4.3 cannot unset
 * a socket's domain, so they get one of their own and are admitted). */
#define S_DOMAIN "gexec"
#define S_DOMAIN_LOCAL "gexec-local"
#define S_ZAP_FRAMES 8

typedef struct s_client_key {
    uint8_t key[32];
    char name[64]; /* the rest of its line in the list, or its Z85 text */
} s_client_key;

typedef struct s_list {
    s_client_key *keys;
    size_t n, cap;
} s_list;

struct gxd_auth {
    void *zap, *ctl_main, *ctl_thread;
    pthread_t thread;
    bool started;
    gxd_log *log;
    char secret[GX_CURVE_KEY_BUF], public_key[GX_CURVE_KEY_BUF];
    pthread_mutex_t mu; /* guards list */
    s_list list;
    _Atomic uint64_t admitted, refused;
    time_t last_refusal_log; /* the handler thread's: one line a second at most */
    uint64_t unlogged;
};

static int s_key_cmp(const void *a, const void *b)
{
    return memcmp(((const s_client_key *)a)->key, ((const s_client_key *)b)->key, 32);
}

static int s_add_key(void *arg, const char *key, const char *name, const char *where)
{
    (void)where;
    s_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        s_client_key *k = realloc(l->keys, cap * sizeof *k);
        if (!k)
            return GX_ENOMEM;
        l->keys = k;
        l->cap = cap;
    }
    s_client_key *k = &l->keys[l->n++];
    zmq_z85_decode(k->key, key); /* gx_curve_key_text checked the alphabet */
    snprintf(k->name, sizeof k->name, "%s", *name ? name : key);
    return GX_OK;
}

/* The client keys of path, sorted for bsearch. */
static int s_list_read(const char *path, s_list *l, char *err, size_t errlen)
{
    char why[768];
    memset(l, 0, sizeof *l);
    int rc = gx_curve_keys_each(path, s_add_key, l, why, sizeof why);
    if (rc == GX_ENOMEM && !l->keys)
        snprintf(why, sizeof why, "out of memory");
    if (rc < 0) {
        free(l->keys);
        return gx_errf(err, errlen, rc, "security.client_keys: %s", why);
    }
    if (l->n == 0) {
        free(l->keys);
        return gx_errf(err, errlen, GX_ECONFIG,
                       "security.client_keys: no key in %s (one .pub file per client, or one "
                       "key per line)",
                       path);
    }
    qsort(l->keys, l->n, sizeof *l->keys, s_key_cmp);
    return GX_OK;
}

static const s_client_key *s_find(const s_list *l, const uint8_t key[32])
{
    s_client_key probe;
    memcpy(probe.key, key, 32);
    return bsearch(&probe, l->keys, l->n, sizeof *l->keys, s_key_cmp);
}

static void s_send_str(void *sock, const char *s, int more)
{
    zmq_send(sock, s, strlen(s), more ? ZMQ_SNDMORE : 0);
}

/* Log a refusal unless one was logged this second (a stranger knocking
 * in a loop must not flood the journal). */
static void s_log_refusal(gxd_auth *a, const char *addr, const char *why)
{
    time_t now = time(NULL);
    if (now == a->last_refusal_log) {
        a->unlogged++;
        return;
    }
    GXD_LOG(a->log, GXD_LOG_WARN, "tcp client %s refused: %s (%llu refusals not logged)", addr,
            why, (unsigned long long)a->unlogged);
    a->last_refusal_log = now;
    a->unlogged = 0;
}

/* Answer one ZAP request (RFC 27): version, request id, domain, address,
 * identity, mechanism, credentials. */
static void s_zap_answer(gxd_auth *a)
{
    zmq_msg_t f[S_ZAP_FRAMES];
    int n = 0;
    bool more = true;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, a->zap, 0) < 0) {
            zmq_msg_close(&m);
            break;
        }
        more = zmq_msg_more(&m);
        if (n < S_ZAP_FRAMES) {
            zmq_msg_init(&f[n]);
            zmq_msg_move(&f[n++], &m);
        }
        zmq_msg_close(&m);
    }
    char mech[16] = "", domain[32] = "", addr[64] = "?", id[64] = "";
    if (n >= 6) {
        snprintf(id, sizeof id, "%.*s", (int)zmq_msg_size(&f[1]), (const char *)zmq_msg_data(&f[1]));
        snprintf(domain, sizeof domain, "%.*s", (int)zmq_msg_size(&f[2]),
                 (const char *)zmq_msg_data(&f[2]));
        snprintf(addr, sizeof addr, "%.*s", (int)zmq_msg_size(&f[3]), (const char *)zmq_msg_data(&f[3]));
        snprintf(mech, sizeof mech, "%.*s", (int)zmq_msg_size(&f[5]), (const char *)zmq_msg_data(&f[5]));
    }
    const char *code = "400", *text = "no such client key", *user = "";
    char name[64] = "", z85[GX_CURVE_KEY_BUF] = "?";
    if (n < 6) {
        text = "malformed ZAP request";
    } else if (strcmp(mech, "CURVE") == 0 && n >= 7 && zmq_msg_size(&f[6]) == 32) {
        const uint8_t *key = zmq_msg_data(&f[6]);
        zmq_z85_encode(z85, key, 32);
        pthread_mutex_lock(&a->mu);
        const s_client_key *k = s_find(&a->list, key);
        if (k)
            snprintf(name, sizeof name, "%s", k->name);
        pthread_mutex_unlock(&a->mu);
        if (k) {
            code = "200";
            text = "OK";
            user = name;
        }
    } else if (strcmp(mech, "NULL") == 0 && strcmp(domain, S_DOMAIN_LOCAL) == 0) {
        code = "200"; /* an ipc endpoint */
        text = "OK";
    } else {
        text = "CURVE with a listed key is required";
    }
    if (code[0] == '2') {
        atomic_fetch_add(&a->admitted, 1);
        GXD_LOG(a->log, GXD_LOG_DEBUG, "tcp client %s admitted (%s)", addr, user);
    } else {
        atomic_fetch_add(&a->refused, 1);
        char why[160];
        snprintf(why, sizeof why, "%s%s%s", text, strcmp(mech, "CURVE") == 0 ? " " : "",
                 strcmp(mech, "CURVE") == 0 ? z85 : "");
        s_log_refusal(a, addr, why);
    }
    s_send_str(a->zap, "1.0", 1);
    s_send_str(a->zap, id, 1);
    s_send_str(a->zap, code, 1);
    s_send_str(a->zap, text, 1);
    s_send_str(a->zap, user, 1);
    s_send_str(a->zap, "", 0);
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
}

/* The handler thread: answers until a message comes on the control socket. */
static void *s_zap_main(void *arg)
{
    gxd_auth *a = arg;
    for (;;) {
        zmq_pollitem_t it[] = {{a->zap, 0, ZMQ_POLLIN, 0}, {a->ctl_thread, 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(it, 2, -1) < 0) {
            if (zmq_errno() == EINTR)
                continue;
            break;
        }
        if (it[1].revents & ZMQ_POLLIN)
            break;
        if (it[0].revents & ZMQ_POLLIN)
            s_zap_answer(a);
    }
    zmq_close(a->zap);
    zmq_close(a->ctl_thread);
    a->zap = a->ctl_thread = NULL;
    return NULL;
}

int gxd_auth_new(void *zctx, const gxd_config *cfg, gxd_log *log, gxd_auth **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    const char *sk = cfg->security_server_secret_key, *ck = cfg->security_client_keys;
    bool has_sk = sk && *sk, has_ck = ck && *ck;
    if (!has_sk && !has_ck)
        return GX_OK;
    if (!has_sk || !has_ck)
        return gx_errf(err, errlen, GX_ECONFIG,
                       "security.%s is set but security.%s is not: CURVE needs the daemon's "
                       "secret key and the clients' public keys",
                       has_sk ? "server_secret_key" : "client_keys",
                       has_sk ? "client_keys" : "server_secret_key");
    if (!zmq_has("curve"))
        return gx_errf(err, errlen, GX_ECONFIG,
                       "security: this libzmq was built without CURVE (libsodium)");
    gxd_auth *a = calloc(1, sizeof *a);
    if (!a)
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    a->log = log;
    pthread_mutex_init(&a->mu, NULL);
    char why[768];
    int rc = gx_curve_key_read(sk, true, a->secret, why, sizeof why);
    if (rc < 0) {
        gx_errf(err, errlen, rc, "security.server_secret_key: %s", why);
        goto fail;
    }
    if (zmq_curve_public(a->public_key, a->secret) != 0) {
        rc = gx_errf(err, errlen, GX_ECONFIG, "security.server_secret_key: %s: not a CURVE key",
                     sk);
        goto fail;
    }
    if ((rc = s_list_read(ck, &a->list, err, errlen)) < 0)
        goto fail;
    char ctl[64];
    snprintf(ctl, sizeof ctl, "inproc://gexecd-auth-%p", (void *)a);
    /* bound here, before any tcp endpoint: libzmq admits every CURVE
     * client when no handler is bound */
    if (!(a->zap = zmq_socket(zctx, ZMQ_REP)) || zmq_bind(a->zap, S_ZAP_ENDPOINT) != 0 ||
        !(a->ctl_thread = zmq_socket(zctx, ZMQ_PAIR)) || zmq_bind(a->ctl_thread, ctl) != 0 ||
        !(a->ctl_main = zmq_socket(zctx, ZMQ_PAIR)) || zmq_connect(a->ctl_main, ctl) != 0) {
        rc = gx_errf(err, errlen, GX_EINTERNAL, "the ZAP handler's sockets: %s",
                     zmq_strerror(zmq_errno()));
        goto fail;
    }
    zmq_setsockopt(a->zap, ZMQ_LINGER, &(int){0}, sizeof(int));
    zmq_setsockopt(a->ctl_thread, ZMQ_LINGER, &(int){0}, sizeof(int));
    zmq_setsockopt(a->ctl_main, ZMQ_LINGER, &(int){0}, sizeof(int));
    if (pthread_create(&a->thread, NULL, s_zap_main, a) != 0) {
        rc = gx_errf(err, errlen, GX_EINTERNAL, "cannot start the ZAP handler thread");
        goto fail;
    }
    a->started = true;
    GXD_LOG(log, GXD_LOG_INFO, "CURVE on tcp endpoints: server public key %s, %zu client keys",
            a->public_key, a->list.n);
    *out = a;
    return GX_OK;
fail:
    gxd_auth_destroy(&a);
    return rc;
}

bool gxd_auth_loopback(const char *ep)
{
    static const char *const loop[] = {"tcp://127.", "tcp://localhost:", "tcp://[::1]:"};
    for (size_t i = 0; i < sizeof loop / sizeof loop[0]; i++)
        if (strncmp(ep, loop[i], strlen(loop[i])) == 0)
            return true;
    return false;
}

int gxd_auth_prepare_bind(const gxd_auth *a, void *sock, const char *ep, char *err,
                          size_t errlen)
{
    bool tcp = strncmp(ep, "tcp://", 6) == 0;
    if (tcp && !a && !gxd_auth_loopback(ep))
        return gx_errf(err, errlen, GX_ECONFIG,
                       "%s is reachable from other machines: set security.server_secret_key "
                       "and security.client_keys (CURVE, docs/security.md) or bind loopback "
                       "(tcp://127.0.0.1:PORT)",
                       ep);
    bool curve = tcp && a;
    int server = curve ? 1 : 0;
    const char *domain = curve ? S_DOMAIN : S_DOMAIN_LOCAL;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &server, sizeof server) != 0 ||
        (curve && zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, a->secret, GX_CURVE_KEY_LEN) != 0) ||
        (a && zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, domain, strlen(domain)) != 0))
        return gx_errf(err, errlen, GX_EINTERNAL, "%s: CURVE options: %s", ep,
                       zmq_strerror(zmq_errno()));
    return GX_OK;
}

int gxd_auth_reload(gxd_auth *a, const char *path, char *err, size_t errlen)
{
    if (!a || !path || !*path)
        return gx_errf(err, errlen, GX_ECONFIG,
                       "security.client_keys: CURVE is turned on or off only at start");
    s_list l;
    int rc = s_list_read(path, &l, err, errlen);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&a->mu);
    s_list old = a->list;
    a->list = l;
    pthread_mutex_unlock(&a->mu);
    free(old.keys);
    return GX_OK;
}

void gxd_auth_stats(const gxd_auth *a, size_t *keys, uint64_t *admitted, uint64_t *refused)
{
    *keys = 0;
    *admitted = *refused = 0;
    if (!a)
        return;
    pthread_mutex_lock((pthread_mutex_t *)&a->mu);
    *keys = a->list.n;
    pthread_mutex_unlock((pthread_mutex_t *)&a->mu);
    *admitted = atomic_load(&a->admitted);
    *refused = atomic_load(&a->refused);
}

const char *gxd_auth_public_key(const gxd_auth *a)
{
    return a ? a->public_key : "";
}

void gxd_auth_destroy(gxd_auth **ap)
{
    if (!ap || !*ap)
        return;
    gxd_auth *a = *ap;
    if (a->started) {
        zmq_send(a->ctl_main, "", 0, 0);
        pthread_join(a->thread, NULL);
    } else {
        if (a->zap)
            zmq_close(a->zap);
        if (a->ctl_thread)
            zmq_close(a->ctl_thread);
    }
    if (a->ctl_main)
        zmq_close(a->ctl_main);
    pthread_mutex_destroy(&a->mu);
    free(a->list.keys);
    explicit_bzero(a->secret, sizeof a->secret);
    free(a);
    *ap = NULL;
}
