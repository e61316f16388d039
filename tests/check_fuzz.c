/*
 * The fuzz targets (tests/fuzz/) replay their corpus: every file in
 * tests/fuzz/corpus/<target>/ goes through its gx_fuzz_* function once, so
 * the seeds and every input libFuzzer found interesting (crashes that were
 * fixed included) stay guarded in `make check`, and under ASan/UBSan in
 * build-asan. Set GX_FUZZ_VERBOSE=1 to print each file before it runs.
 * tests/fuzz/run.sh grows the corpus; tests/fuzz/crashes/ holds reproducers
 * of bugs not fixed yet and is not replayed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/testutil.h"

static const struct {
    const char *name;
    int (*fn)(const uint8_t *data, size_t size);
} s_targets[] = {
    {"wire", gx_fuzz_wire},
    {"npy", gx_fuzz_npy},
    {"yaml", gx_fuzz_yaml},
    {"onnx", gx_fuzz_onnx},
    {"config", gx_fuzz_config},
    {"artifact", gx_fuzz_artifact},
    {"consts", gx_fuzz_consts},
};

/* The whole file in a buffer of exactly its size (so ASan sees overreads). */
static uint8_t *s_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    uint8_t *buf = malloc(n ? (size_t)n : 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

START_TEST(test_replay_corpus)
{
    char rel[64], dir[4096];
    snprintf(rel, sizeof rel, "tests/fuzz/corpus/%s", s_targets[_i].name);
    snprintf(dir, sizeof dir, "%s", gxt_srcpath(rel));
    bool verbose = getenv("GX_FUZZ_VERBOSE") != NULL;
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    ck_assert_msg(n >= 0, "%s: %s", dir, strerror(errno));
    int replayed = 0;
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
        if (ents[i]->d_name[0] != '.') {
            size_t len;
            uint8_t *buf = s_slurp(path, &len);
            if (verbose)
                fprintf(stderr, "fuzz %s: %s (%zu bytes)\n", s_targets[_i].name, path, len);
            ck_assert_int_eq(s_targets[_i].fn(buf, len), 0);
            free(buf);
            replayed++;
        }
        free(ents[i]);
    }
    free(ents);
    ck_assert_msg(replayed > 0, "%s: no corpus files to replay", dir);
}
END_TEST

/* The targets also take what no file holds: nothing at all. */
START_TEST(test_empty_input)
{
    static const uint8_t byte = 0;
    ck_assert_int_eq(s_targets[_i].fn(&byte, 0), 0);
}
END_TEST

Suite *fuzz_suite(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("fuzz");
    int n = (int)(sizeof s_targets / sizeof s_targets[0]);
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_replay_corpus, 0, n);
    tcase_add_loop_test(tc, test_empty_input, 0, n);
    suite_add_tcase(s, tc);
    return s;
}
