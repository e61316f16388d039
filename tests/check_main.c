/*
 * The one Check runner: every module's suite is listed here.
 * Run a single suite with CK_RUN_SUITE=wire, a single case with CK_RUN_CASE.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/testutil.h"

int main(void)
{
    Suite *(*const suites[])(void) = {
        status_suite,       wire_suite,      npy_suite,         yaml_suite,
        onnx_suite,         onnx_ms_suite,   f16_suite,
        ops_suite,          ops_math_suite,  ops_logic_suite,   ops_reduce_suite,
        ops_conv_suite,     ops_nn_suite,    ops_shape_suite,   ops_loss_suite,
        ops_quant_suite,    ops_rnn_suite,   ops_signal_suite,  ops_vision_suite,
        ops_new_suite,      sequence_suite,  strings_suite,  ops_text_suite, ml_suite, ops_training_suite,
        ops_random_suite,
        control_suite,      par_suite,       modes_suite,       batch_suite,
        batching_suite,
        memplan_suite,      fuse_suite,      gemm_suite,     queue_suite,       config_suite,
        topo_suite,         policy_suite,    partition_suite,
        e2e_suite,          explain_suite,   hostile_suite,     fuzz_suite,
        profile_suite,      layout_suite,    layout_ops_suite,  layout_pass_suite,
        layout_conv_suite,  replan_suite,    budget_suite,      rewrite_suite,     tune_suite,
        tune_upstream_suite,
        metrics_suite,      modelctl_suite,    artifact_suite,    shm_suite,         ring_suite,
        curve_suite,        multi_suite,
    };
    SRunner *sr = srunner_create(NULL);
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
        srunner_add_suite(sr, suites[i]());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    int run = srunner_ntests_run(sr);
    srunner_free(sr);
    printf("%d passed, %d failed\n", run - failed, failed);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
