/* The wire codec: canonical graph encoding, ids, descriptors, hostile bytes. */
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"
#include "tests/fuzz/fuzz.h"
#include "tests/testutil.h"

static const gx_wire_limits s_lim = {1000, 1 << 20};

/* A graph using every attribute type; attrs are set in the given order. */
static gx_graph *s_graph(bool reverse_attrs, float w0)
{
    gx_graph *g = gx_graph_new("wire");
    int64_t xs[2] = {-1, 3}, ws[2] = {3, 2};
    gx_graph_add_input(g, "x", GX_F32, 2, xs);
    gx_tensor *w = gx_tensor_new(GX_F32, 2, ws);
    ((float *)gx_tensor_data(w))[0] = w0;
    gx_graph_add_const(g, "w", &w);
    gx_node *n = gx_graph_add_node(g, "Gemm", "gemm", 3, (const char *[]){"x", "w", ""}, 1,
                                   (const char *[]){"y"});
    int64_t ints[3] = {1, -2, 3};
    double floats[2] = {0.5, -1.25};
    gx_tensor *t = gx_tensor_new(GX_I64, 1, (int64_t[]){2});
    if (reverse_attrs) {
        gx_node_set_tensor(n, "t", &t);
        gx_node_set_string(n, "s", "hello");
        gx_node_set_floats(n, "fs", floats, 2);
        gx_node_set_ints(n, "is", ints, 3);
        gx_node_set_float(n, "alpha", 0.5);
        gx_node_set_int(n, "transB", 1);
    } else {
        gx_node_set_int(n, "transB", 1);
        gx_node_set_float(n, "alpha", 0.5);
        gx_node_set_ints(n, "is", ints, 3);
        gx_node_set_floats(n, "fs", floats, 2);
        gx_node_set_string(n, "s", "hello");
        gx_node_set_tensor(n, "t", &t);
    }
    gx_graph_add_output(g, "y");
    return g;
}

static void s_pack(const gx_graph *g, msgpack_sbuffer *sb)
{
    msgpack_packer pk;
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, g);
}

/* Decode bytes as a graph; returns the status, message in err. */
static int s_decode(const void *buf, size_t len, gx_graph **g, char *err, size_t errlen)
{
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int rc = gx_wire_unpack(buf, len, &up, err, errlen);
    if (rc == GX_OK)
        rc = gx_wire_unpack_graph(&up.data, &s_lim, g, err, errlen);
    msgpack_unpacked_destroy(&up);
    return rc;
}

START_TEST(test_graph_round_trip_is_canonical)
{
    gx_graph *g = s_graph(false, 1.0f), *back = NULL;
    msgpack_sbuffer a, b;
    char err[256];
    s_pack(g, &a);
    ck_assert_int_eq(s_decode(a.data, a.size, &back, err, sizeof err), GX_OK);
    ck_assert_uint_eq(back->n_nodes, 1);
    ck_assert_uint_eq(back->nodes[0]->n_attr, 6);
    ck_assert_str_eq(back->nodes[0]->in[2], "");
    ck_assert_int_eq(back->inputs[0].shape[0], -1);
    s_pack(back, &b);
    ck_assert_uint_eq(a.size, b.size);
    ck_assert_mem_eq(a.data, b.data, a.size);
    msgpack_sbuffer_destroy(&a);
    msgpack_sbuffer_destroy(&b);
    gx_graph_destroy(&g);
    gx_graph_destroy(&back);
}
END_TEST

START_TEST(test_graph_id)
{
    gx_graph *g1 = s_graph(false, 1.0f), *g2 = s_graph(true, 1.0f), *g3 = s_graph(false, 2.0f);
    gx_graph_id a, b, c;
    gx_wire_graph_id(g1, &a);
    gx_wire_graph_id(g2, &b);
    gx_wire_graph_id(g3, &c);
    ck_assert_uint_eq(strlen(a.hex), 64);
    ck_assert_str_eq(a.hex, b.hex); /* attribute order does not matter */
    ck_assert_str_ne(a.hex, c.hex); /* weights do */
    gx_graph_destroy(&g1);
    gx_graph_destroy(&g2);
    gx_graph_destroy(&g3);
}
END_TEST

