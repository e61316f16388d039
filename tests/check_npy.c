/*
 * .npy files (libclient/npy.c): round trips for every dtype numpy has,
 * hand-written headers of versions 1.0, 2.0 and 3.0, and hostile files, each
 * of which must fail with the right status and a message, through both
 * gx_npy_parse (memory) and gx_npy_load (a file).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/internal.h"
#include "tests/testutil.h"

/* .npy bytes: magic, version major.0, the header dict padded with spaces and
 * '\n' to a multiple of 64 (as numpy writes it), then len bytes of data. */
static unsigned char *s_npy(int major, const char *dict, const void *data, size_t len,
                            size_t *out_len)
{
    size_t lenbytes = major == 1 ? 2 : 4;
    size_t pre = 8 + lenbytes, dn = strlen(dict);
    size_t total_hdr = (pre + dn + 1 + 63) / 64 * 64;
    size_t hlen = total_hdr - pre;
    unsigned char *b = malloc(total_hdr + len + 1);
    ck_assert_ptr_nonnull(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    for (size_t i = 0; i < lenbytes; i++)
        b[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + pre, dict, dn);
    memset(b + pre + dn, ' ', hlen - dn - 1);
    b[total_hdr - 1] = '\n';
    if (len)
        memcpy(b + total_hdr, data, len);
    *out_len = total_hdr + len;
    return b;
}

static void s_write(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* buf must be refused with status, by gx_npy_parse and by gx_npy_load, with
 * a message containing needle (and, for the file, its path). */
static void s_expect_fail(const void *buf, size_t len, int status, const char *needle)
{
    char err[512] = "";
    gx_tensor *t = (gx_tensor *)&t; /* must be reset to NULL */
    int rc = gx_npy_parse(buf, len, &t, err, sizeof err);
    ck_assert_msg(rc == status, "parse: got %s (%s), want %s", gx_status_name(rc), err,
                  gx_status_name(status));
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, needle), "parse: message '%s' lacks '%s'", err, needle);

    char *dir = gxt_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/bad.npy", dir);
    s_write(path, buf, len);
    err[0] = '\0';
    t = (gx_tensor *)&t;
    rc = gx_npy_load(path, &t, err, sizeof err);
    ck_assert_msg(rc == status, "load: got %s (%s), want %s", gx_status_name(rc), err,
                  gx_status_name(status));
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, needle), "load: message '%s' lacks '%s'", err, needle);
    ck_assert_msg(strstr(err, path), "load: message '%s' does not name the file", err);
    gxt_rmtree(dir);
    free(dir);
}

static void s_expect_dict_fail(int major, const char *dict, size_t datalen, int status,
                               const char *needle)
{
    unsigned char *data = calloc(1, datalen ? datalen : 1);
    size_t len;
    unsigned char *b = s_npy(major, dict, data, datalen, &len);
    s_expect_fail(b, len, status, needle);
    free(b);
    free(data);
}

/* A tensor of dt and shape filled with a byte pattern valid for dt. */
static gx_tensor *s_pattern(gx_dtype dt, int ndim, const int64_t *shape)
{
    gx_tensor *t = gx_tensor_new(dt, ndim, shape);
    ck_assert_ptr_nonnull(t);
    unsigned char *p = gx_tensor_data(t);
    for (size_t i = 0; i < gx_tensor_nbytes(t); i++)
        p[i] = dt == GX_BOOL ? (unsigned char)(i % 3 == 0) : (unsigned char)(i * 37 + 11);
    return t;
}

