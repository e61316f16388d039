/*
 * String tensors (docs/strings.md): the representation (a tensor's string
 * store, a job's bounded string heap), the wire encoding with hostile
 * frames, every op that takes strings (Cast and CastLike both ways, Equal,
 * Where, the data-movement ops, StringNormalizer, StringConcat,
 * StringSplit) and the rule that refuses them to the others, a graph
 * compiled and run through frames (a dynamic shape, an If that carries
 * strings, the heap limit), and a string graph through a real gexecd.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "core/internal.h"
#include "core/wire.h"
#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)
#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})


static const char *s_at(const gx_view *v, int64_t i, size_t *n)
{
    const gx_strrec *r = ((const gx_strrec *const *)v->data)[i];
    if (n)
        *n = gx_str_len(r);
    return gx_str_bytes(r);
}

/* v is a string view of the shape holding exactly want[]. */
static void s_check(const gx_view *v, int ndim, const int64_t *shape, const char *const *want)
{
    ck_assert_int_eq(v->dtype, GX_STRING);
    ot_check_shape(v, ndim, shape);
    for (int64_t i = 0; i < v->numel; i++) {
        size_t n;
        const char *s = s_at(v, i, &n);
        ck_assert_msg(n == strlen(want[i]) && memcmp(s, want[i], n) == 0,
                      "element %lld: \"%s\", expected \"%s\"", (long long)i, s, want[i]);
    }
}
#define CHECK(v, shape, ...) s_check(v, shape, STRS(__VA_ARGS__))

/* Runs op (1 and 3 threads) and checks its string output 0. */
static void s_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, int ndim,
                     const int64_t *shape, const char *const *want)
{
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_attrval av[GX_MAX_ATTRS];
        gx_view out[2];
        char err[ERRLEN];
        int rc = ot_run_n(op, node, n_in, in, nth, av, gx_op_schema_get(op)->min_out, out, err);
        ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
        s_check(&out[0], ndim, shape, want);
    }
}
#define EXPECT(op, node, n_in, in, shape, ...) s_expect(op, node, n_in, in, shape, STRS(__VA_ARGS__))

/* ---- the representation ---- */

START_TEST(test_tensor)
{
    const char *words[] = {"", "a", "with\0nul", NULL};
    const size_t lens[] = {0, 1, 8, 0};
    gx_tensor *t = gx_tensor_new_strings(2, (int64_t[]){2, 2}, words, lens);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(gx_tensor_dtype(t), GX_STRING);
    ck_assert_uint_eq(gx_tensor_nbytes(t), 4 * 8);
    size_t n;
    ck_assert_str_eq(gx_tensor_string(t, 0, &n), "");
    ck_assert_uint_eq(n, 0);
    ck_assert_str_eq(gx_tensor_string(t, 1, &n), "a");
    ck_assert(memcmp(gx_tensor_string(t, 2, &n), "with\0nul", 8) == 0 && n == 8);
    ck_assert_str_eq(gx_tensor_string(t, 3, NULL), "");
    ck_assert_ptr_null(gx_tensor_string(t, 4, NULL));
    ck_assert_ptr_null(gx_tensor_string(t, -1, NULL));
    ck_assert_int_eq(gx_tensor_set_string(t, 0, "changed", 7), GX_OK);
    ck_assert_str_eq(gx_tensor_string(t, 0, NULL), "changed");
    ck_assert_int_eq(gx_tensor_set_string(t, 9, "x", 1), GX_EINVAL);
    /* a clone owns its own copies */
    gx_tensor *c = gx_tensor_clone(t);
    ck_assert_ptr_ne(gx_tensor_string(c, 0, NULL), gx_tensor_string(t, 0, NULL));
    gx_tensor_destroy(&t);
    ck_assert_str_eq(gx_tensor_string(c, 0, NULL), "changed");
    ck_assert(memcmp(gx_tensor_string(c, 2, &n), "with\0nul", 8) == 0 && n == 8);
    gx_tensor_destroy(&c);
    /* a new string tensor holds empty strings; other tensors have none */
    t = gx_tensor_new(GX_STRING, 1, (int64_t[]){3});
    ck_assert_str_eq(gx_tensor_string(t, 2, &n), "");
    gx_tensor_destroy(&t);
    t = gx_tensor_new(GX_F32, 1, (int64_t[]){3});
    ck_assert_ptr_null(gx_tensor_string(t, 0, NULL));
    ck_assert_int_eq(gx_tensor_set_string(t, 0, "x", 1), GX_EINVAL);
    gx_tensor_destroy(&t);
    gx_dtype dt;
    ck_assert_int_eq(gx_dtype_parse("string", &dt), GX_OK);
    ck_assert_int_eq(dt, GX_STRING);
}
END_TEST

START_TEST(test_heap)
{
    gx_strheap *h = gx_strheap_new(100);
    size_t limit;
    ck_assert_ptr_null(gx_strheap_add(h, "", 0)); /* "" takes nothing */
    const gx_strrec *r = gx_strheap_add(h, "hello", 5);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->bytes, "hello");
    ck_assert_uint_eq(gx_strheap_used(h), gx_strrec_size(5));
    ck_assert(!gx_strheap_failed(h, &limit));
    ck_assert_uint_eq(limit, 100);
    char big[200];
    memset(big, 'x', sizeof big);
    ck_assert_ptr_null(gx_strheap_add(h, big, sizeof big)); /* past the bound */
    ck_assert(gx_strheap_failed(h, NULL));
    ck_assert_ptr_null(gx_strheap_add(h, "a", 1)); /* and stays failed */
    ck_assert_str_eq(r->bytes, "hello");               /* what it made stays */
    gx_strheap_destroy(&h);
    ck_assert_ptr_null(h);
    gx_strheap_destroy(&h);
}
END_TEST

