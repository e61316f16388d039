/*
 * CURVE on tcp endpoints (docs/security.md): key files and keygen; a daemon
 * that would listen beyond loopback without keys refuses to start; with
 * keys, a client without a key, with an unlisted key or with the wrong
 * server key is refused (GX_EPERM) while the daemon serves a listed
 * client, over tcp and over ipc, and SIGHUP reads the client keys again.
 */
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "core/curvekey.h"
#include "tests/testutil.h"

/* A tcp port free on loopback now (the kernel's choice). */
static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void s_keygen(const char *dir, const char *name, char pub[GX_CURVE_KEY_BUF])
{
    char prefix[1024], err[512];
    snprintf(prefix, sizeof prefix, "%s/%s", dir, name);
    ck_assert_msg(gx_curve_keygen(prefix, pub, err, sizeof err) == GX_OK, "%s", err);
}

static void s_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static int s_count_key(void *arg, const char *key, const char *name, const char *where)
{
    (void)key;
    (void)where;
    int *n = arg;
    (*n)++;
    ck_assert_msg(strcmp(name, "") == 0 || strcmp(name, "bob@build2") == 0, "name '%s'", name);
    return GX_OK;
}

START_TEST(test_keyfiles)
{
    char *dir = gxt_tmpdir(), path[1024], why[1024], pub[GX_CURVE_KEY_BUF], key[GX_CURVE_KEY_BUF];
    char sec[GX_CURVE_KEY_BUF], derived[GX_CURVE_KEY_BUF], err[512];
    s_keygen(dir, "a", pub);
    ck_assert(gx_curve_key_text(pub));
    /* the secret file: 0600, its key's public key is the .pub's */
    snprintf(path, sizeof path, "%s/a.key", dir);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0600);
    ck_assert_int_eq(gx_curve_key_read(path, true, sec, why, sizeof why), GX_OK);
    ck_assert_int_eq(zmq_curve_public(derived, sec), 0);
    ck_assert_str_eq(derived, pub);
    snprintf(path, sizeof path, "%s/a.pub", dir);
    ck_assert_int_eq(gx_curve_key_read(path, false, key, why, sizeof why), GX_OK);
    ck_assert_str_eq(key, pub);
    ck_assert_int_eq(gx_curve_key_get(pub, false, key, why, sizeof why), GX_OK);
    /* keygen does not replace a key pair */
    snprintf(path, sizeof path, "%s/a", dir);
    ck_assert_int_eq(gx_curve_keygen(path, NULL, err, sizeof err), GX_EIO);
    ck_assert_ptr_nonnull(strstr(err, "not replaced"));
    /* a secret open to others, a file without a key, a bad line */
    snprintf(path, sizeof path, "%s/a.key", dir);
    chmod(path, 0644);
    ck_assert_int_eq(gx_curve_key_read(path, true, key, why, sizeof why), GX_EPERM);
    ck_assert_ptr_nonnull(strstr(why, "chmod 600"));
    snprintf(path, sizeof path, "%s/empty.pub", dir);
    s_write(path, "# nothing here\n\n");
    ck_assert_int_eq(gx_curve_key_read(path, false, key, why, sizeof why), GX_EFORMAT);
    snprintf(path, sizeof path, "%s/bad.txt", dir);
    s_write(path, "# a comment\nnot-a-key\n");
    ck_assert_int_eq(gx_curve_key_read(path, false, key, why, sizeof why), GX_EFORMAT);
    ck_assert_msg(strstr(why, "bad.txt:2") != NULL, "%s", why);
    ck_assert_int_eq(gx_curve_key_get("/nonexistent/k.pub", false, key, why, sizeof why), GX_EIO);
    /* a list: a directory's .pub files (bad.txt is not one), keys named */
    char list[1024];
    snprintf(path, sizeof path, "%s/b.pub", dir);
    snprintf(list, sizeof list, "# clients\n%s bob@build2\n", pub);
    s_write(path, list);
    int n = 0;
    ck_assert_int_eq(gx_curve_keys_each(dir, s_count_key, &n, why, sizeof why), GX_OK);
    ck_assert_int_eq(n, 2); /* a.pub, b.pub; empty.pub has none */
    n = 0;
    ck_assert_int_eq(gx_curve_keys_each(path, s_count_key, &n, why, sizeof why), GX_OK);
    ck_assert_int_eq(n, 1);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