static void s_roundtrip(gx_dtype dt, int ndim, const int64_t *shape)
{
    char *dir = gxt_tmpdir(), path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/t.npy", dir);
    gx_tensor *t = s_pattern(dt, ndim, shape), *u = NULL;
    int rc = gx_npy_save(path, t, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "save %s: %s", gx_dtype_name(dt), err);

    /* the file is what numpy writes: format 1.0, data 64-byte aligned */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    size_t hdr = (size_t)st.st_size - gx_tensor_nbytes(t);
    ck_assert_uint_eq(hdr % 64, 0);

    rc = gx_npy_load(path, &u, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "load %s: %s", gx_dtype_name(dt), err);
    ck_assert_int_eq(gx_tensor_dtype(u), dt);
    ck_assert_int_eq(gx_tensor_ndim(u), ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_int_eq(gx_tensor_shape(u)[i], shape[i]);
    ck_assert_int_eq(gx_tensor_numel(u), gx_tensor_numel(t));
    ck_assert_uint_eq(gx_tensor_nbytes(u), gx_tensor_nbytes(t));
    if (gx_tensor_nbytes(t))
        ck_assert_mem_eq(gx_tensor_cdata(u), gx_tensor_cdata(t), gx_tensor_nbytes(t));
    ck_assert_uint_eq((uintptr_t)gx_tensor_cdata(u) % GX_ALIGN, 0);
    gx_tensor_destroy(&u);

    /* the same bytes through gx_npy_parse */
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    rc = gx_npy_parse(buf, (size_t)st.st_size, &u, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "parse %s: %s", gx_dtype_name(dt), err);
    if (gx_tensor_nbytes(t))
        ck_assert_mem_eq(gx_tensor_cdata(u), gx_tensor_cdata(t), gx_tensor_nbytes(t));
    free(buf);
    gx_tensor_destroy(&u);
    gx_tensor_destroy(&t);
    ck_assert_ptr_null(t);
    gxt_rmtree(dir);
    free(dir);
}

static const gx_dtype s_numpy_dtypes[] = {GX_F32, GX_F16, GX_F64, GX_I64, GX_I16,
                                          GX_U16, GX_U32, GX_U64,
                                          GX_I32, GX_I8,  GX_U8,  GX_BOOL};

START_TEST(test_roundtrip_dtypes)
{
    gx_dtype dt = s_numpy_dtypes[_i];
    int64_t s1[1] = {7}, s2[2] = {2, 3}, s4[4] = {2, 1, 3, 2};
    s_roundtrip(dt, 1, s1);
    s_roundtrip(dt, 2, s2);
    s_roundtrip(dt, 4, s4);
}
END_TEST

START_TEST(test_roundtrip_scalar_and_empty)
{
    gx_dtype dt = s_numpy_dtypes[_i];
    int64_t e1[1] = {0}, e2[2] = {0, 3}, e3[3] = {4, 0, 2};
    int64_t m[GX_MAX_DIMS] = {1, 2, 1, 2, 1, 2, 1, 2};
    s_roundtrip(dt, 0, NULL);
    s_roundtrip(dt, 1, e1);
    s_roundtrip(dt, 2, e2);
    s_roundtrip(dt, 3, e3);
    s_roundtrip(dt, GX_MAX_DIMS, m);
}
END_TEST

START_TEST(test_save_header_text)
{
    /* byte for byte what numpy 1.x writes for np.save(p, np.zeros(3, 'f4')) */
    char *dir = gxt_tmpdir(), path[512], err[256];
    snprintf(path, sizeof path, "%s/z.npy", dir);
    int64_t s[1] = {3};
    gx_tensor *t = gx_tensor_new(GX_F32, 1, s);
    ck_assert_int_eq(gx_npy_save(path, t, err, sizeof err), GX_OK);
    unsigned char buf[128 + 12];
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(buf, 1, sizeof buf, f), 128 + 12);
    fclose(f);
    const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    ck_assert_mem_eq(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
    ck_assert_mem_eq(buf + 10, want, strlen(want));
    ck_assert_int_eq(buf[127], '\n');
    ck_assert_int_eq(buf[126], ' ');
    gx_tensor_destroy(&t);

    /* 0-d and 2-d shapes */
    t = gx_tensor_new(GX_I64, 0, NULL);
    ck_assert_int_eq(gx_npy_save(path, t, err, sizeof err), GX_OK);
    f = fopen(path, "rb");
    ck_assert_uint_eq(fread(buf, 1, 128, f), 128);
    fclose(f);
    want = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }";
    ck_assert_mem_eq(buf + 10, want, strlen(want));
    gx_tensor_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_save_errors)
{
    char *dir = gxt_tmpdir(), path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/bf.npy", dir);
    int64_t s[1] = {2};
    gx_tensor *t = gx_tensor_new(GX_BF16, 1, s);
    ck_assert_int_eq(gx_npy_save(path, t, err, sizeof err), GX_EDTYPE);
    ck_assert_ptr_nonnull(strstr(err, "bfloat16"));
    ck_assert_int_ne(access(path, F_OK), 0);
    gx_tensor_destroy(&t);

    t = gx_tensor_new(GX_F32, 1, s);
    snprintf(path, sizeof path, "%s/no/such/dir/x.npy", dir);
    ck_assert_int_eq(gx_npy_save(path, t, err, sizeof err), GX_EIO);
    ck_assert_ptr_nonnull(strstr(err, path));
    ck_assert_int_eq(gx_npy_save(NULL, t, err, sizeof err), GX_EINVAL);
    ck_assert_int_eq(gx_npy_save(path, NULL, err, sizeof err), GX_EINVAL);
    gx_tensor_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A parse that must succeed, with the expected dtype and shape. */
static gx_tensor *s_parse_ok(int major, const char *dict, const void *data, size_t len,
                             gx_dtype dt, int ndim, const int64_t *shape)
{
    size_t blen;
    unsigned char *b = s_npy(major, dict, data, len, &blen);
    char err[256] = "";
    gx_tensor *t = NULL;
    int rc = gx_npy_parse(b, blen, &t, err, sizeof err);
    free(b);
    ck_assert_msg(rc == GX_OK, "header %s: %s", dict, err);
    ck_assert_int_eq(gx_tensor_dtype(t), dt);
    ck_assert_int_eq(gx_tensor_ndim(t), ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_int_eq(gx_tensor_shape(t)[i], shape[i]);
    return t;
}

START_TEST(test_parse_headers)
{
    float f6[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3}, s6[1] = {6}, s321[3] = {3, 2, 1};
    const char *dicts23[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
        "{'shape': (2, 3), 'descr': '<f4', 'fortran_order': False}",
        "{'fortran_order':False,'shape':(2,3),'descr':'<f4'}",
        "{ \"descr\" : \"<f4\" , \"fortran_order\" : False , \"shape\" : ( 2 , 3 , ) , }",
        "{'descr': '=f4', 'fortran_order': False, 'shape': (2L, 3L)}",
        "{'descr': '|f4',\n 'fortran_order': False,\t'shape': (2, 3)}",
    };
    for (int major = 1; major <= 3; major++) {
        for (size_t i = 0; i < sizeof dicts23 / sizeof dicts23[0]; i++) {
            gx_tensor *t = s_parse_ok(major, dicts23[i], f6, sizeof f6, GX_F32, 2, s23);
            ck_assert_mem_eq(gx_tensor_cdata(t), f6, sizeof f6);
            gx_tensor_destroy(&t);
        }
    }
    gx_tensor *t = s_parse_ok(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                              f6, sizeof f6, GX_F32, 1, s6);
    gx_tensor_destroy(&t);
    t = s_parse_ok(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", f6, sizeof f6,
                   GX_F32, 1, s6);
    gx_tensor_destroy(&t);
    t = s_parse_ok(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2, 1), }", f6,
                   sizeof f6, GX_F32, 3, s321);
    gx_tensor_destroy(&t);

    /* 0-d: one element */
    double d = 2.5;
    t = s_parse_ok(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &d, sizeof d,
                   GX_F64, 0, NULL);
    ck_assert_int_eq(gx_tensor_numel(t), 1);
    ck_assert_double_eq(*(const double *)gx_tensor_cdata(t), 2.5);
    gx_tensor_destroy(&t);

    /* empty */
    int64_t s03[2] = {0, 3};
    t = s_parse_ok(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (0, 3), }", NULL, 0,
                   GX_I64, 2, s03);
    ck_assert_uint_eq(gx_tensor_nbytes(t), 0);
    gx_tensor_destroy(&t);

    /* one-byte types: byte order is irrelevant */
    unsigned char u[2] = {200, 7};
    int64_t s2[1] = {2};
    t = s_parse_ok(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", u, 2, GX_U8,
                   1, s2);
    gx_tensor_destroy(&t);
    t = s_parse_ok(1, "{'descr': '<i1', 'fortran_order': False, 'shape': (2,), }", u, 2, GX_I8,
                   1, s2);
    gx_tensor_destroy(&t);
    t = s_parse_ok(1, "{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }", u, 2, GX_U8,
                   1, s2);
    gx_tensor_destroy(&t);

    /* bool bytes other than 0/1 are normalised */
    unsigned char bb[3] = {0, 2, 255};
    int64_t s3[1] = {3};
    t = s_parse_ok(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", bb, 3,
                   GX_BOOL, 1, s3);
    ck_assert_mem_eq(gx_tensor_cdata(t), "\0\1\1", 3);
    gx_tensor_destroy(&t);
}
END_TEST

