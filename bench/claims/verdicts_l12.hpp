// Verdict of claim Q-1 (lab 12), computed from the numbers the experiment measured
// (claims_l12.cpp); tested on made-up numbers in tests/claims/test_verdicts_l12.cpp.
#pragma once

#include <string>
#include <vector>

#include "verdicts.hpp"

namespace gl::claims {

/// One quantized variant's test accuracy.
struct QuantAccuracy {
    std::string name;      ///< "PTQ minmax per-channel", "QAT per-channel", ...
    double accuracy = 0;   ///< test accuracy, 0..1
    bool per_channel = false;
    bool qat = false;
};

/// One size's GEMM speeds, all on the same threads in the same run.
struct Int8GemmSpeed {
    long n = 0;                  ///< square size
    double int8_gops = 0;        ///< our best INT8 kernel, packing B in the call (as the others do)
    double fp32_best_gflops = 0; ///< the best FP32 kernel, ours or a peer's
    double onednn_int8_gops = 0; ///< the faster of oneDNN's INT8 GEMM and matmul (0 when not built)
    double int8_prepacked_gops = 0;  ///< ours with B packed once beforehand (reported, not judged)
};

/// One model's accuracies and files.
struct Q1Model {
    std::string name;                     ///< "MLP", "CNN"
    double fp32_accuracy = 0;             ///< the float model's test accuracy
    std::vector<QuantAccuracy> variants;  ///< every PTQ and QAT variant
    double float_file_bytes = 0;          ///< the float model file on disk
    double int8_file_bytes = 0;           ///< the per-channel INT8 model file on disk
};

/// Everything Q-1 measured.
struct Q1Measured {
    std::vector<Q1Model> models;  ///< the MLP and the CNN
    std::vector<Int8GemmSpeed> speeds;
    double int8_ceiling = 4.0;  ///< what vpdpbusd allows over an FP32 FMA on the same width
};

/// Reproduced when, for every model (the MLP and the CNN), the best per-channel PTQ is
/// within 1 point of FP32, the best QAT within 0.5 point and the INT8 file 4x smaller
/// within 5%, and INT8 GEMM is at least 2.5x the best FP32 GEMM and at least oneDNN's
/// INT8 GEMM (where built) at every size; Suspect when a speed-up passes the 4x ceiling
/// (beyond the noise); NotRun when a model or the GEMM speeds are missing; NotReproduced
/// otherwise, saying which part failed.
Judgement judge_q1(const Q1Measured& m);

}  // namespace gl::claims
