/*
 * The op test harness shared by the tests/check_ops*.c suites: test memory
 * freed after each test (add ot_free_all as the checked fixture's teardown),
 * literal and random views, attribute literals, and running one op through
 * its schema and CPU kernel the way the executor does.
 *
 *     gx_view x = F32V(SHAPE(2, 2), 1, -2, 3, -4);
 *     ot_expect(GX_OP_RELU, NODE(), 1, &x, F32V(SHAPE(2, 2), 1, 0, 3, 0), 0, 0);
 */
#ifndef GX_TESTS_OPTEST_H
#define GX_TESTS_OPTEST_H

#include <check.h>

#include "ops/op.h"

#define ERRLEN 256

#define SHAPE(...)                                                            \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]) { __VA_ARGS__ }

#define F32V(shape, ...)                                                      \
    ot_view(GX_F32, ot_copy((float[]){__VA_ARGS__}, sizeof((float[]){__VA_ARGS__})), shape)

#define RANDV(...) ot_rand(GX_F32, SHAPE(__VA_ARGS__))

#define A_INT(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_INT, .i = (v)})

#define A_FLOAT(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_FLOAT, .f = (v)})

#define A_INTS(key, ...)                                                      \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_INTS, .ints = (int64_t[]){__VA_ARGS__}, \
               .n = sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)})

#define NODE(...)                                                             \
    (&(gx_node){.n_attr = sizeof((gx_attr[]){__VA_ARGS__}) / sizeof(gx_attr),  \
                .attr = (gx_attr[]){__VA_ARGS__}})

/* Test memory (zeroed, GX_ALIGN-aligned, 64 spare bytes), freed by
 * ot_free_all. */
void *ot_alloc(size_t nbytes);
void ot_free_all(void);
void *ot_copy(const void *src, size_t nbytes);
/* A view of data (not copied) with the given dtype and shape. */
gx_view ot_view(gx_dtype dt, void *data, int ndim, const int64_t *shape);
/* A float32 view shaped like x, for a reference's values (ot_alloc'd). */
gx_view ot_like_f32(const gx_view *x);
/* Bytes of v's data. */
size_t ot_nbytes(const gx_view *v);
/* Deterministic pseudo-random float in [-2, 2). */
float ot_randf(void);
/* A view of random values (float32: ot_randf; other dtypes: random bytes). */
gx_view ot_rand(gx_dtype dt, int ndim, const int64_t *shape);

/* The index (idx[0..nd)) of flat element `flat` of a tensor of shape. */
void ot_unravel(int64_t flat, int nd, const int64_t *shape, int64_t *idx);
/* Flat offset in a tensor of shape (nd, shape) of the index idx of a
 * broadcast result of rank ndo >= nd (dims aligned right, size-1 dims
 * repeat). */
int64_t ot_bcast_off(int ndo, const int64_t *idx, int nd, const int64_t *shape);

/* t (checked non-NULL), destroyed by ot_free_all: a tensor whose store
 * backs a test's views or attributes. */
struct gx_tensor *ot_keep(struct gx_tensor *t);
/* A string view of strs (as many as the shape holds), backed by a kept
 * tensor. */
gx_view ot_strings(int ndim, const int64_t *shape, const char *const *strs);
#define STRS(...) ((const char *const[]){__VA_ARGS__})
#define NSTR(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))
#define SV(shape, ...) ot_strings(shape, STRS(__VA_ARGS__))
/* A STRINGS attribute (a 1-D string tensor, kept). */
#define A_STRS(key, ...)                                                      \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_TENSOR,                 \
               .t = ot_keep(gx_tensor_new_strings(1, (int64_t[]){NSTR(__VA_ARGS__)}, \
                                                  STRS(__VA_ARGS__), NULL))})

/* The string heap kernels run by ot_run_n make strings in; freed (with
 * every string in it) by ot_free_all. */
gx_strheap *ot_strs(void);
/* Resolves attributes into av, infers (inputs carry their data, as at run
 * time) and checks the string rule (gx_op_check_strings), allocates the
 * outputs (filled with 0xFF bytes so unwritten elements show) and scratch,
 * and runs the kernel as nth shares with one gx_coop, ith = 0..nth-1 in
 * turn. Returns the first failing status; err (ERRLEN bytes) says why. */
int ot_run_n(gx_op op, const gx_node *node, int n_in, const gx_view *in, int nth, gx_attrval *av,
             int n_out, gx_view *out, char *err);
/* ot_run_n with the nth shares on nth threads at once. */
int ot_run_threads(gx_op op, const gx_node *node, int n_in, const gx_view *in, int nth,
                   gx_attrval *av, int n_out, gx_view *out, char *err);
/* ot_run_n with one output. */
int ot_run(gx_op op, const gx_node *node, int n_in, const gx_view *in, int nth, gx_attrval *av,
           gx_view *out, char *err);
/* Expects infer to fail with status and exactly the message msg (or, when
 * msg is NULL, any message). */
void ot_expect_error(gx_op op, const gx_node *node, int n_in, const gx_view *in, int status,
                     const char *msg);
/* gxt_allclose, also taking equal infinities as equal. */
bool ot_close(const float *got, const float *want, int64_t n, float rtol, float atol);
void ot_check_shape(const gx_view *v, int ndim, const int64_t *shape);
/* Runs each of nth shares alone into outputs filled with 0x00 and with
 * 0xFF (a byte that differs from the fill in either was written by that
 * share): every byte of every output must be written by exactly one. */
void ot_check_shares(gx_op op, const gx_attrval *av, int n_in, const gx_view *in, int n_out,
                     const gx_view *out, int nth);
/* Runs op with nth = 1, then 3 and 7: every output must equal the nth = 1
 * one byte for byte, and each share run alone on outputs filled with 0x00
 * and with 0xFF must write disjoint bytes that together cover them all
 * (ot_check_shares). Fills out[0..n_out) (n_out <= 4) with the nth = 1
 * outputs (ot_alloc'd). */
void ot_check_threads(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n_out,
                      gx_view *out);
/* ot_check_threads with one float32 output, compared with want. */
void ot_check_f32(gx_op op, const gx_node *node, int n_in, const gx_view *in, const gx_view *want,
                  float rtol, float atol);
/* Runs op (nth = 1 and 3) and compares the float32 output with the given
 * shape and values. */
void ot_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view want,
               float rtol, float atol);

#endif