START_TEST(test_hostile_prefix)
{
    size_t len;
    unsigned char *good = s_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                "\0\0\0\0\0\0\0\0", 8, &len);
    s_expect_fail("", 0, GX_EFORMAT, "bad magic");
    s_expect_fail("\x93NUM", 4, GX_EFORMAT, "bad magic");
    s_expect_fail("\x93NUMPX\x01\x00\x00\x00", 10, GX_EFORMAT, "bad magic");
    s_expect_fail("PK\x03\x04 not npy at all", 20, GX_EFORMAT, "bad magic");

    unsigned char b[256];
    memcpy(b, good, len);
    b[6] = 4;
    s_expect_fail(b, len, GX_EFORMAT, "version 4.0");
    b[6] = 0;
    s_expect_fail(b, len, GX_EFORMAT, "version 0.0");
    b[6] = 1;
    b[7] = 1;
    s_expect_fail(b, len, GX_EFORMAT, "version 1.1");

    /* truncated header: prefix only, and header cut short */
    s_expect_fail(good, 9, GX_EFORMAT, "truncated");
    s_expect_fail(good, 10, GX_EFORMAT, "runs past the end");
    s_expect_fail(good, 40, GX_EFORMAT, "runs past the end");

    /* header length past the file (v1 and v2) */
    memcpy(b, good, len);
    b[8] = 0xff;
    b[9] = 0xff;
    s_expect_fail(b, len, GX_EFORMAT, "header length 65535 runs past");
    unsigned char v2[16] = "\x93NUMPY\x02\x00\xff\xff\xff\xff{}";
    s_expect_fail(v2, 14, GX_EFORMAT, "header length 4294967295 runs past");
    free(good);
}
END_TEST