START_TEST(test_tensor_desc)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int64_t shape[3] = {2, 3, 4};
    gx_wire_pack_tensor_desc(&pk, "x", GX_I32, 3, shape);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    char err[256], *name = NULL;
    gx_dtype dt;
    int ndim;
    int64_t got[GX_MAX_DIMS];
    size_t nbytes;
    ck_assert_int_eq(gx_wire_unpack(sb.data, sb.size, &up, err, sizeof err), GX_OK);
    ck_assert_int_eq(gx_wire_unpack_tensor_desc(&up.data, "in", 1000, &name, &dt, &ndim, got,
                                                &nbytes, err, sizeof err),
                     GX_OK);
    ck_assert_str_eq(name, "x");
    ck_assert_int_eq(dt, GX_I32);
    ck_assert_int_eq(ndim, 3);
    ck_assert_int_eq(got[2], 4);
    ck_assert_uint_eq(nbytes, 96);
    free(name);
    ck_assert_int_eq(gx_wire_unpack_tensor_desc(&up.data, "in", 95, &name, &dt, &ndim, got,
                                                &nbytes, err, sizeof err),
                     GX_ELIMIT);
    ck_assert_ptr_null(name);
    ck_assert_ptr_nonnull(strstr(err, "limit"));
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_check_hostile_bytes)
{
    char err[256];
    /* array32 announcing 2^32-1 elements in 5 bytes */
    const uint8_t huge[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01};
    ck_assert_int_eq(gx_wire_check(huge, sizeof huge, 32, err, sizeof err), GX_EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "announces"));
    /* map16 announcing 1000 pairs with 2 bytes left */
    const uint8_t map[] = {0xde, 0x03, 0xe8, 0x01, 0x02};
    ck_assert_int_eq(gx_wire_check(map, sizeof map, 32, err, sizeof err), GX_EPROTO);
    /* str32 longer than the buffer */
    const uint8_t str[] = {0xdb, 0x7f, 0xff, 0xff, 0xff, 'a'};
    ck_assert_int_eq(gx_wire_check(str, sizeof str, 32, err, sizeof err), GX_EPROTO);
    /* the never-used byte 0xc1 */
    const uint8_t c1[] = {0xc1};
    ck_assert_int_eq(gx_wire_check(c1, 1, 32, err, sizeof err), GX_EPROTO);
    /* trailing bytes */
    const uint8_t two[] = {0x01, 0x02};
    ck_assert_int_eq(gx_wire_check(two, 2, 32, err, sizeof err), GX_EPROTO);
    ck_assert_int_eq(gx_wire_check(two, 1, 32, err, sizeof err), GX_OK);
    ck_assert_int_eq(gx_wire_check(two, 0, 32, err, sizeof err), GX_EPROTO);
    /* 100 nested one-element arrays */
    uint8_t deep[101];
    memset(deep, 0x91, 100);
    deep[100] = 0x00;
    ck_assert_int_eq(gx_wire_check(deep, sizeof deep, 32, err, sizeof err), GX_EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "deeper"));
    ck_assert_int_eq(gx_wire_check(deep + 90, 11, 32, err, sizeof err), GX_OK);
    /* an empty container is a level too: 32 containers pass, 33 do not */
    deep[100] = 0x90;
    ck_assert_int_eq(gx_wire_check(deep + 69, 32, 32, err, sizeof err), GX_OK);
    ck_assert_int_eq(gx_wire_check(deep + 68, 33, 32, err, sizeof err), GX_EPROTO);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    ck_assert_int_eq(gx_wire_unpack(deep + 69, 32, &up, err, sizeof err), GX_OK);
    msgpack_unpacked_destroy(&up);
    /* every truncation of a valid graph is refused, none crashes */
    gx_graph *g = s_graph(false, 1.0f), *back = NULL;
    msgpack_sbuffer sb;
    s_pack(g, &sb);
    for (size_t n = 0; n < sb.size; n++) {
        ck_assert_int_ne(s_decode(sb.data, n, &back, err, sizeof err), GX_OK);
        ck_assert_ptr_null(back);
    }
    msgpack_sbuffer_destroy(&sb);
    gx_graph_destroy(&g);
}
END_TEST