static const char *s_gexecd(void)
{
    static char path[4096];
    const char *bin = getenv("GEXECD");
    snprintf(path, sizeof path, "%s", bin ? bin : GX_TEST_BUILDDIR "/daemon/gexecd");
    return path;
}

START_TEST(test_refuse_start)
{
    char *dir = gxt_tmpdir(), out[4096], pub[GX_CURVE_KEY_BUF];
    int port = s_free_port();
    /* no keys: beyond loopback is refused, loopback alone would start */
    int rc = gxt_sh(out, sizeof out,
                    "%s --foreground -s ipc://%s/d.sock --profile-dir %s/p --tcp tcp://0.0.0.0:%d "
                    "2>&1",
                    s_gexecd(), dir, dir, port);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(out, "reachable from other machines") && strstr(out, "security."),
                  "%s", out);
    /* one key without the other */
    s_keygen(dir, "server", pub);
    char cfg[1024], text[1024];
    snprintf(cfg, sizeof cfg, "%s/c.yaml", dir);
    snprintf(text, sizeof text, "security:\n  server_secret_key: %s/server.key\n", dir);
    s_write(cfg, text);
    rc = gxt_sh(out, sizeof out,
                "%s --foreground -c %s -s ipc://%s/d.sock --profile-dir %s/p --tcp "
                "tcp://0.0.0.0:%d 2>&1",
                s_gexecd(), cfg, dir, dir, port);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(out, "security.client_keys"), "%s", out);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* y = x + 1, float32 [2] */
static gx_graph *s_add_one(void)
{
    gx_graph *g = gx_graph_new("add1");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){2});
    gx_tensor *one = gx_tensor_new(GX_F32, 0, NULL);
    *(float *)gx_tensor_data(one) = 1.0f;
    gx_graph_add_const(g, "one", &one);
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"x", "one"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

/* Run add1 on c: GX_OK with y checked, or the status. */
static int s_run(gx_client *c, const gx_graph *g)
{
    gx_request *rq = gx_request_new();
    gx_tensor *x = gx_tensor_new(GX_F32, 1, (int64_t[]){2});
    ((float *)gx_tensor_data(x))[0] = 1.0f;
    ((float *)gx_tensor_data(x))[1] = 2.0f;
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;
    int rc = gx_client_run(c, rq, &r);
    if (rc == GX_OK) {
        const float *y = gx_tensor_cdata(gx_result_output(r, 0));
        ck_assert(y[0] == 2.0f && y[1] == 3.0f);
    }
    gx_result_destroy(&r);
    gx_tensor_destroy(&x);
    gx_request_destroy(&rq);
    return rc;
}

static gx_client *s_tcp_client(const char *ep, const char *server_key, const char *secret)
{
    char err[512];
    gx_client *c = gx_client_new_curve(ep, server_key, secret, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 30000);
    return c;
}

static uint64_t s_reloads(gx_client *c)
{
    char *json = NULL;
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    const char *p = strstr(json, "\"config_reloads\":");
    ck_assert_ptr_nonnull(p);
    uint64_t n = strtoull(p + strlen("\"config_reloads\":"), NULL, 10);
    free(json);
    return n;
}