START_TEST(test_hostile_data)
{
    const char *f23 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    /* truncated data */
    s_expect_dict_fail(1, f23, 23, GX_EFORMAT, "data is truncated");
    s_expect_dict_fail(1, f23, 0, GX_EFORMAT, "needs 24 bytes, the file holds 0");
    /* trailing data */
    s_expect_dict_fail(1, f23, 25, GX_EFORMAT, "trailing");
    /* huge shapes: overflow, and simply more than the file holds */
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (4611686018427387904, 4611686018427387904), }",
                       8, GX_EFORMAT, "overflows");
    s_expect_dict_fail(1, "{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (1152921504606846976,), }",
                       8, GX_EFORMAT, "overflows");
    s_expect_dict_fail(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }",
                       16, GX_EFORMAT, "data is truncated");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (99999999999999999999,), }",
                       8, GX_EFORMAT, "too large");
    /* an empty dim makes the tensor empty however large the others are */
    size_t len;
    unsigned char *b = s_npy(1, "{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (0, 9223372036854775807), }",
                             NULL, 0, &len);
    char err[256];
    gx_tensor *t = NULL;
    ck_assert_int_eq(gx_npy_parse(b, len, &t, err, sizeof err), GX_OK);
    ck_assert_int_eq(gx_tensor_numel(t), 0);
    gx_tensor_destroy(&t);
    free(b);
}
END_TEST