/* Pack a graph map whose one node/constant is given by the caller. */
static int s_decode_custom(void (*fill)(msgpack_packer *pk), char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    fill(&pk);
    gx_graph *g = NULL;
    int rc = s_decode(sb.data, sb.size, &g, err, errlen);
    gx_graph_destroy(&g);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* The start of a graph map with n more fields: empty inputs and outputs. */
static void s_fill_begin(msgpack_packer *pk, size_t n)
{
    msgpack_pack_map(pk, 2 + n);
    gx_mp_pack_str(pk, "inputs");
    msgpack_pack_array(pk, 0);
    gx_mp_pack_str(pk, "outputs");
    msgpack_pack_array(pk, 0);
}

static void s_fill_bad_const(msgpack_packer *pk)
{
    s_fill_begin(pk, 2);
    gx_mp_pack_str(pk, "constants");
    msgpack_pack_array(pk, 1);
    msgpack_pack_array(pk, 2);
    gx_mp_pack_str(pk, "c");
    msgpack_pack_map(pk, 3);
    gx_mp_pack_str(pk, "dtype");
    gx_mp_pack_str(pk, "float32");
    gx_mp_pack_str(pk, "shape");
    msgpack_pack_array(pk, 1);
    msgpack_pack_int(pk, 4);
    gx_mp_pack_str(pk, "data");
    msgpack_pack_bin(pk, 3);
    msgpack_pack_bin_body(pk, "abc", 3);
    gx_mp_pack_str(pk, "nodes");
    msgpack_pack_array(pk, 0);
}

static void s_fill_bad_attr(msgpack_packer *pk)
{
    s_fill_begin(pk, 1);
    gx_mp_pack_str(pk, "nodes");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 5);
    gx_mp_pack_str(pk, "op");
    gx_mp_pack_str(pk, "Relu");
    gx_mp_pack_str(pk, "name");
    gx_mp_pack_str(pk, "r");
    gx_mp_pack_str(pk, "inputs");
    msgpack_pack_array(pk, 0);
    gx_mp_pack_str(pk, "outputs");
    msgpack_pack_array(pk, 1);
    gx_mp_pack_str(pk, "y");
    gx_mp_pack_str(pk, "attrs");
    msgpack_pack_map(pk, 1);
    gx_mp_pack_str(pk, "alpha");
    msgpack_pack_array(pk, 2);
    gx_mp_pack_str(pk, "float");
    gx_mp_pack_str(pk, "not a float");
}

static void s_fill_too_many_nodes(msgpack_packer *pk)
{
    s_fill_begin(pk, 1);
    gx_mp_pack_str(pk, "nodes");
    msgpack_pack_array(pk, 1001);
    for (int i = 0; i < 1001; i++)
        msgpack_pack_nil(pk);
}

static void s_fill_bad_dtype(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 3);
    gx_mp_pack_str(pk, "outputs");
    msgpack_pack_array(pk, 0);
    gx_mp_pack_str(pk, "inputs");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 3);
    gx_mp_pack_str(pk, "name");
    gx_mp_pack_str(pk, "x");
    gx_mp_pack_str(pk, "dtype");
    gx_mp_pack_str(pk, "float99");
    gx_mp_pack_str(pk, "shape");
    msgpack_pack_array(pk, 0);
    gx_mp_pack_str(pk, "nodes");
    msgpack_pack_array(pk, 0);
}

START_TEST(test_graph_decode_errors)
{
    char err[256];
    ck_assert_int_eq(s_decode_custom(s_fill_bad_const, err, sizeof err), GX_ESHAPE);
    ck_assert_ptr_nonnull(strstr(err, "constants[0]"));
    ck_assert_int_eq(s_decode_custom(s_fill_bad_attr, err, sizeof err), GX_EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "nodes[0].attrs.alpha"));
    ck_assert_int_eq(s_decode_custom(s_fill_too_many_nodes, err, sizeof err), GX_ELIMIT);
    ck_assert_int_eq(s_decode_custom(s_fill_bad_dtype, err, sizeof err), GX_EDTYPE);
    ck_assert_ptr_nonnull(strstr(err, "float99"));
}
END_TEST

