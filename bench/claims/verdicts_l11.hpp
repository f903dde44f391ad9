// The verdicts of Lab 11's claims (CONV-1, CONV-2) as pure functions of what was measured;
// tests/claims/test_verdicts_l11.cpp flips each one with made-up numbers.
#pragma once

#include <string>
#include <vector>

#include "verdicts.hpp"

namespace gl::claims {

/// One layer shape's timing: each algorithm's seconds (those that support it), the
/// fastest, and the autotuner's pick with its own measured time.
struct ConvShapeTiming {
    std::string shape;                                    ///< "N16 C32 14x14 -> K64 3x3 ..."
    std::vector<std::pair<std::string, double>> seconds;  ///< per algorithm
    std::string autotuner_pick;                           ///< what the autotuner chose
};

/// What CONV-1 measured.
struct Conv1Measured {
    double worst_float32_error = 1.0;  ///< max relative error of any algorithm and pass, float32 vs float64 direct
    double winograd_f2_ratio = 0.0;    ///< direct multiplies / F(2x2,3x3) multiplies on a whole-tile shape
    double winograd_f4_ratio = 0.0;    ///< direct / F(4x4,3x3)
    std::vector<ConvShapeTiming> timings;
};

/// Reproduced when every algorithm agrees within 1e-4 (float32), the counts give 2.25x
/// and 4x exactly, the fastest algorithm is not the same on every shape, and on every
/// shape the autotuner's pick runs within 25% of the fastest measured (two measurements
/// on a shared machine differ by that much).
Judgement judge_conv1(const Conv1Measured& m);

/// Reproduced when the CNN's test accuracy beats the MLP's after the same epochs on the
/// same data, by at least one point.
Judgement judge_conv2(double cnn_accuracy, double mlp_accuracy, int epochs);

}  // namespace gl::claims