/* ---- the wire ---- */

/* t's value frame decoded back under descriptor desc (packed from t). */
static int s_wire_back(const gx_tensor *t, const void *frame, size_t len, int64_t max_bytes,
                       gx_tensor **out, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    gx_wire_pack_value_desc(&pk, "s", t);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    ck_assert_int_eq(gx_wire_unpack(sb.data, sb.size, &up, err, errlen), GX_OK);
    char *name = NULL;
    int rc = gx_wire_unpack_value(&up.data, "inputs[0]", max_bytes, frame, len, &name, out, err,
                                  errlen);
    free(name);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

START_TEST(test_wire)
{
    /* lengths that take each str head: fixstr, str8, str16, str32 */
    static char s40[40], s300[300], s70k[70000];
    memset(s40, 'a', sizeof s40 - 1);
    memset(s300, 'b', sizeof s300 - 1);
    memset(s70k, 'c', sizeof s70k - 1);
    const char *v[] = {"", "x", s40, s300, s70k, "\xff\xfe"};
    gx_tensor *t = gx_tensor_new_strings(2, (int64_t[]){2, 3}, v, NULL);
    ck_assert(gx_wire_is_value(GX_KIND_TENSOR, GX_STRING));
    ck_assert(!gx_wire_is_value(GX_KIND_TENSOR, GX_F32));
    size_t n = gx_wire_value_bytes(t);
    unsigned char *buf = malloc(n);
    gx_wire_value_write(t, buf);
    ck_assert_uint_eq(buf[0], 0x96); /* a fixarray of 6 */
    char err[256];
    gx_tensor *back = NULL;
    ck_assert_msg(s_wire_back(t, buf, n, 1 << 20, &back, err, sizeof err) == GX_OK, "%s", err);
    for (int i = 0; i < 6; i++) {
        size_t a, b;
        const char *x = gx_tensor_string(t, i, &a), *y = gx_tensor_string(back, i, &b);
        ck_assert(a == b && memcmp(x, y, a) == 0);
    }
    gx_tensor_destroy(&back);

    /* hostile frames: each refused with a message, nothing made */
    ck_assert_int_eq(s_wire_back(t, buf, n - 1, 1 << 20, &back, err, sizeof err), GX_EPROTO);
    ck_assert_msg(strstr(err, "claims") || strstr(err, "truncated"), "%s", err);
    ck_assert_int_eq(s_wire_back(t, buf, 0, 1 << 20, &back, err, sizeof err), GX_EPROTO);
    ck_assert_int_eq(s_wire_back(t, buf, 1, 1 << 20, &back, err, sizeof err), GX_EPROTO);
    ck_assert_int_eq(s_wire_back(t, buf, n, 1000, &back, err, sizeof err), GX_ELIMIT);
    ck_assert_msg(strstr(err, "limit"), "%s", err);
    ck_assert_ptr_null(back);
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, buf, n);
    longer[n] = 0xa0;
    ck_assert_int_eq(s_wire_back(t, longer, n + 1, 1 << 20, &back, err, sizeof err), GX_EPROTO);
    ck_assert_msg(strstr(err, "after its string array"), "%s", err);
    free(longer);
    gx_tensor *one = gx_tensor_new_strings(1, (int64_t[]){1}, STRS("x"), NULL);
    static const struct {
        const char *what;
        unsigned char b[8];
        size_t n;
        int rc;
    } bad[] = {
        {"a huge length", {0x91, 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'}, 7, GX_EPROTO},
        {"a str16 past the end", {0x91, 0xda, 0x01, 0x00, 'x'}, 5, GX_EPROTO},
        {"a negative int", {0x91, 0xff}, 2, GX_EPROTO},
        {"an int", {0x91, 0x05}, 2, GX_EPROTO},
        {"a nested array", {0x91, 0x91, 0xa1, 'x'}, 4, GX_EPROTO},
        {"a map", {0x81, 0xa1, 'x', 0xa1, 'y'}, 5, GX_EPROTO},
        {"two strings for one", {0x92, 0xa1, 'x', 0xa1, 'y'}, 5, GX_ESHAPE},
        {"an array32 of 2^32-1", {0xdd, 0xff, 0xff, 0xff, 0xff, 0xa0}, 6, GX_ESHAPE},
        {"a truncated array16", {0xdc, 0x00}, 2, GX_EPROTO},
        {"nil", {0xc0}, 1, GX_EPROTO},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = s_wire_back(one, bad[i].b, bad[i].n, 1 << 20, &back, err, sizeof err);
        ck_assert_msg(rc == bad[i].rc, "%s: %d (%s)", bad[i].what, rc, err);
        ck_assert_ptr_null(back);
    }
    /* bin elements are strings too */
    const unsigned char bin[] = {0x91, 0xc4, 0x02, 'o', 'k'};
    ck_assert_int_eq(s_wire_back(one, bin, sizeof bin, 1 << 20, &back, err, sizeof err), GX_OK);
    ck_assert_str_eq(gx_tensor_string(back, 0, NULL), "ok");
    gx_tensor_destroy(&back);

    /* a string constant inside a graph, and a string sequence, round trip */
    gx_graph *g = gx_graph_new("c");
    gx_tensor *c = gx_tensor_clone(t);
    ck_assert_int_eq(gx_graph_add_const(g, "k", &c), GX_OK);
    gx_graph_add_node(g, "Identity", "i", 1, (const char *[]){"k"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, g);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    ck_assert_int_eq(gx_wire_unpack(sb.data, sb.size, &up, err, sizeof err), GX_OK);
    gx_graph *g2 = NULL;
    const gx_wire_limits lim = {1000, 1 << 20};
    ck_assert_msg(gx_wire_unpack_graph(&up.data, &lim, &g2, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_str_eq(gx_tensor_string(g2->consts[0].t, 4, NULL), s70k);
    gx_graph_destroy(&g2);
    const gx_wire_limits tight = {1000, 60000};
    ck_assert_int_eq(gx_wire_unpack_graph(&up.data, &tight, &g2, err, sizeof err), GX_ELIMIT);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    gx_graph_destroy(&g);

    gx_tensor *seq = gx_sequence_new(GX_STRING), *it = gx_tensor_clone(one);
    ck_assert_int_eq(gx_sequence_append(seq, &it), GX_OK);
    it = gx_tensor_clone(t);
    ck_assert_int_eq(gx_sequence_append(seq, &it), GX_OK);
    n = gx_wire_value_bytes(seq);
    unsigned char *sbuf = malloc(n);
    gx_wire_value_write(seq, sbuf);
    ck_assert_msg(s_wire_back(seq, sbuf, n, 1 << 20, &back, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(gx_sequence_length(back), 2);
    ck_assert_str_eq(gx_tensor_string(gx_sequence_item(back, 1), 3, NULL), s300);
    gx_tensor_destroy(&back);
    free(sbuf);
    gx_tensor_destroy(&seq);
    gx_tensor_destroy(&one);
    free(buf);
    gx_tensor_destroy(&t);
}
END_TEST

/* ---- .npy files ---- */

/* Writes an npy 1.0 file of descr and shape text with data bytes. */
static void s_npy(const char *path, const char *descr, const char *shape, const void *data,
                  size_t n)
{
    char dict[256];
    int dn = snprintf(dict, sizeof dict,
                      "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    size_t total = (10 + (size_t)dn + 1 + 63) / 64 * 64;
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(total - 10), 0};
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, (size_t)dn, f);
    for (size_t i = 10 + (size_t)dn; i < total - 1; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, n, f);
    fclose(f);
}

START_TEST(test_npy)
{
    char *dir = gxt_tmpdir(), path[512], err[256];
    snprintf(path, sizeof path, "%s/s.npy", dir);
    /* numpy's '<U2': UCS-4 code points, trailing NULs dropped */
    const uint32_t u[] = {'h', 0xe9, 0x1d11e, 0, 0, 0};
    s_npy(path, "<U2", "(3,)", u, sizeof u);
    gx_tensor *t = NULL;
    ck_assert_msg(gx_npy_load(path, &t, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_str_eq(gx_tensor_string(t, 0, NULL), "h\xc3\xa9");
    ck_assert_str_eq(gx_tensor_string(t, 1, NULL), "\xf0\x9d\x84\x9e");
    ck_assert_str_eq(gx_tensor_string(t, 2, NULL), "");
    /* saved and loaded back: all UTF-8, so '<U' again */
    ck_assert_int_eq(gx_npy_save(path, t, err, sizeof err), GX_OK);
    gx_tensor *back = NULL;
    ck_assert_msg(gx_npy_load(path, &back, err, sizeof err) == GX_OK, "%s", err);
    for (int i = 0; i < 3; i++)
        ck_assert_str_eq(gx_tensor_string(back, i, NULL), gx_tensor_string(t, i, NULL));
    gx_tensor_destroy(&back);
    gx_tensor_destroy(&t);
    /* '|S3': bytes; saved back as 'S' since one is not UTF-8 */
    s_npy(path, "|S3", "(2, 1)", "ab\xff" "c\0\0", 6);
    ck_assert_msg(gx_npy_load(path, &t, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(gx_tensor_ndim(t), 2);
    ck_assert_str_eq(gx_tensor_string(t, 0, NULL), "ab\xff");
    ck_assert_str_eq(gx_tensor_string(t, 1, NULL), "c");
    ck_assert_int_eq(gx_npy_save(path, t, err, sizeof err), GX_OK);
    ck_assert_msg(gx_npy_load(path, &back, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_str_eq(gx_tensor_string(back, 0, NULL), "ab\xff");
    gx_tensor_destroy(&back);
    gx_tensor_destroy(&t);
    /* refused: big-endian, a surrogate, a width past the limit, short data */
    s_npy(path, ">U1", "(1,)", "\0\0\0a", 4);
    ck_assert_int_eq(gx_npy_load(path, &t, err, sizeof err), GX_EDTYPE);
    const uint32_t sur[] = {0xd800};
    s_npy(path, "<U1", "(1,)", sur, 4);
    ck_assert_int_eq(gx_npy_load(path, &t, err, sizeof err), GX_EFORMAT);
    ck_assert_msg(strstr(err, "U+D800"), "%s", err);
    s_npy(path, "<U99999999999", "(1,)", "", 0);
    ck_assert_int_eq(gx_npy_load(path, &t, err, sizeof err), GX_EDTYPE);
    s_npy(path, "|S4", "(2,)", "abcd", 4);
    ck_assert_int_eq(gx_npy_load(path, &t, err, sizeof err), GX_EFORMAT);
    ck_assert_ptr_null(t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- the ops ---- */

#define CAST_TO(code) NODE(A_INT("to", code))
enum { S_ONNX_FLOAT = 1, S_ONNX_INT32 = 6, S_ONNX_INT64 = 7, S_ONNX_STRING = 8, S_ONNX_BOOL = 9,
       S_ONNX_DOUBLE = 11, S_ONNX_UINT8 = 2 };

START_TEST(test_cast)
{
    /* numbers to text, as numpy's astype(str) */
    gx_view f = ot_view(GX_F32,
                        ot_copy((float[]){0.1f, 1.0f, -2.5f, 1e-5f, 1e16f, 123456.0f, 0.0f,
                                          0.039187793f, 3.4028235e38f},
                                9 * sizeof(float)),
                        SHAPE(9));
    EXPECT(GX_OP_CAST, CAST_TO(S_ONNX_STRING), 1, &f, SHAPE(9), "0.1", "1.0", "-2.5", "1e-05",
           "1e+16", "123456.0", "0.0", "0.039187793", "3.4028235e+38");
    gx_view d = ot_view(GX_F64, ot_copy((double[]){0.1, 1.0 / 3, -1e-300}, 24), SHAPE(3));
    EXPECT(GX_OP_CAST, CAST_TO(S_ONNX_STRING), 1, &d, SHAPE(3), "0.1", "0.3333333333333333",
           "-1e-300");
    float special[3] = {__builtin_nanf(""), __builtin_inff(), -__builtin_inff()};
    gx_view sp = ot_view(GX_F32, ot_copy(special, sizeof special), SHAPE(3));
    EXPECT(GX_OP_CAST, CAST_TO(S_ONNX_STRING), 1, &sp, SHAPE(3), "nan", "inf", "-inf");
    gx_view i = I64V(SHAPE(3), -9223372036854775807 - 1, 0, 42);
    EXPECT(GX_OP_CAST, CAST_TO(S_ONNX_STRING), 1, &i, SHAPE(3), "-9223372036854775808", "0", "42");
    gx_view b = ot_view(GX_BOOL, ot_copy((uint8_t[]){1, 0}, 2), SHAPE(2));
    EXPECT(GX_OP_CAST, CAST_TO(S_ONNX_STRING), 1, &b, SHAPE(2), "True", "False");

    /* text to numbers */
    gx_view s = SV(SHAPE(8), "3.5", " 1e3", "INF", "-inf", "+Inf", "NaN", "abc", "100.5");
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out;
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_CAST, CAST_TO(S_ONNX_FLOAT), 1, &s, 1, av, &out, err), GX_OK);
    const float *y = out.data;
    ck_assert(y[0] == 3.5f && y[1] == 1000.0f && y[2] == __builtin_inff() &&
              y[3] == -__builtin_inff() && y[4] == __builtin_inff() && y[5] != y[5] &&
              y[6] != y[6] && y[7] == 100.5f);
    ck_assert_int_eq(ot_run(GX_OP_CAST, CAST_TO(S_ONNX_INT64), 1, &s, 3, av, &out, err), GX_OK);
    const int64_t *yi = out.data;
    ck_assert(yi[0] == 3 && yi[1] == 1000 && yi[2] == INT64_MAX && yi[3] == INT64_MIN &&
              yi[5] == 0 && yi[6] == 0 && yi[7] == 100);
    gx_view big = SV(SHAPE(3), "9223372036854775807", "300", "-1");
    ck_assert_int_eq(ot_run(GX_OP_CAST, CAST_TO(S_ONNX_INT64), 1, &big, 1, av, &out, err), GX_OK);
    ck_assert(((int64_t *)out.data)[0] == INT64_MAX); /* exact, not through a double */
    ck_assert_int_eq(ot_run(GX_OP_CAST, CAST_TO(S_ONNX_UINT8), 1, &big, 1, av, &out, err), GX_OK);
    ck_assert(((uint8_t *)out.data)[1] == 44 && ((uint8_t *)out.data)[2] == 255); /* modulo */
    gx_view tf = SV(SHAPE(4), "true", "0", "2", "");
    ck_assert_int_eq(ot_run(GX_OP_CAST, CAST_TO(S_ONNX_BOOL), 1, &tf, 1, av, &out, err), GX_OK);
    ck_assert(memcmp(out.data, (uint8_t[]){1, 0, 1, 0}, 4) == 0);
    /* round trip of every float32 shortest form */
    gx_view back = SV(SHAPE(2), "0.039187793", "3.4028235e+38");
    ck_assert_int_eq(ot_run(GX_OP_CAST, CAST_TO(S_ONNX_FLOAT), 1, &back, 1, av, &out, err), GX_OK);
    ck_assert(((float *)out.data)[0] == 0.039187793f && ((float *)out.data)[1] == 3.4028235e38f);
    /* string to string, and CastLike */
    EXPECT(GX_OP_CAST, CAST_TO(S_ONNX_STRING), 1, &s, SHAPE(8), "3.5", " 1e3", "INF", "-inf",
           "+Inf", "NaN", "abc", "100.5");
    gx_view like[2] = {ot_view(GX_I32, ot_copy((int32_t[]){7, -7}, 8), SHAPE(2)),
                       ot_view(GX_STRING, NULL, SHAPE(0))};
    EXPECT(GX_OP_CAST_LIKE, NULL, 2, like, SHAPE(2), "7", "-7");
    /* Cast to a dtype ONNX has and gexec lacks stays refused */
    ot_expect_error(GX_OP_CAST, CAST_TO(14), 1, &s, GX_EDTYPE, NULL);
}
END_TEST

START_TEST(test_compare_select)
{
    gx_view in[2] = {SV(SHAPE(2, 2), "a", "b", "", "d"), SV(SHAPE(2), "a", "")};
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out;
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_EQUAL, NULL, 2, in, 3, av, &out, err), GX_OK);
    ck_assert_int_eq(out.dtype, GX_BOOL);
    ck_assert(memcmp(out.data, (uint8_t[]){1, 0, 0, 0}, 4) == 0);
    gx_view w[3] = {ot_view(GX_BOOL, ot_copy((uint8_t[]){1, 0}, 2), SHAPE(2)),
                    SV(SHAPE(2, 2), "p", "q", "r", "s"), SV(SHAPE(1), "z")};
    EXPECT(GX_OP_WHERE, NULL, 3, w, SHAPE(2, 2), "p", "z", "r", "z");
    /* the ordering comparisons and arithmetic take none */
    ot_expect_error(GX_OP_LESS, NULL, 2, in, GX_EDTYPE,
                    "Less: input 0 is string, expected a numeric or bool dtype");
    ot_expect_error(GX_OP_ADD, NULL, 2, in, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_RELU, NULL, 1, in, GX_EDTYPE, NULL);
    /* an op whose infer lets any dtype through meets the string rule */
    ot_expect_error(GX_OP_CENTER_CROP_PAD, NODE(), 2,
                    (gx_view[]){SV(SHAPE(2), "a", "b"), I64V(SHAPE(1), 3)}, GX_EDTYPE,
                    "CenterCropPad: input 0 is a string tensor; CenterCropPad takes none");
}
END_TEST

/* The data-movement ops copy handles: each on a string tensor. */
START_TEST(test_move)
{
    gx_view x = SV(SHAPE(2, 3), "a", "b", "c", "d", "e", "f");
    EXPECT(GX_OP_IDENTITY, NULL, 1, &x, SHAPE(2, 3), "a", "b", "c", "d", "e", "f");
    gx_view rs[2] = {x, I64V(SHAPE(2), 3, 2)};
    EXPECT(GX_OP_RESHAPE, NULL, 2, rs, SHAPE(3, 2), "a", "b", "c", "d", "e", "f");
    EXPECT(GX_OP_FLATTEN, NODE(A_INT("axis", 0)), 1, &x, SHAPE(1, 6), "a", "b", "c", "d", "e",
           "f");
    gx_view us[2] = {x, I64V(SHAPE(1), 1)};
    EXPECT(GX_OP_UNSQUEEZE, NULL, 2, us, SHAPE(2, 1, 3), "a", "b", "c", "d", "e", "f");
    gx_view sq[2] = {SV(SHAPE(1, 2), "a", "b"), I64V(SHAPE(1), 0)};
    EXPECT(GX_OP_SQUEEZE, NULL, 2, sq, SHAPE(2), "a", "b");
    EXPECT(GX_OP_TRANSPOSE, NODE(), 1, &x, SHAPE(3, 2), "a", "d", "b", "e", "c", "f");
    gx_view cc[2] = {x, SV(SHAPE(2, 1), "g", "h")};
    EXPECT(GX_OP_CONCAT, NODE(A_INT("axis", 1)), 2, cc, SHAPE(2, 4), "a", "b", "c", "g", "d",
           "e", "f", "h");
    gx_view ga[2] = {x, I64V(SHAPE(3), 2, 0, -1)};
    EXPECT(GX_OP_GATHER, NODE(A_INT("axis", 1)), 2, ga, SHAPE(2, 3), "c", "a", "c", "f", "d",
           "f");
    gx_view gn[2] = {x, I64V(SHAPE(2, 2), 1, 0, 0, 2)};
    EXPECT(GX_OP_GATHER_ND, NULL, 2, gn, SHAPE(2), "d", "c");
    gx_view ge[2] = {x, I64V(SHAPE(2, 1), 1, 2)};
    EXPECT(GX_OP_GATHER_ELEMENTS, NODE(A_INT("axis", 1)), 2, ge, SHAPE(2, 1), "b", "f");
    gx_view sl[4] = {x, I64V(SHAPE(1), 1), I64V(SHAPE(1), 3), I64V(SHAPE(1), 1)};
    EXPECT(GX_OP_SLICE, NULL, 4, sl, SHAPE(2, 2), "b", "c", "e", "f");
    gx_view ex[2] = {SV(SHAPE(1, 2), "x", "y"), I64V(SHAPE(2), 2, 2)};
    EXPECT(GX_OP_EXPAND, NULL, 2, ex, SHAPE(2, 2), "x", "y", "x", "y");
    gx_view ti[2] = {SV(SHAPE(2), "x", "y"), I64V(SHAPE(1), 2)};
    EXPECT(GX_OP_TILE, NULL, 2, ti, SHAPE(4), "x", "y", "x", "y");
    /* ReverseSequence: time axis 0, batch axis 1; column 0 reversed over
     * 3 steps, column 1 over 2 */
    gx_view rv[2] = {SV(SHAPE(3, 2), "a", "b", "c", "d", "e", "f"), I64V(SHAPE(2), 3, 2)};
    EXPECT(GX_OP_REVERSE_SEQUENCE, NODE(), 2, rv, SHAPE(3, 2), "e", "d", "c", "b", "a", "f");
    /* Compress along axis 1, and over the flattened input */
    gx_view cm[2] = {x, ot_view(GX_BOOL, ot_copy((uint8_t[]){1, 0, 1}, 3), SHAPE(3))};
    EXPECT(GX_OP_COMPRESS, NODE(A_INT("axis", 1)), 2, cm, SHAPE(2, 2), "a", "c", "d", "f");
    EXPECT(GX_OP_COMPRESS, NODE(), 2, cm, SHAPE(2), "a", "c");
    /* Pad: constant mode with a string value, with none (""), and edge */
    gx_view pd[3] = {SV(SHAPE(1, 2), "a", "b"), I64V(SHAPE(4), 0, 1, 1, 0), SV(SHAPE(1), "-")};
    EXPECT(GX_OP_PAD, NODE(), 3, pd, SHAPE(2, 3), "-", "a", "b", "-", "-", "-");
    EXPECT(GX_OP_PAD, NODE(), 2, pd, SHAPE(2, 3), "", "a", "b", "", "", "");
    EXPECT(GX_OP_PAD, NODE(A_STR("mode", "edge")), 2, pd, SHAPE(2, 3), "a", "a", "b", "a", "a",
           "b");
    /* the opset 2 form's float value cannot be a string */
    ot_expect_error(GX_OP_PAD, NODE(A_INTS("pads", 0, 1, 0, 0)), 1, pd, GX_EDTYPE,
                    "Pad: string data needs pads and constant_value as inputs (opset 11 or "
                    "later)");
    /* the scatters write handles; a reduction needs numbers */
    gx_view se[3] = {x, I64V(SHAPE(1, 2), 2, 0), SV(SHAPE(1, 2), "p", "q")};
    EXPECT(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1)), 3, se, SHAPE(2, 3), "q", "b", "p",
           "d", "e", "f");
    EXPECT(GX_OP_SCATTER, NODE(A_INT("axis", 1)), 3, se, SHAPE(2, 3), "q", "b", "p", "d", "e",
           "f");
    gx_view sn[3] = {x, I64V(SHAPE(1, 1), 1), SV(SHAPE(1, 3), "u", "v", "w")};
    EXPECT(GX_OP_SCATTER_ND, NODE(), 3, sn, SHAPE(2, 3), "a", "b", "c", "u", "v", "w");
    ot_expect_error(GX_OP_SCATTER_ND, NODE(A_STR("reduction", "add")), 3, sn, GX_EDTYPE,
                    "ScatterND: reduction 'add' is not supported for string");
    /* ConstantOfShape with a string value */
    gx_view cs = I64V(SHAPE(2), 2, 1);
    EXPECT(GX_OP_CONSTANT_OF_SHAPE,
           NODE(((gx_attr){.name = (char *)"value", .type = GX_ATTR_TENSOR,
                           .t = ot_keep(gx_tensor_new_strings(1, (int64_t[]){1}, STRS("zz"),
                                                             NULL))})),
           1, &cs, SHAPE(2, 1), "zz", "zz");
    /* Split: two outputs */
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[2];
    char err[ERRLEN];
    gx_view sp[2] = {x, I64V(SHAPE(2), 1, 2)};
    ck_assert_int_eq(ot_run_n(GX_OP_SPLIT, NODE(A_INT("axis", 1)), 2, sp, 3, av, 2, out, err),
                     GX_OK);
    CHECK(&out[0], SHAPE(2, 1), "a", "d");
    CHECK(&out[1], SHAPE(2, 2), "b", "c", "e", "f");
    /* Shape and Size read only the shape */
    ck_assert_int_eq(ot_run(GX_OP_SIZE, NULL, 1, &x, 1, av, out, err), GX_OK);
    ck_assert_int_eq(*(int64_t *)out[0].data, 6);
}
END_TEST


START_TEST(test_normalizer)
{
    gx_view x = SV(SHAPE(1, 5), "Monday", "tuesday", "MONDAY", "Ärger", "straße");
    /* case-insensitive stopwords; ß has no one-letter upper case */
    EXPECT(GX_OP_STRING_NORMALIZER,
           NODE(A_STR("case_change_action", "UPPER"), A_STRS("stopwords", "monday")), 1, &x, SHAPE(1, 3),
           "TUESDAY", "ÄRGER", "STRAßE");
    EXPECT(GX_OP_STRING_NORMALIZER,
           NODE(A_STR("case_change_action", "LOWER"), A_INT("is_case_sensitive", 1),
                A_STRS("stopwords", "monday", "MONDAY")),
           1, &x, SHAPE(1, 4), "monday", "tuesday", "ärger", "straße");
    gx_view y = SV(SHAPE(3), "a", "b", "a");
    EXPECT(GX_OP_STRING_NORMALIZER, NODE(A_STRS("stopwords", "A", "b")), 1, &y, SHAPE(1), "");
    EXPECT(GX_OP_STRING_NORMALIZER, NODE(), 1, &y, SHAPE(3), "a", "b", "a");
    /* bytes that are not UTF-8 pass as they are */
    gx_view bad = SV(SHAPE(1), "a\xff" "b");
    EXPECT(GX_OP_STRING_NORMALIZER, NODE(A_STR("case_change_action", "UPPER")), 1, &bad,
           SHAPE(1), "A\xff" "B");
    ot_expect_error(GX_OP_STRING_NORMALIZER, NODE(A_STR("case_change_action", "TITLE")), 1, &y,
                    GX_EATTR,
                    "StringNormalizer: case_change_action \"TITLE\" is not NONE, LOWER or UPPER");
    gx_view two = SV(SHAPE(2, 1), "a", "b");
    ot_expect_error(GX_OP_STRING_NORMALIZER, NODE(), 1, &two, GX_ESHAPE, NULL);
    gx_view num = I64V(SHAPE(1), 1);
    ot_expect_error(GX_OP_STRING_NORMALIZER, NODE(), 1, &num, GX_EDTYPE, NULL);
}
END_TEST

START_TEST(test_concat_split)
{
    gx_view in[2] = {SV(SHAPE(2, 2), "a", "", "c", "dd"), SV(SHAPE(2), "1", "")};
    EXPECT(GX_OP_STRING_CONCAT, NULL, 2, in, SHAPE(2, 2), "a1", "", "c1", "dd");
    gx_view x = SV(SHAPE(3), "  a b  c ", "", "x");
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[2];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run_n(GX_OP_STRING_SPLIT, NODE(), 1, &x, 3, av, 2, out, err), GX_OK);
    CHECK(&out[0], SHAPE(3, 3), "a", "b", "c", "", "", "", "x", "", "");
    ck_assert(memcmp(out[1].data, (int64_t[]){3, 0, 1}, 24) == 0);
    gx_view csv = SV(SHAPE(2), "a,,b", "c");
    ck_assert_int_eq(ot_run_n(GX_OP_STRING_SPLIT, NODE(A_STR("delimiter", ",")), 1, &csv, 1, av,
                              2, out, err),
                     GX_OK);
    CHECK(&out[0], SHAPE(2, 3), "a", "", "b", "c", "", "");
    ck_assert(memcmp(out[1].data, (int64_t[]){3, 1}, 16) == 0);
    ck_assert_int_eq(ot_run_n(GX_OP_STRING_SPLIT,
                              NODE(A_STR("delimiter", ","), A_INT("maxsplit", 1)), 1, &csv, 1,
                              av, 2, out, err),
                     GX_OK);
    CHECK(&out[0], SHAPE(2, 2), "a", ",b", "c", "");
    ck_assert_int_eq(ot_run_n(GX_OP_STRING_SPLIT, NODE(A_INT("maxsplit", 1)), 1, &x, 1, av, 2,
                              out, err),
                     GX_OK);
    CHECK(&out[0], SHAPE(3, 2), "a", "b  c ", "", "", "x", "");
    gx_view num[2] = {I64V(SHAPE(1), 1), I64V(SHAPE(1), 1)};
    ot_expect_error(GX_OP_STRING_CONCAT, NULL, 2, num, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_STRING_SPLIT, NODE(), 1, num, GX_EDTYPE, NULL);
}
END_TEST

/* ---- compiled and run: dynamic shapes, control flow, the heap bound ---- */

static int s_run(const gx_graph *g, const gx_view *inputs, int64_t max_tensor_bytes,
                 gx_tensor **out, char *err, size_t errlen)
{
    const gxd_compile_limits lim = {.max_nodes = 1000, .max_tensor_bytes = max_tensor_bytes,
                                    .max_arena_bytes = 256ll << 20};
    gxd_plan *plan = NULL;
    int rc = gxd_compile(g, inputs, &lim, &plan, err, errlen);
    if (rc < 0)
        return rc;
    void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    rc = gxd_frame_init(&f, plan, arena, inputs, &lim, &stop, err, errlen);
    if (rc == GX_OK)
        rc = gxd_exec_seq(&f);
    for (size_t k = 0; rc == GX_OK && k < plan->n_outputs; k++) {
        const gx_view *v = gxd_frame_output(&f, k);
        out[k] = gx_tensor_new_copy(v->dtype, v->ndim, v->shape, v->data,
                                    (size_t)v->numel * gx_dtype_size(v->dtype));
        ck_assert_ptr_nonnull(out[k]);
    }
    gxd_frame_fini(&f); /* the heap goes: the copies must not need it */
    free(arena);
    gxd_plan_destroy(&plan);
    return rc;
}

/* x (strings) -> StringNormalizer (dynamic) -> If(c) { Cast to float ->
 * Cast to string } else { x } -> y; and StringConcat(x, k) with a string
 * constant k. */
static gx_graph *s_graph(void)
{
    gx_graph *g = gx_graph_new("strings");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_STRING, 1, (int64_t[]){3}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "c", GX_BOOL, 0, NULL), GX_OK);
    gx_tensor *k = gx_tensor_new_strings(0, NULL, STRS("!"), NULL);
    ck_assert_int_eq(gx_graph_add_const(g, "k", &k), GX_OK);
    gx_node *n = gx_graph_add_node(g, "StringNormalizer", "norm", 1, (const char *[]){"x"}, 1,
                                   (const char *[]){"n"});
    gx_tensor *sw = gx_tensor_new_strings(1, (int64_t[]){1}, STRS("skip"), NULL);
    ck_assert_int_eq(gx_node_set_tensor(n, "stopwords", &sw), GX_OK);
    gx_graph *then = gx_graph_new("then");
    gx_node *c1 = gx_graph_add_node(then, "Cast", "tof", 1, (const char *[]){"n"}, 1,
                                    (const char *[]){"f"});
    gx_node_set_int(c1, "to", S_ONNX_DOUBLE);
    gx_node *c2 = gx_graph_add_node(then, "Cast", "tos", 1, (const char *[]){"f"}, 1,
                                    (const char *[]){"t"});
    gx_node_set_int(c2, "to", S_ONNX_STRING);
    gx_graph_add_output(then, "t");
    gx_graph *els = gx_graph_new("else");
    gx_graph_add_node(els, "Identity", "id", 1, (const char *[]){"n"}, 1, (const char *[]){"e"});
    gx_graph_add_output(els, "e");
    gx_node *iff = gx_graph_add_node(g, "If", "if", 1, (const char *[]){"c"}, 1,
                                     (const char *[]){"y"});
    ck_assert_int_eq(gx_node_set_graph(iff, "then_branch", &then), GX_OK);
    ck_assert_int_eq(gx_node_set_graph(iff, "else_branch", &els), GX_OK);
    gx_graph_add_node(g, "StringConcat", "cat", 2, (const char *[]){"y", "k"}, 1,
                      (const char *[]){"z"});
    gx_graph_add_output(g, "y");
    gx_graph_add_output(g, "z");
    return g;
}

START_TEST(test_graph)
{
    gx_graph *g = s_graph();
    gx_tensor *x = ot_keep(gx_tensor_new_strings(1, (int64_t[]){3}, STRS("1.50", "skip", "2e2"),
                                                NULL));
    uint8_t c = 1;
    gx_view in[2] = {ot_view(GX_STRING, x->data, SHAPE(3)), ot_view(GX_BOOL, &c, 0, NULL)};
    gx_tensor *out[2] = {0};
    char err[512];
    ck_assert_msg(s_run(g, in, 64 << 20, out, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(out[0]->numel, 2);
    ck_assert_str_eq(gx_tensor_string(out[0], 0, NULL), "1.5");
    ck_assert_str_eq(gx_tensor_string(out[0], 1, NULL), "200.0");
    ck_assert_str_eq(gx_tensor_string(out[1], 1, NULL), "200.0!");
    gx_tensor_destroy(&out[0]);
    gx_tensor_destroy(&out[1]);
    c = 0; /* the other branch: the strings as they came */
    ck_assert_msg(s_run(g, in, 64 << 20, out, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_str_eq(gx_tensor_string(out[1], 0, NULL), "1.50!");
    gx_tensor_destroy(&out[0]);
    gx_tensor_destroy(&out[1]);
    /* a job whose strings pass the limit fails naming it */
    static char longs[3][700];
    for (int i = 0; i < 3; i++) {
        memset(longs[i], 'a' + i, sizeof longs[i] - 1);
    }
    gx_tensor *lx = ot_keep(gx_tensor_new_strings(1, (int64_t[]){3},
                                                 STRS(longs[0], longs[1], longs[2]), NULL));
    in[0].data = lx->data;
    ck_assert_int_eq(s_run(g, in, 1024, out, err, sizeof err), GX_ELIMIT);
    ck_assert_msg(strstr(err, "node 'cat' (StringConcat): the job's strings exceed the limit of "
                              "1024 bytes"),
                  "%s", err);
    gx_graph_destroy(&g);

    /* a string input that becomes a shape: never keyed, found at run time */
    g = gx_graph_new("shape");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_STRING, 1, (int64_t[]){2}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "v", GX_F32, 1, (int64_t[]){6}), GX_OK);
    gx_node *cn = gx_graph_add_node(g, "Cast", "c", 1, (const char *[]){"x"}, 1,
                                    (const char *[]){"shp"});
    gx_node_set_int(cn, "to", S_ONNX_INT64);
    gx_graph_add_node(g, "Reshape", "r", 2, (const char *[]){"v", "shp"}, 1,
                      (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    float v6[6] = {0};
    for (int round = 0; round < 2; round++) {
        gx_tensor *sx = ot_keep(gx_tensor_new_strings(
            1, (int64_t[]){2}, round ? STRS("3", "2") : STRS("2", "3"), NULL));
        gx_view sin[2] = {ot_view(GX_STRING, sx->data, SHAPE(2)), ot_view(GX_F32, v6, SHAPE(6))};
        ck_assert_msg(s_run(g, sin, 64 << 20, out, err, sizeof err) == GX_OK, "%s", err);
        ck_assert_int_eq(out[0]->shape[0], round ? 3 : 2);
        gx_tensor_destroy(&out[0]);
    }
    gx_graph_destroy(&g);

    /* strings refused where a graph declares numbers, and to Add */
    g = gx_graph_new("bad");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_STRING, 1, (int64_t[]){3}), GX_OK);
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    ck_assert_int_eq(s_run(g, in, 64 << 20, out, err, sizeof err), GX_EDTYPE);
    ck_assert_msg(strstr(err, "(Add)"), "%s", err);
    gx_graph_destroy(&g);
}
END_TEST

/* ---- through gexecd ---- */

START_TEST(test_daemon)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char err[256];
    gx_client *cl = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(cl);
    gx_graph *g = s_graph();
    gx_graph_id id;
    ck_assert_msg(gx_client_load(cl, g, &id) == GX_OK, "%s", gx_client_last_error(cl));
    gx_tensor *x = gx_tensor_new_strings(1, (int64_t[]){3}, STRS("0.25", "skip", "-3"), NULL);
    uint8_t c = 1;
    gx_tensor *ct = gx_tensor_new_copy(GX_BOOL, 0, NULL, &c, 1);
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "x", x);
    gx_request_add_input(rq, "c", ct);
    gx_result *r = NULL;
    for (int round = 0; round < 2; round++) { /* the second from the cached plan */
        ck_assert_msg(gx_client_run(cl, rq, &r) == GX_OK, "%s", gx_client_last_error(cl));
        const gx_tensor *y = gx_result_output(r, 0), *z = gx_result_output(r, 1);
        ck_assert_int_eq(gx_tensor_dtype(y), GX_STRING);
        ck_assert_int_eq(gx_tensor_numel(y), 2);
        ck_assert_str_eq(gx_tensor_string(y, 0, NULL), "0.25");
        ck_assert_str_eq(gx_tensor_string(y, 1, NULL), "-3.0");
        ck_assert_str_eq(gx_tensor_string(z, 1, NULL), "-3.0!");
        gx_result_destroy(&r);
    }
    gx_request_destroy(&rq);

    /* a string tensor where the graph declares bool: the job's error */
    rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "x", x);
    gx_request_add_input(rq, "c", x);
    ck_assert_int_ne(gx_client_run(cl, rq, &r), GX_OK);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    /* strings never come from a caller's raw buffer or shared memory */
    rq = gx_request_new();
    ck_assert_int_eq(gx_request_add_input_data(rq, "x", GX_STRING, 1, (int64_t[]){3},
                                               gx_tensor_cdata(x), 24),
                     GX_EINVAL);
    gx_request_destroy(&rq);
    ck_assert_int_eq(gx_client_ping(cl), GX_OK);
    gx_tensor_destroy(&x);
    gx_tensor_destroy(&ct);
    gx_graph_destroy(&g);
    gx_client_destroy(&cl);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

Suite *strings_suite(void)
{
    Suite *s = suite_create("strings");
    TCase *tc = tcase_create("strings");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_tensor);
    tcase_add_test(tc, test_heap);
    tcase_add_test(tc, test_wire);
    tcase_add_test(tc, test_npy);
    tcase_add_test(tc, test_cast);
    tcase_add_test(tc, test_compare_select);
    tcase_add_test(tc, test_move);
    tcase_add_test(tc, test_normalizer);
    tcase_add_test(tc, test_concat_split);
    tcase_add_test(tc, test_graph);
    suite_add_tcase(s, tc);
    tc = tcase_create("daemon");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_daemon);
    suite_add_tcase(s, tc);
    return s;
}