/* gexec's decoder makes the objects msgpack-c makes: every type byte, each
 * size class, empty containers, signed values that are not negative. */
START_TEST(test_decoder_matches_msgpack_c)
{
    static const struct {
        const char *bytes;
        size_t len;
    } cases[] = {
#define B(s) {s, sizeof s - 1}
        B("\x00"), B("\x7f"), B("\xe0"), B("\xff"), B("\xc0"), B("\xc2"), B("\xc3"),
        B("\xcc\xff"), B("\xcd\xff\xfe"), B("\xce\x80\x00\x00\x01"),
        B("\xcf\xff\xff\xff\xff\xff\xff\xff\xff"), B("\xd0\x80"), B("\xd0\x05"),
        B("\xd1\x80\x00"), B("\xd2\xff\xff\xff\xfe"), B("\xd2\x00\x00\x00\x07"),
        B("\xd3\x80\x00\x00\x00\x00\x00\x00\x00"), B("\xca\x3f\xc0\x00\x00"),
        B("\xcb\xc0\x09\x21\xfb\x54\x44\x2d\x18"), B("\xa0"), B("\xa3" "abc"),
        B("\xd9\x02hi"), B("\xda\x00\x01z"), B("\xdb\x00\x00\x00\x00"),
        B("\xc4\x02\x00\x01"), B("\xc5\x00\x00"), B("\xc6\x00\x00\x00\x01\x07"),
        B("\x90"), B("\x80"), B("\x92\x01\x90"), B("\xdc\x00\x02\xc0\xc3"),
        B("\xdd\x00\x00\x00\x01\x80"), B("\x82\xa1" "a\x01\xa1" "b\x91\xa0"),
        B("\xde\x00\x01\x01\x02"), B("\xdf\x00\x00\x00\x01\xc0\xc0"),
#undef B
    };
    char err[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        msgpack_unpacked ours, ref;
        msgpack_unpacked_init(&ours);
        msgpack_unpacked_init(&ref);
        size_t off = 0;
        ck_assert_msg(gx_wire_unpack(cases[i].bytes, cases[i].len, &ours, err, sizeof err) == GX_OK,
                      "case %zu: %s", i, err);
        ck_assert_int_eq(msgpack_unpack_next(&ref, cases[i].bytes, cases[i].len, &off),
                         MSGPACK_UNPACK_SUCCESS);
        ck_assert_msg(msgpack_object_equal(ours.data, ref.data), "case %zu differs", i);
        ck_assert_int_eq(ours.data.type, ref.data.type);
        msgpack_unpacked_destroy(&ours);
        msgpack_unpacked_destroy(&ref);
    }
    /* a whole graph, and a float NaN (compared bit for bit by the fuzz target) */
    gx_graph *g = s_graph(false, 1.0f);
    msgpack_sbuffer sb;
    s_pack(g, &sb);
    ck_assert_int_eq(gx_fuzz_wire((const uint8_t *)sb.data, sb.size), 0);
    msgpack_sbuffer_destroy(&sb);
    gx_graph_destroy(&g);
    ck_assert_int_eq(gx_fuzz_wire((const uint8_t *)"\x91\xcb\x7f\xf8\0\0\0\0\0\x01", 10), 0);
}
END_TEST

/* {v: 1, type: 'LOAD', id: 1, graph: g}, as a client sends it. */
static void s_pack_load(const gx_graph *g, msgpack_sbuffer *sb)
{
    msgpack_packer pk;
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    gx_mp_pack_str(&pk, "v");
    msgpack_pack_int(&pk, 1);
    gx_mp_pack_str(&pk, "type");
    gx_mp_pack_str(&pk, "LOAD");
    gx_mp_pack_str(&pk, "id");
    msgpack_pack_int(&pk, 1);
    gx_mp_pack_str(&pk, "graph");
    gx_wire_pack_graph(&pk, g);
}