START_TEST(test_hostile_header)
{
    /* dtypes */
    s_expect_dict_fail(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
                       GX_EDTYPE, "big-endian");
    s_expect_dict_fail(1, "{'descr': '!i8', 'fortran_order': False, 'shape': (1,), }", 8,
                       GX_EDTYPE, "big-endian");
    s_expect_dict_fail(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8,
                       GX_EDTYPE, "'<c8'");
    s_expect_dict_fail(1, "{'descr': '>U2', 'fortran_order': False, 'shape': (1,), }", 8,
                       GX_EDTYPE, "not little-endian");
    s_expect_dict_fail(1, "{'descr': '<U2x', 'fortran_order': False, 'shape': (1,), }", 8,
                       GX_EDTYPE, "malformed");
    s_expect_dict_fail(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8,
                       GX_EDTYPE, "unsupported dtype");
    s_expect_dict_fail(1, "{'descr': '', 'fortran_order': False, 'shape': (1,), }", 8, GX_EDTYPE,
                       "unsupported dtype");
    s_expect_dict_fail(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                       8, GX_EDTYPE, "structured");
    /* Fortran order */
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24,
                       GX_EFORMAT, "Fortran");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }", 24,
                       GX_EFORMAT, "fortran_order");
    /* shapes */
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': ('a', 3), }", 24,
                       GX_EFORMAT, "'shape'");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0, 3), }", 24,
                       GX_EFORMAT, "'shape'");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", 24,
                       GX_EFORMAT, "negative");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 24,
                       GX_EFORMAT, "not a tuple");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 24,
                       GX_EFORMAT, "malformed");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, }", 24,
                       GX_EFORMAT, "");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
                       4, GX_EFORMAT, "more than 8 dimensions");
    /* dict structure */
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False}", 4, GX_EFORMAT,
                       "lacks 'shape'");
    s_expect_dict_fail(1, "{'descr': '<f4', 'shape': (1,)}", 4, GX_EFORMAT,
                       "lacks 'fortran_order'");
    s_expect_dict_fail(1, "{}", 4, GX_EFORMAT, "lacks 'descr'");
    s_expect_dict_fail(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                          "'shape': (1,)}",
                       4, GX_EFORMAT, "duplicate key 'descr'");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4,
                       GX_EFORMAT, "unknown key 'x'");
    s_expect_dict_fail(1, "('descr', '<f4')", 4, GX_EFORMAT, "not a dict");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", 4,
                       GX_EFORMAT, "junk");
    s_expect_dict_fail(1, "{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
                       GX_EFORMAT, "npy header");
    s_expect_dict_fail(1, "{descr: '<f4', 'fortran_order': False, 'shape': (1,)}", 4, GX_EFORMAT,
                       "quoted key");
    s_expect_dict_fail(1, "{'descr' '<f4'}", 4, GX_EFORMAT, "expected ':'");
    s_expect_dict_fail(1, "{'descr': '<f4' 'fortran_order': False}", 4, GX_EFORMAT,
                       "expected ',' or '}'");
    s_expect_dict_fail(1, "{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (1,)}", 4,
                       GX_EDTYPE, "descr");
    s_expect_dict_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", 4,
                       GX_EFORMAT, "");
    s_expect_dict_fail(1, "", 4, GX_EFORMAT, "not a dict");

    /* a NUL inside the header */
    size_t len;
    unsigned char *b = s_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                             "\0\0\0\0", 4, &len);
    b[12] = '\0';
    s_expect_fail(b, len, GX_EFORMAT, "npy header");
    free(b);
}
END_TEST

/* Every prefix of a valid file and every single-byte change to its header is
 * either refused cleanly or parsed into a consistent tensor. */