START_TEST(test_curve_clients)
{
    char *dir = gxt_tmpdir(), pub[GX_CURVE_KEY_BUF], path[1024], cfg[1024], text[2048];
    char ep[64], sk[1024], alice[1024], mallory[1024], keys[1024];
    s_keygen(dir, "server", pub);
    s_keygen(dir, "alice", pub);
    s_keygen(dir, "mallory", pub);
    snprintf(keys, sizeof keys, "%s/clients", dir);
    mkdir(keys, 0755);
    char out[256];
    ck_assert_int_eq(gxt_sh(out, sizeof out, "cp %s/alice.pub %s/", dir, keys), 0);
    snprintf(cfg, sizeof cfg, "%s/gexecd.yaml", dir);
    snprintf(text, sizeof text,
             "security:\n  server_secret_key: %s/server.key\n  client_keys: %s\n"
             "profile:\n  dir: %s/profiles\ntune:\n  mode: off\n",
             dir, keys, dir);
    s_write(cfg, text);
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", s_free_port());
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *[]){"-c", cfg, "--tcp", ep, NULL});
    snprintf(sk, sizeof sk, "%s/server.pub", dir);
    snprintf(alice, sizeof alice, "%s/alice.key", dir);
    snprintf(mallory, sizeof mallory, "%s/mallory.key", dir);
    gx_graph *g = s_add_one();

    gx_client *good = s_tcp_client(ep, sk, alice);
    ck_assert_int_eq(s_run(good, g), GX_OK);

    /* no key at all: the daemon closes the handshake */
    gx_client *nokey = s_tcp_client(ep, NULL, NULL);
    ck_assert_int_eq(gx_client_ping(nokey), GX_EPERM);
    ck_assert_msg(strstr(gx_client_last_error(nokey), "GEXEC_SERVER_KEY"), "%s",
                  gx_client_last_error(nokey));
    /* a key the daemon does not list: ZAP 400 */
    gx_client *bad = s_tcp_client(ep, sk, mallory);
    ck_assert_int_eq(s_run(bad, g), GX_EPERM);
    ck_assert_msg(strstr(gx_client_last_error(bad), "ZAP 400"), "%s", gx_client_last_error(bad));
    /* the wrong server key: the daemon cannot read the handshake */
    snprintf(path, sizeof path, "%s/mallory.pub", dir);
    gx_client *wrong = s_tcp_client(ep, path, alice);
    ck_assert_int_eq(gx_client_ping(wrong), GX_EPERM);
    /* the daemon serves on: the listed client over tcp, keys from the
     * environment, and ipc without keys */
    ck_assert_int_eq(s_run(good, g), GX_OK);
    setenv("GEXEC_SERVER_KEY", sk, 1);
    setenv("GEXEC_CLIENT_SECRET", alice, 1);
    gx_client *env = s_tcp_client(ep, NULL, NULL);
    ck_assert_int_eq(s_run(env, g), GX_OK);
    gx_client_destroy(&env);
    setenv("GEXEC_CLIENT_KEY", pub, 1); /* mallory's public key: not alice's secret's */
    char err[512];
    ck_assert_ptr_null(gx_client_new(ep, err, sizeof err));
    ck_assert_msg(strstr(err, "GEXEC_CLIENT_KEY"), "%s", err);
    unsetenv("GEXEC_CLIENT_KEY");
    unsetenv("GEXEC_SERVER_KEY");
    unsetenv("GEXEC_CLIENT_SECRET");
    gx_client *local = s_tcp_client(d.endpoint, NULL, NULL);
    ck_assert_int_eq(s_run(local, g), GX_OK);

    /* SIGHUP reads the list again: mallory's key admitted from now on */
    ck_assert_int_eq(gxt_sh(out, sizeof out, "cp %s/mallory.pub %s/", dir, keys), 0);
    uint64_t before = s_reloads(local);
    kill(d.pid, SIGHUP);
    while (s_reloads(local) == before)
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    gx_client *admitted = s_tcp_client(ep, sk, mallory);
    ck_assert_int_eq(s_run(admitted, g), GX_OK);

    gx_client_destroy(&admitted);
    gx_client_destroy(&local);
    gx_client_destroy(&wrong);
    gx_client_destroy(&bad);
    gx_client_destroy(&nokey);
    gx_client_destroy(&good);
    gx_graph_destroy(&g);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *curve_suite(void)
{
    Suite *s = suite_create("curve");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_keyfiles);
    tcase_add_test(tc, test_refuse_start);
    tcase_add_test(tc, test_curve_clients);
    suite_add_tcase(s, tc);
    return s;
}