/* A graph nested n levels deep needs exactly GX_WIRE_DEPTH_FOR_NESTING(n)
 * levels of msgpack in a request, so a daemon whose depth limit follows from
 * its nesting limit never refuses it for its depth; one level more of
 * nesting is GX_ELIMIT naming the node, the limit and its config key. */
START_TEST(test_nesting_limit)
{
    char err[1024];
    static const int levels[] = {1, 3, 5, 16, GX_WIRE_MAX_NESTING};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        int n = levels[i];
        gx_graph *g = gxt_nested_if(n), *back = NULL;
        msgpack_sbuffer sb;
        s_pack_load(g, &sb);
        int depth = GX_WIRE_DEPTH_FOR_NESTING(n);
        ck_assert_int_eq(gx_wire_check(sb.data, sb.size, depth, err, sizeof err), GX_OK);
        ck_assert_int_eq(gx_wire_check(sb.data, sb.size, depth - 1, err, sizeof err), GX_EPROTO);
        ck_assert_int_ge(gx_wire_depth_for_nesting(n), depth);
        msgpack_unpacked up;
        msgpack_unpacked_init(&up);
        ck_assert_msg(gx_wire_unpack_depth(sb.data, sb.size, gx_wire_depth_for_nesting(n), &up, err,
                                           sizeof err) == GX_OK,
                      "%d levels: %s", n, err);
        const msgpack_object *go = gx_mp_find(&up.data, "graph");
        ck_assert_msg(gx_wire_unpack_graph_nested(go, &s_lim, n, &back, err, sizeof err) == GX_OK,
                      "%d levels: %s", n, err);
        gx_wire_graph_id(back, &(gx_graph_id){0});
        gx_graph_destroy(&back);
        /* one level fewer allowed: the node holding level n is named */
        ck_assert_int_eq(gx_wire_unpack_graph_nested(go, &s_lim, n - 1 ? n - 1 : 1, &back, err,
                                                     sizeof err),
                         n == 1 ? GX_OK : GX_ELIMIT);
        if (n > 1) {
            char want[64];
            snprintf(want, sizeof want, "node 'if%d' (If)", n);
            ck_assert_msg(strstr(err, want) && strstr(err, "limits.max_nesting") &&
                              strstr(err, "top-level node is 'if1'"),
                          "%s", err);
            snprintf(want, sizeof want, "nesting limit of %d", n - 1);
            ck_assert_msg(strstr(err, want), "%s", err);
            ck_assert_ptr_null(back);
        }
        gx_graph_destroy(&back);
        /* the default allows GX_WIRE_NESTING_DEFAULT levels */
        ck_assert_int_eq(gx_wire_unpack_graph(go, &s_lim, &back, err, sizeof err),
                         n <= GX_WIRE_NESTING_DEFAULT ? GX_OK : GX_ELIMIT);
        gx_graph_destroy(&back);
        msgpack_unpacked_destroy(&up);
        msgpack_sbuffer_destroy(&sb);
        gx_graph_destroy(&g);
    }
    /* one level of slack, never less than the depth of messages that carry
     * no graph */
    ck_assert_int_eq(gx_wire_depth_for_nesting(1), GX_WIRE_MAX_DEPTH);
    ck_assert_int_eq(gx_wire_depth_for_nesting(0),
                     GX_WIRE_DEPTH_FOR_NESTING(GX_WIRE_NESTING_DEFAULT + 1));
    ck_assert_int_eq(gx_wire_depth_for_nesting(GX_WIRE_MAX_NESTING), GX_WIRE_DEPTH_LIMIT);
}
END_TEST

Suite *wire_suite(void)
{
    Suite *s = suite_create("wire");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, test_graph_round_trip_is_canonical);
    tcase_add_test(tc, test_graph_id);
    tcase_add_test(tc, test_tensor_desc);
    tcase_add_test(tc, test_check_hostile_bytes);
    tcase_add_test(tc, test_graph_decode_errors);
    tcase_add_test(tc, test_decoder_matches_msgpack_c);
    tcase_add_test(tc, test_nesting_limit);
    suite_add_tcase(s, tc);
    return s;
}