START_TEST(test_hostile_mutations)
{
    size_t len;
    float f6[6] = {1, 2, 3, 4, 5, 6};
    unsigned char *good =
        s_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f6, sizeof f6,
              &len);
    char err[256];
    gx_tensor *t;
    for (size_t cut = 0; cut < len; cut++) {
        unsigned char *b = malloc(cut ? cut : 1);
        memcpy(b, good, cut);
        t = NULL;
        err[0] = '\0';
        ck_assert_int_eq(gx_npy_parse(b, cut, &t, err, sizeof err), GX_EFORMAT);
        ck_assert_ptr_null(t);
        ck_assert_int_ne(err[0], '\0');
        free(b);
    }
    static const unsigned char vals[] = {0, 1, '\'', '"', '(', ')', ',', ':', '}', '{',
                                         '-', '9', 'L', ' ', '\\', 0x7f, 0x80, 0xff};
    unsigned char *b = malloc(len);
    for (size_t pos = 0; pos < 128; pos++) {
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(b, good, len);
            b[pos] = vals[v];
            t = NULL;
            int rc = gx_npy_parse(b, len, &t, err, sizeof err);
            if (rc == GX_OK) {
                ck_assert_uint_le(gx_tensor_nbytes(t), len);
                gx_tensor_destroy(&t);
            } else {
                ck_assert_ptr_null(t);
                ck_assert(rc == GX_EFORMAT || rc == GX_EDTYPE);
            }
        }
    }
    free(b);
    free(good);
}
END_TEST

START_TEST(test_load_errors)
{
    char *dir = gxt_tmpdir(), path[512], err[512] = "";
    gx_tensor *t = NULL;
    snprintf(path, sizeof path, "%s/missing.npy", dir);
    ck_assert_int_eq(gx_npy_load(path, &t, err, sizeof err), GX_EIO);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(err, path));
    ck_assert_int_eq(gx_npy_load(dir, &t, err, sizeof err), GX_EIO);
    ck_assert_ptr_nonnull(strstr(err, "directory"));
    ck_assert_int_eq(gx_npy_load(NULL, &t, err, sizeof err), GX_EINVAL);
    ck_assert_int_eq(gx_npy_load(path, NULL, err, sizeof err), GX_EINVAL);
    ck_assert_int_eq(gx_npy_parse("", 0, NULL, err, sizeof err), GX_EINVAL);
    /* err may be NULL */
    ck_assert_int_eq(gx_npy_load(path, &t, NULL, 0), GX_EIO);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A pipe is not a regular file: it is read whole, then parsed. */
START_TEST(test_load_fifo)
{
    char *dir = gxt_tmpdir(), path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/pipe.npy", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    int32_t v[3] = {1, -2, 3};
    size_t len;
    unsigned char *b =
        s_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", v, sizeof v, &len);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(path, O_WRONLY);
        ssize_t w = fd >= 0 ? write(fd, b, len) : -1;
        _exit(w == (ssize_t)len ? 0 : 1);
    }
    gx_tensor *t = NULL;
    int rc = gx_npy_load(path, &t, err, sizeof err);
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_int_eq(gx_tensor_dtype(t), GX_I32);
    ck_assert_mem_eq(gx_tensor_cdata(t), v, sizeof v);
    gx_tensor_destroy(&t);
    free(b);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *npy_suite(void)
{
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("roundtrip");
    int n = (int)(sizeof s_numpy_dtypes / sizeof s_numpy_dtypes[0]);
    tcase_add_loop_test(tc, test_roundtrip_dtypes, 0, n);
    tcase_add_loop_test(tc, test_roundtrip_scalar_and_empty, 0, n);
    tcase_add_test(tc, test_save_header_text);
    tcase_add_test(tc, test_save_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("parse");
    tcase_add_test(tc, test_parse_headers);
    tcase_add_test(tc, test_load_errors);
    tcase_add_test(tc, test_load_fifo);
    suite_add_tcase(s, tc);

    tc = tcase_create("hostile");
    tcase_add_test(tc, test_hostile_prefix);
    tcase_add_test(tc, test_hostile_data);
    tcase_add_test(tc, test_hostile_header);
    tcase_add_test(tc, test_hostile_mutations);
    suite_add_tcase(s, tc);
    return s;
}
